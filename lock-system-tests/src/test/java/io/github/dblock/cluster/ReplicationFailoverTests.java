package io.github.dblock.cluster;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.jdbc.sql.DatabaseServer;
import io.github.dblock.jdbc.sql.LockDialect;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.MariaDbProcess;
import io.github.dblock.test.TopologyReport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * LEASE across a failover from a primary to its replica (GTID replication between two {@code mariadbd} of the
 * test's own on 127.0.0.1), asynchronous and semi-synchronous, each with the replica keeping up or lagging (its
 * I/O thread stopped before the lease is taken, as in a network delay).
 * <p>
 * Each round: application node A takes and releases the lock a few times on the primary, then takes it with a
 * 10 s lease and keeps it; the primary is killed with SIGKILL at once; the replica is promoted as an operator
 * would (wait until its relay log is applied, {@code STOP SLAVE}, {@code RESET SLAVE ALL},
 * {@code read_only=OFF}); application node B, on the promoted server, tries the lock. Measured: whether the lease
 * survived (B refused), and that every token issued after the promotion is above every token issued before.
 * Semi-synchronous replication uses {@code rpl_semi_sync_master_wait_point=AFTER_SYNC} and a 1 s timeout, after
 * which the primary falls back to asynchronous replication. Tagged {@code clusters}: the {@code clusters} profile
 * only.
 */
@Tag("clusters")
class ReplicationFailoverTests {

	private static final String DATABASE = "locks";

	/** The lease A holds across the failover: long enough to outlast kill and promotion on a busy machine. */
	private static final Duration HELD_LEASE = Duration.ofSeconds(10);

	private static Path baseDir;

	private static Path template;

	@BeforeAll
	static void installTemplate() throws IOException {
		baseDir = Files.createTempDirectory("lock-replication-");
		template = baseDir.resolve("template");
		Files.createDirectories(template);
		MariaDbProcess.install(template);
	}

	@AfterAll
	static void deleteDirectories() {
		MariaDbProcess.deleteTree(baseDir);
	}

	/**
	 * @param semiSync whether the replica acknowledges (semi-synchronous) or not
	 * @param lagging whether the replica's I/O thread is stopped before the held lease is taken
	 * @param rounds failovers to run
	 */
	@ParameterizedTest(name = "semi-sync {0}, replica lagging {1}")
	@CsvSource({ "false, true, 1", "false, false, 3", "true, false, 3", "true, true, 1" })
	void aLeaseAcrossAFailoverToThePromotedReplica(boolean semiSync, boolean lagging, int rounds) throws Exception {
		int survived = 0;
		int secondHolders = 0;
		int tokensNotAbove = 0;
		List<Long> heldAcquireMillis = new ArrayList<>();
		List<Long> promoteMillis = new ArrayList<>();
		for (int round = 0; round < rounds; round++) {
			Round result = failover(semiSync, lagging, round);
			survived += result.survived ? 1 : 0;
			secondHolders += result.secondHolder ? 1 : 0;
			tokensNotAbove += result.tokensAbove ? 0 : 1;
			heldAcquireMillis.add(result.acquireMillis);
			promoteMillis.add(result.promoteMillis);
		}
		String section = "Primary/replica failover: " + (semiSync ? "semi-synchronous" : "asynchronous")
				+ " replication, replica " + (lagging ? "lagging (I/O thread stopped before the lease)" : "keeping up");
		TopologyReport.figure(section, "failovers (primary SIGKILLed right after the lease was granted)", rounds);
		TopologyReport.figure(section, "lease survived on the promoted replica (second holder refused)", survived);
		TopologyReport.figure(section, "second holder granted while the first still held its lease", secondHolders);
		TopologyReport.figure(section, "rounds where a token after the promotion was not above every token before",
				tokensNotAbove);
		TopologyReport.figure(section, "time to grant the held lease on the primary (ms)", heldAcquireMillis);
		TopologyReport.figure(section, "promotion: kill to promoted and writable (ms)", promoteMillis);
		assertThat(tokensNotAbove).as("tokens after the promotion above all before").isZero();
		if (semiSync && !lagging) {
			assertThat(survived).as("a semi-synchronous acknowledgement reached the replica").isEqualTo(rounds);
		}
		if (lagging) {
			assertThat(secondHolders).as("the lease never reached the replica: lost in the failover").isEqualTo(rounds);
		}
		if (!semiSync && !lagging) {
			assertThat(survived + secondHolders).isEqualTo(rounds);
		}
	}

	private Round failover(boolean semiSync, boolean lagging, int round) throws Exception {
		Path dir = baseDir.resolve((semiSync ? "semi" : "async") + (lagging ? "-lag-" : "-") + round);
		MariaDbProcess primary = server(dir, "primary", 1, semiSync);
		MariaDbProcess replica = server(dir, "replica", 2, semiSync);
		try {
			primary.start();
			replica.start();
			primary.awaitConnectable(Duration.ofMinutes(1));
			replica.awaitConnectable(Duration.ofMinutes(1));
			try (Connection c = replica.connect(null)) {
				// CHANGE MASTER takes no bind parameters; the port is a number of this test's own
				GaleraClusterTests.execute(c, "CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = "
						+ primary.port() + ", MASTER_USER = 'root', MASTER_PASSWORD = '', MASTER_USE_GTID = slave_pos");
				GaleraClusterTests.execute(c, "START SLAVE");
			}
			primary.execute(null, "CREATE DATABASE " + DATABASE);
			if (semiSync) {
				awaitStatus(primary, "Rpl_semi_sync_master_clients", "1");
			}
			String resource = "failover-" + UUID.randomUUID();
			List<Long> before = new ArrayList<>();
			long heldToken;
			long acquireMillis;
			LockHandle held;
			try (HikariDataSource primaryPool = primary.newDataSource(DATABASE, 4)) {
				LockNodes.migrate(primaryPool);
				LockDialect dialect = LockDialect.of(DatabaseServer.detect(primaryPool));
				LockTemplate a = LockNodes.node(LockNodes.provider(LockMode.LEASE, primaryPool, dialect), "app-a");
				for (int i = 0; i < 5; i++) {
					try (LockHandle lock = a.acquire(resource)) {
						before.add(lock.fencingToken());
					}
				}
				awaitReplicaCaughtUp(replica, primary);
				if (lagging) {
					try (Connection c = replica.connect(null)) {
						GaleraClusterTests.execute(c, "STOP SLAVE IO_THREAD");
					}
				}
				long start = System.nanoTime();
				held = a.acquire(resource, LockOptions.defaults().withLeaseTime(HELD_LEASE));
				acquireMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
				heldToken = held.fencingToken();
				before.add(heldToken);
				long killedAt = System.nanoTime();
				primary.kill();
				promote(replica);
				long promoteMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
				try (HikariDataSource promotedPool = replica.newDataSource(DATABASE, 4)) {
					LockTemplate b = LockNodes.node(LockNodes.provider(LockMode.LEASE, promotedPool, dialect), "app-b");
					Optional<LockHandle> second = b.tryAcquire(resource);
					boolean firstStillHeld = held.isHeld();
					List<Long> after = new ArrayList<>();
					second.ifPresent((lock) -> {
						after.add(lock.fencingToken());
						lock.close();
					});
					if (second.isEmpty()) {
						// the lease survived: B gets the lock once it expires, with a token above A's
						try (LockHandle lock = b.acquire(resource, LockOptions.defaults().withWaitTime(HELD_LEASE.multipliedBy(3)))) {
							after.add(lock.fencingToken());
						}
					}
					long maxBefore = before.stream().mapToLong(Long::longValue).max().orElseThrow();
					boolean tokensAbove = after.stream().allMatch((t) -> t > maxBefore);
					System.out.println("[lock tests] failover semiSync=" + semiSync + " lagging=" + lagging + " round "
							+ round + ": lease " + (second.isPresent() ? "LOST, second holder granted" : "survived")
							+ ", tokens before " + before + ", after " + after);
					return new Round(second.isEmpty(), second.isPresent() && firstStillHeld, tokensAbove, acquireMillis,
							promoteMillis);
				}
			}
		}
		finally {
			primary.kill();
			replica.kill();
			MariaDbProcess.deleteTree(dir);
		}
	}

	private static MariaDbProcess server(Path dir, String name, int serverId, boolean semiSync) {
		Path dataDir = dir.resolve(name);
		copy(template, dataDir);
		List<String> options = new ArrayList<>(List.of("--server-id=" + serverId, "--log-bin=" + name + "-bin",
				"--binlog-format=ROW", "--log-slave-updates=ON", "--gtid-strict-mode=ON", "--sync-binlog=1",
				"--innodb-flush-log-at-trx-commit=1"));
		if (serverId != 1) {
			options.add("--read-only=ON");
		}
		if (semiSync) {
			options.addAll(List.of("--rpl-semi-sync-master-enabled=ON", "--rpl-semi-sync-slave-enabled=ON",
					"--rpl-semi-sync-master-timeout=1000", "--rpl-semi-sync-master-wait-point=AFTER_SYNC"));
		}
		return new MariaDbProcess(name, dataDir, MariaDbProcess.freePort(), options);
	}

	/** What an operator does: let the replica apply what it received, stop replicating, make it writable. */
	private static void promote(MariaDbProcess replica) throws SQLException {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
		try (Connection c = replica.connect(null)) {
			while (true) {
				try (PreparedStatement ps = c.prepareStatement("SHOW SLAVE STATUS"); ResultSet rs = ps.executeQuery()) {
					assertThat(rs.next()).isTrue();
					String state = rs.getString("Slave_SQL_Running_State");
					boolean applied = rs.getString("Relay_Master_Log_File").equals(rs.getString("Master_Log_File"))
							&& rs.getLong("Exec_Master_Log_Pos") == rs.getLong("Read_Master_Log_Pos");
					if (applied && state != null && state.contains("read all relay log")) {
						break;
					}
				}
				if (System.nanoTime() > deadline) {
					throw new IllegalStateException("the replica did not apply its relay log within 30 s");
				}
				Thread.sleep(20);
			}
			GaleraClusterTests.execute(c, "STOP SLAVE");
			GaleraClusterTests.execute(c, "RESET SLAVE ALL");
			GaleraClusterTests.execute(c, "SET GLOBAL read_only = OFF");
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}

	private static void awaitReplicaCaughtUp(MariaDbProcess replica, MariaDbProcess primary) throws Exception {
		String target;
		try (Connection c = primary.connect(null);
				PreparedStatement ps = c.prepareStatement("SELECT @@gtid_binlog_pos");
				ResultSet rs = ps.executeQuery()) {
			rs.next();
			target = rs.getString(1);
		}
		try (Connection c = replica.connect(null);
				PreparedStatement ps = c.prepareStatement("SELECT MASTER_GTID_WAIT(?, 30)")) {
			ps.setString(1, target);
			try (ResultSet rs = ps.executeQuery()) {
				rs.next();
				assertThat(rs.getInt(1)).as("replica caught up with %s", target).isZero();
			}
		}
	}

	private static void awaitStatus(MariaDbProcess server, String variable, String value) throws Exception {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
		while (!value.equals(server.status(variable))) {
			if (System.nanoTime() > deadline) {
				throw new IllegalStateException(server + ": " + variable + " never became " + value);
			}
			Thread.sleep(50);
		}
	}

	private static void copy(Path from, Path to) {
		try (var paths = Files.walk(from)) {
			for (Path source : (Iterable<Path>) paths::iterator) {
				Path target = to.resolve(from.relativize(source).toString());
				if (Files.isDirectory(source)) {
					Files.createDirectories(target);
				}
				else {
					Files.copy(source, target);
				}
			}
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

	private record Round(boolean survived, boolean secondHolder, boolean tokensAbove, long acquireMillis,
			long promoteMillis) {
	}

}
