package io.github.dblock.cluster;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.autoconfigure.DistributedLockAutoConfiguration;
import io.github.dblock.jdbc.sql.DatabaseServer;
import io.github.dblock.jdbc.admin.DatabaseTopology;
import io.github.dblock.jdbc.sql.LockDialect;
import io.github.dblock.spi.LockProvider;
import io.github.dblock.test.GaleraCluster;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.MariaDbProcess;
import io.github.dblock.test.TopologyReport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.jdbc.datasource.DataSourceUtils;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * The lock modes on a real 3-node MariaDB Galera cluster ({@link GaleraCluster}), with application nodes that are
 * separate {@link LockTemplate}s, each on a pool to a different cluster node.
 * <p>
 * Tagged {@code galera}: the normal build runs these as a smoke whenever the Galera provider library is installed
 * (the {@code galera-smoke} profile of the parent {@code pom.xml}, activated by the file); a cluster that
 * cannot start fails them. The tests also tagged {@code clusters} (a node killed, a node without quorum) and the
 * larger workload run only in the {@code clusters} profile. Those destructive tests run last.
 */
@Tag("galera")
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class GaleraClusterTests {

	private static final String SECTION_SETUP = "Galera: the cluster";

	private static GaleraCluster cluster;

	private static final List<HikariDataSource> pools = new ArrayList<>();

	private static LockDialect dialect;

	@BeforeAll
	static void startCluster() throws SQLException {
		cluster = GaleraCluster.start(3);
		for (int i = 0; i < cluster.size(); i++) {
			pools.add(cluster.node(i).newDataSource(GaleraCluster.DATABASE, 12));
		}
		dialect = LockDialect.of(DatabaseServer.detect(pools.get(0)));
		LockNodes.migrate(pools.get(0));
		MariaDbProcess first = cluster.node(0);
		first.execute(GaleraCluster.DATABASE,
				"CREATE TABLE galera_counter (name VARCHAR(100) PRIMARY KEY, value BIGINT NOT NULL)");
		first.execute(GaleraCluster.DATABASE, "CREATE TABLE galera_section (id BIGINT AUTO_INCREMENT PRIMARY KEY, "
				+ "name VARCHAR(100) NOT NULL, seq BIGINT NOT NULL, token BIGINT NOT NULL, node VARCHAR(20) NOT NULL, "
				+ "started BIGINT NOT NULL, ended BIGINT NOT NULL, KEY (name))");
		first.execute(GaleraCluster.DATABASE,
				"CREATE TABLE galera_row (id VARCHAR(100) PRIMARY KEY, holder VARCHAR(100) NULL)");
		// the other nodes apply DDL from their queues: without this, a lock statement sent to one of them right after
		// the migration could meet a missing table or column (BadSqlGrammarException, seen once on a loaded machine)
		cluster.awaitSchema(GaleraCluster.DATABASE, Duration.ofMinutes(1));
		String version;
		try (Connection c = first.connect(null)) {
			version = versionOf(c);
		}
		TopologyReport.setting("Galera", "MariaDB " + version + ", Galera " + first.status("wsrep_provider_version")
				+ ", " + cluster.size()
				+ " nodes of the machine's mariadbd on 127.0.0.1, joined by rsync state transfer");
		TopologyReport.figure(SECTION_SETUP, "nodes", cluster.size());
		TopologyReport.figure(SECTION_SETUP, "time until all nodes Synced (ms)", cluster.startTime().toMillis());
	}

	@AfterAll
	static void stopCluster() {
		pools.forEach(HikariDataSource::close);
		pools.clear();
		if (cluster != null) {
			cluster.close();
		}
	}

	/**
	 * Application nodes on different cluster nodes contend for one hot resource. Each critical section reads and
	 * increments a counter (a lost update would repeat a value), records the fencing token with the counter value
	 * it wrote (so tokens can be checked in commit order) and its start and end on its node's clock. Reads of the
	 * protected data use {@code wsrep_sync_wait=1}: Galera applies other nodes' commits asynchronously, so without
	 * it a holder could read a value older than the previous holder's write. The lock statements run with the
	 * default {@code wsrep_sync_wait=0}.
	 */
	@Order(1)
	@ParameterizedTest
	@EnumSource(names = { "LEASE", "OPTIMISTIC" })
	void leaseAndOptimisticKeepMutualExclusionAcrossClusterNodes(LockMode mode) throws Exception {
		contend(mode, true);
	}

	/**
	 * The same workload with every application node on cluster node 1, as a proxy with a single writer would
	 * route it: for the README's advice to send lock statements to one node (fewer certification conflicts).
	 */
	@Order(4)
	@ParameterizedTest
	@EnumSource(names = { "LEASE", "OPTIMISTIC" })
	@Tag("clusters")
	void leaseAndOptimisticThroughOneClusterNode(LockMode mode) throws Exception {
		contend(mode, false);
	}

	private void contend(LockMode mode, boolean spread) throws Exception {
		String resource = "galera-" + mode + "-" + UUID.randomUUID();
		cluster.node(0).execute(GaleraCluster.DATABASE, "INSERT INTO galera_counter (name, value) VALUES (?, 0)", resource);
		int threads = 2;
		int iterations = TopologyReport.full() ? 50 : 8;
		long conflictsBefore = conflicts();
		List<LockTemplate> apps = new ArrayList<>();
		for (int n = 0; n < cluster.size(); n++) {
			apps.add(LockNodes.node(provider(mode, pools.get(spread ? n : 0)), "app" + (n + 1)));
		}
		ExecutorService executor = Executors.newFixedThreadPool(cluster.size() * threads);
		long started = System.nanoTime();
		try {
			List<Future<?>> futures = new ArrayList<>();
			for (int n = 0; n < cluster.size(); n++) {
				LockTemplate app = apps.get(n);
				DataSource pool = pools.get(spread ? n : 0);
				String node = "app" + (n + 1);
				for (int t = 0; t < threads; t++) {
					futures.add(executor.submit(() -> {
						for (int i = 0; i < iterations; i++) {
							app.executeWithoutResult(resource, LockOptions.defaults().withWaitTime(Duration.ofMinutes(2)),
									(lock) -> criticalSection(pool, mode, resource, node, lock.fencingToken()));
						}
						return null;
					}));
				}
			}
			for (Future<?> future : futures) {
				try {
					future.get(10, TimeUnit.MINUTES); // any exception surfacing from the library fails the test here
				}
				catch (ExecutionException ex) {
					// Spring's BadSqlGrammarException message names no server error: put the root cause in the summary
					throw new AssertionError("a critical section failed: " + ex.getCause() + "; root cause: "
							+ NestedExceptionUtils.getMostSpecificCause(ex), ex.getCause());
				}
			}
		}
		finally {
			executor.shutdownNow();
		}
		long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
		int expected = cluster.size() * threads * iterations;
		List<long[]> sections = sections(resource); // seq, token, started, ended; in seq order
		long counter = causalLong("SELECT value FROM galera_counter WHERE name = ?", resource);
		long lostUpdates = expected - sections.stream().mapToLong((s) -> s[0]).distinct().count();
		long tokenOrderViolations = 0;
		for (int i = 1; i < sections.size(); i++) {
			if (sections.get(i)[1] <= sections.get(i - 1)[1]) {
				tokenOrderViolations++;
			}
		}
		long overlaps = overlaps(sections);
		long conflicts = conflicts() - conflictsBefore;
		String section = "Galera: " + mode + " under contention, "
				+ (spread ? "application nodes on the 3 cluster nodes" : "all application nodes on cluster node 1");
		TopologyReport.figure(section, "application nodes x threads x critical sections",
				cluster.size() + " x " + threads + " x " + iterations + " = " + expected);
		TopologyReport.figure(section, "critical sections committed", sections.size());
		TopologyReport.figure(section, "counter after the run", counter);
		TopologyReport.figure(section, "lost updates (a counter value written twice)", lostUpdates);
		TopologyReport.figure(section, "fencing tokens not increasing in commit order", tokenOrderViolations);
		if (mode == LockMode.LEASE) {
			TopologyReport.figure(section, "overlapping critical sections (server clocks)", overlaps);
		}
		TopologyReport.figure(section,
				"certification conflicts on the servers (wsrep_local_cert_failures + wsrep_local_bf_aborts)", conflicts);
		TopologyReport.figure(section, "errors surfacing to the application", 0);
		TopologyReport.figure(section, "duration (ms)", millis);
		TopologyReport.figure(section, "throughput (critical sections/s)", expected * 1000L / Math.max(1, millis));
		System.out.println("[lock tests] Galera " + mode + (spread ? " spread" : " one node") + ": " + expected + " sections in " + millis + " ms, "
				+ conflicts + " certification conflicts, " + overlaps + " overlaps");
		assertThat(sections).hasSize(expected);
		assertThat(counter).isEqualTo(expected);
		assertThat(lostUpdates).isZero();
		assertThat(sections.stream().map((s) -> s[0]).toList()).as("counter values written, in order")
			.isEqualTo(java.util.stream.LongStream.rangeClosed(1, expected).boxed().toList());
		assertThat(tokenOrderViolations).isZero();
		if (mode == LockMode.LEASE) {
			assertThat(overlaps).isZero();
		}
	}

	/**
	 * The README's promise, against a real {@code wsrep_on=ON} node: {@code distributed-lock.mode=pessimistic} stops
	 * start-up naming the property, and with the default mode a PESSIMISTIC request is refused when called while
	 * LEASE and OPTIMISTIC work.
	 */
	@Order(2)
	@Test
	void pessimisticIsRefusedAtStartUpAndPerCallOnARealGaleraNode() {
		MariaDbProcess node = cluster.node(1);
		ApplicationContextRunner runner = new ApplicationContextRunner()
			.withConfiguration(
					AutoConfigurations.of(DataSourceAutoConfiguration.class, DistributedLockAutoConfiguration.class))
			.withPropertyValues("spring.datasource.url=" + node.jdbcUrl(GaleraCluster.DATABASE),
					"spring.datasource.username=root", "spring.datasource.password=",
					"distributed-lock.cleanup.enabled=false", "distributed-lock.table-name=galera_boot_lock");
		runner.withPropertyValues("distributed-lock.mode=pessimistic").run((context) -> {
			assertThat(context).hasFailed();
			Throwable root = NestedExceptionUtils.getRootCause(context.getStartupFailure());
			assertThat(root).isInstanceOf(InvalidConfigurationPropertyValueException.class)
				.hasMessageContaining("Galera cluster node (wsrep_on=ON)");
			assertThat(((InvalidConfigurationPropertyValueException) root).getName()).isEqualTo("distributed-lock.mode");
		});
		runner.run((context) -> {
			assertThat(context).hasNotFailed();
			LockTemplate locks = context.getBean(LockTemplate.class);
			assertThat(locks.getRefusedModes()).containsOnlyKeys(LockMode.PESSIMISTIC);
			String resource = "galera-refused-" + UUID.randomUUID();
			List<String> ran = new ArrayList<>();
			assertThatIllegalStateException()
				.isThrownBy(() -> locks.execute(resource, LockOptions.defaults().withMode(LockMode.PESSIMISTIC),
						(lock) -> ran.add("pessimistic")))
				.withMessageContaining("Lock mode PESSIMISTIC is refused for '" + resource + "'")
				.withMessageContaining("Galera cluster node (wsrep_on=ON)");
			assertThat(ran).isEmpty();
			try (LockHandle lock = locks.acquire(resource)) {
				assertThat(lock.mode()).isEqualTo(LockMode.LEASE);
			}
			String result = locks.execute(resource, LockOptions.defaults().withMode(LockMode.OPTIMISTIC), (lock) -> "ran");
			assertThat(result).isEqualTo("ran");
		});
		String section = "Galera: PESSIMISTIC refused";
		TopologyReport.figure(section, "distributed-lock.mode=pessimistic on a wsrep_on=ON node",
				"start-up fails (InvalidConfigurationPropertyValueException naming distributed-lock.mode)");
		TopologyReport.figure(section, "a PESSIMISTIC request with the default mode",
				"IllegalStateException when called, callback not run; LEASE and OPTIMISTIC work");
	}

	/**
	 * Why PESSIMISTIC is refused: a row lock taken on one node does not block the same row on another node. Both
	 * {@code SELECT ... FOR UPDATE} return at once; the conflict is found only when both commit, and the second
	 * commit fails with 1213. The library's own PESSIMISTIC provider, built by hand past the refusal, grants one
	 * resource to two application nodes at the same time.
	 */
	/**
	 * The topology check on a real node: it reads {@code wsrep_on} and {@code innodb_flush_log_at_trx_commit}, and
	 * warns only while the node acknowledges commits before they are on disk.
	 */
	@Order(2)
	@Test
	void theTopologyCheckWarnsWhileANodeDoesNotFlushEachCommit() throws SQLException {
		DataSource pool = pools.get(1);
		DatabaseServer server = DatabaseServer.detect(pool);
		assertThat(DatabaseTopology.detect(pool, server).clusterDurabilityWarning()).isNull();
		try (Connection c = pool.getConnection()) {
			c.createStatement().execute("SET GLOBAL innodb_flush_log_at_trx_commit = 2");
		}
		try {
			DatabaseTopology topology = DatabaseTopology.detect(pool, server);
			assertThat(topology.multiPrimaryCluster()).contains("wsrep_on=ON");
			assertThat(topology.clusterDurabilityWarning()).contains("innodb_flush_log_at_trx_commit=2");
		}
		finally {
			try (Connection c = pool.getConnection()) {
				c.createStatement().execute("SET GLOBAL innodb_flush_log_at_trx_commit = 1");
			}
		}
	}

	@Order(3)
	@Test
	void twoRowLocksOnTwoNodesBothSucceed() throws Exception {
		String id = "row-" + UUID.randomUUID();
		cluster.node(0).execute(GaleraCluster.DATABASE, "INSERT INTO galera_row (id, holder) VALUES (?, NULL)", id);
		SQLException secondCommit;
		long secondLockMillis;
		try (Connection first = cluster.node(0).connect(GaleraCluster.DATABASE);
				Connection second = cluster.node(1).connect(GaleraCluster.DATABASE)) {
			execute(second, "SET SESSION wsrep_sync_wait = 1");
			execute(second, "SET SESSION innodb_lock_wait_timeout = 10");
			first.setAutoCommit(false);
			second.setAutoCommit(false);
			assertThat(query(first, "SELECT COUNT(*) FROM galera_row WHERE id = ? FOR UPDATE", id)).isEqualTo(1);
			long before = System.nanoTime();
			assertThat(query(second, "SELECT COUNT(*) FROM galera_row WHERE id = ? FOR UPDATE", id)).isEqualTo(1);
			secondLockMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - before);
			assertThat(update(first, "UPDATE galera_row SET holder = 'first' WHERE id = ?", id)).isEqualTo(1);
			assertThat(update(second, "UPDATE galera_row SET holder = 'second' WHERE id = ?", id)).isEqualTo(1);
			first.commit();
			secondCommit = (SQLException) catchThrowable(second::commit);
		}
		assertThat(secondLockMillis).as("the second row lock did not wait for the first").isLessThan(5_000);
		assertThat((Throwable) secondCommit).as("the second commit is refused by certification").isNotNull();
		assertThat(secondCommit.getErrorCode()).isEqualTo(1213);

		String resource = "galera-pessimistic-" + UUID.randomUUID();
		LockTemplate a = LockNodes.node(provider(LockMode.PESSIMISTIC, pools.get(0)), "app1");
		LockTemplate b = LockNodes.node(provider(LockMode.PESSIMISTIC, pools.get(1)), "app2");
		LockHandle held = a.acquire(resource);
		Optional<LockHandle> alsoHeld;
		Throwable secondRelease;
		ExecutorService app2 = Executors.newSingleThreadExecutor();
		try {
			alsoHeld = app2.submit(() -> {
				Optional<LockHandle> h = b.tryAcquire(resource, Duration.ofSeconds(3));
				h.ifPresent(LockHandle::close);
				return h;
			}).get(30, TimeUnit.SECONDS);
		}
		finally {
			app2.shutdownNow();
			secondRelease = catchThrowable(held::close);
		}
		String section = "Galera: why PESSIMISTIC is refused";
		TopologyReport.figure(section, "SELECT ... FOR UPDATE of one row on node 1, then on node 2",
				"both granted; the second after " + secondLockMillis + " ms (no wait)");
		TopologyReport.figure(section, "both transactions update the row and commit",
				"first commits; second fails at COMMIT with " + secondCommit.getErrorCode() + " ("
						+ secondCommit.getMessage() + ")");
		TopologyReport.figure(section, "the library's PESSIMISTIC provider (refusal bypassed), app node 1 holding",
				"app node 2 on another cluster node " + (alsoHeld.isPresent() ? "was granted the same lock" : "was refused")
						+ "; app node 1's release: " + (secondRelease == null ? "no error" : secondRelease.getClass().getSimpleName()));
		assertThat(alsoHeld).as("a second holder on another cluster node while the first holds").isPresent();
	}

	/**
	 * An application node holds a renewed lease through cluster node 3, which is killed with SIGKILL. The holder
	 * cannot renew through its only node; its {@code isHeld()} must be false before anyone else gets the lock, and
	 * its {@code onLost} listener runs, though later: only when a renewal attempt returns, after the pool's
	 * connection time-out (5 s here; see the report). Waiters on
	 * nodes 1 and 2 get the lock once the lease has expired and the cluster has evicted node 3, with higher tokens.
	 * Node 3 is restarted at the end and rejoins the cluster.
	 */
	@Order(10)
	@Test
	@Tag("clusters")
	void aClusterNodeKilledUnderALeaseHolderNeverLetsTwoHold() throws Exception {
		String resource = "galera-kill-" + UUID.randomUUID();
		Duration lease = Duration.ofSeconds(3);
		LockProvider holderProvider = provider(LockMode.LEASE, pools.get(2));
		LockTemplate holderApp = new LockTemplate(List.of(holderProvider), LockMode.LEASE, Duration.ZERO, lease, "app3");
		LockHandle held = holderApp.acquire(resource); // no lease time given: the default lease, renewed
		AtomicLong lostAt = new AtomicLong();
		held.onLost((h) -> lostAt.compareAndSet(0, System.nanoTime()));
		Thread.sleep(lease.toMillis()); // renewed at least twice through node 3
		assertThat(held.isHeld()).isTrue();
		List<Long> acquiredAt = new java.util.concurrent.CopyOnWriteArrayList<>();
		List<Long> tokens = new java.util.concurrent.CopyOnWriteArrayList<>();
		List<Boolean> holderHeldWhenGranted = new java.util.concurrent.CopyOnWriteArrayList<>();
		ExecutorService waiters = Executors.newFixedThreadPool(2);
		long killedAt;
		try {
			List<Future<?>> futures = new ArrayList<>();
			for (int n = 0; n < 2; n++) {
				LockTemplate app = LockNodes.node(provider(LockMode.LEASE, pools.get(n)), "app" + (n + 1));
				futures.add(waiters.submit(() -> {
					try (LockHandle lock = app.acquire(resource,
							LockOptions.defaults().withWaitTime(Duration.ofSeconds(90)).withLeaseTime(Duration.ofSeconds(30)))) {
						holderHeldWhenGranted.add(held.isHeld());
						acquiredAt.add(System.nanoTime());
						tokens.add(lock.fencingToken());
						Thread.sleep(200);
					}
					return null;
				}));
			}
			Thread.sleep(500);
			assertThat(acquiredAt).as("nobody else while node 3 lives").isEmpty();
			killedAt = System.nanoTime();
			cluster.node(2).kill();
			for (Future<?> future : futures) {
				future.get(2, TimeUnit.MINUTES);
			}
		}
		finally {
			waiters.shutdownNow();
		}
		long evictedMillis = awaitClusterSize(cluster.node(0), 2, killedAt);
		long waitForListener = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
		while (lostAt.get() == 0 && System.nanoTime() < waitForListener) {
			Thread.sleep(10);
		}
		Throwable release = catchThrowable(held::close);
		long restartedAt = System.nanoTime();
		cluster.restart(2); // rejoins from the position its storage engine recovered (IST when the donor still has it)
		cluster.node(2).awaitConnectable(Duration.ofMinutes(3));
		GaleraCluster.awaitState(cluster.node(2), cluster.size(), Duration.ofMinutes(1));
		long rejoinMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - restartedAt);
		long firstGrant = acquiredAt.stream().mapToLong(Long::longValue).min().orElseThrow();
		String section = "Galera: a cluster node killed under a lease holder";
		TopologyReport.figure(section, "holder", "app node 3 on cluster node 3 only, renewed lease of "
				+ lease.toMillis() + " ms, held " + lease.toMillis() + " ms before the kill");
		TopologyReport.figure(section, "cluster node 3 SIGKILLed; node 1 saw the cluster shrink to 2 after (ms)",
				evictedMillis);
		TopologyReport.figure(section, "holder's onLost listener ran after the kill (ms)",
				lostAt.get() == 0 ? "never" : TimeUnit.NANOSECONDS.toMillis(lostAt.get() - killedAt));
		TopologyReport.figure(section, "first waiter (other cluster nodes) granted after the kill (ms)",
				TimeUnit.NANOSECONDS.toMillis(firstGrant - killedAt));
		TopologyReport.figure(section, "waiters granted / waiting", acquiredAt.size() + " / 2");
		TopologyReport.figure(section, "grants while the holder still believed it held the lock",
				holderHeldWhenGranted.stream().filter(Boolean::booleanValue).count());
		TopologyReport.figure(section, "holder's release afterwards",
				release == null ? "no error" : release.getClass().getSimpleName());
		TopologyReport.figure(section, "killed node restarted, Synced in the 3-node cluster again after (ms)",
				rejoinMillis);
		assertThat(acquiredAt).hasSize(2);
		assertThat(holderHeldWhenGranted).as("the holder's isHeld() was false before anyone else was granted")
			.containsOnly(false);
		assertThat(lostAt.get()).as("the holder's onLost listener ran").isNotZero();
		assertThat(tokens).allSatisfy((t) -> assertThat(t).isGreaterThan(held.fencingToken()));
	}

	/**
	 * Node 1 loses quorum: the two other nodes are paused (SIGSTOP), so node 1 is alone in a non-primary component.
	 * LEASE and OPTIMISTIC calls through it must fail rather than be granted; once the others resume, the cluster
	 * re-forms and the same application node gets the lock again.
	 */
	@Order(11)
	@Test
	@Tag("clusters")
	void aNodeWithoutQuorumGrantsNothing() throws Exception {
		MariaDbProcess isolated = cluster.node(0);
		List<MariaDbProcess> others = new ArrayList<>();
		for (int i = 1; i < cluster.size(); i++) {
			if (cluster.node(i).isAlive()) {
				others.add(cluster.node(i));
			}
		}
		String resource = "galera-quorum-" + UUID.randomUUID();
		LockTemplate lease = LockNodes.node(provider(LockMode.LEASE, pools.get(0)), "app1");
		LockTemplate optimistic = LockNodes.node(provider(LockMode.OPTIMISTIC, pools.get(0)), "app1-optimistic");
		lease.acquire(resource).close(); // the row exists and the pool has connections
		String section = "Galera: a node that lost quorum";
		Throwable leaseFailure;
		Throwable optimisticFailure;
		String status;
		long leaseMillis;
		List<String> ran = new ArrayList<>();
		long pausedAt = System.nanoTime();
		others.forEach(MariaDbProcess::pause);
		try {
			LockOptions wait = LockOptions.defaults().withWaitTime(Duration.ofSeconds(10));
			long before = System.nanoTime();
			leaseFailure = catchThrowable(() -> lease.acquire(resource, wait).close());
			leaseMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - before);
			optimisticFailure = catchThrowable(() -> optimistic.execute(resource, wait, (lock) -> ran.add("optimistic")));
			status = isolated.status("wsrep_cluster_status");
		}
		finally {
			others.forEach(MariaDbProcess::resume);
		}
		long recoveredMillis;
		try (LockHandle lock = lease.acquire(resource, LockOptions.defaults().withWaitTime(Duration.ofSeconds(90)))) {
			recoveredMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - pausedAt);
			assertThat(lock.isHeld()).isTrue();
		}
		TopologyReport.figure(section, "setup", "the " + others.size() + " other node(s) paused with SIGSTOP; node 1 "
				+ "alone, wsrep_cluster_status=" + status);
		TopologyReport.figure(section, "LEASE acquire (wait 10 s) through node 1", describe(leaseFailure)
				+ " after " + leaseMillis + " ms");
		TopologyReport.figure(section, "OPTIMISTIC execute (wait 10 s) through node 1", describe(optimisticFailure)
				+ (ran.isEmpty() ? "; work never committed" : "; work ran " + ran.size() + " time(s), rolled back"));
		TopologyReport.figure(section, "others resumed: same application node granted again after the pause (ms)",
				recoveredMillis);
		assertThat(status).isEqualTo("non-Primary");
		assertThat(leaseFailure).as("LEASE not granted without quorum").isNotNull();
		assertThat(optimisticFailure).as("OPTIMISTIC not committed without quorum").isNotNull();
	}

	private static String describe(Throwable failure) {
		if (failure == null) {
			return "GRANTED";
		}
		Throwable root = NestedExceptionUtils.getMostSpecificCause(failure);
		return failure.getClass().getSimpleName() + (root != failure ? " caused by " + root.getClass().getSimpleName()
				+ (root instanceof SQLException sql ? " " + sql.getErrorCode() : "") : "") + " (\"" + root.getMessage()
				+ "\")";
	}

	private static long awaitClusterSize(MariaDbProcess node, int size, long sinceNanos) throws SQLException {
		long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(1);
		while (System.nanoTime() < deadline) {
			if (String.valueOf(size).equals(node.status("wsrep_cluster_size"))) {
				return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sinceNanos);
			}
			Thread.onSpinWait();
		}
		throw new IllegalStateException(node + " never saw a cluster of " + size);
	}

	// ---- helpers

	private static String versionOf(Connection c) throws SQLException {
		try (PreparedStatement ps = c.prepareStatement("SELECT VERSION()"); ResultSet rs = ps.executeQuery()) {
			rs.next();
			return rs.getString(1);
		}
	}

	private static LockProvider provider(LockMode mode, DataSource dataSource) {
		return LockNodes.provider(mode, dataSource, dialect);
	}

	private static void criticalSection(DataSource pool, LockMode mode, String resource, String node, long token) {
		boolean own = mode != LockMode.OPTIMISTIC; // OPTIMISTIC works in the lock's transaction
		Connection c = null;
		try {
			c = own ? pool.getConnection() : DataSourceUtils.getConnection(pool);
			execute(c, "SET SESSION wsrep_sync_wait = 1");
			long started = query(c, "SELECT CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)");
			long value = query(c, "SELECT value FROM galera_counter WHERE name = ?", resource);
			update(c, "UPDATE galera_counter SET value = ? WHERE name = ?", value + 1, resource);
			long ended = query(c, "SELECT CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)");
			update(c, "INSERT INTO galera_section (name, seq, token, node, started, ended) VALUES (?, ?, ?, ?, ?, ?)",
					resource, value + 1, token, node, started, ended);
			execute(c, "SET SESSION wsrep_sync_wait = 0");
		}
		catch (SQLException ex) {
			throw new IllegalStateException(ex);
		}
		finally {
			if (own) {
				try {
					if (c != null) {
						c.close();
					}
				}
				catch (SQLException ex) {
					// the test fails elsewhere
				}
			}
			else {
				DataSourceUtils.releaseConnection(c, pool);
			}
		}
	}

	/** Overlaps of [started, ended] intervals: a section that starts before an earlier-starting one has ended. */
	static long overlaps(List<long[]> sections) {
		List<long[]> byStart = new ArrayList<>(sections);
		byStart.sort(java.util.Comparator.comparingLong((long[] s) -> s[2]));
		long overlaps = 0;
		long maxEnd = Long.MIN_VALUE;
		for (long[] s : byStart) {
			if (s[2] < maxEnd) {
				overlaps++;
			}
			maxEnd = Math.max(maxEnd, s[3]);
		}
		return overlaps;
	}

	private static List<long[]> sections(String resource) throws SQLException {
		List<long[]> sections = new ArrayList<>();
		try (Connection c = cluster.node(0).connect(GaleraCluster.DATABASE)) {
			execute(c, "SET SESSION wsrep_sync_wait = 1");
			try (PreparedStatement ps = c.prepareStatement(
					"SELECT seq, token, started, ended FROM galera_section WHERE name = ? ORDER BY seq, id")) {
				ps.setString(1, resource);
				try (ResultSet rs = ps.executeQuery()) {
					while (rs.next()) {
						sections.add(new long[] { rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4) });
					}
				}
			}
		}
		return sections;
	}

	private static long causalLong(String sql, Object... args) throws SQLException {
		try (Connection c = cluster.node(0).connect(GaleraCluster.DATABASE)) {
			execute(c, "SET SESSION wsrep_sync_wait = 1");
			return query(c, sql, args);
		}
	}

	private static long conflicts() throws SQLException {
		return cluster.sumOfStatus("wsrep_local_cert_failures") + cluster.sumOfStatus("wsrep_local_bf_aborts");
	}

	static void execute(Connection c, String sql) throws SQLException {
		try (PreparedStatement ps = c.prepareStatement(sql)) {
			ps.execute();
		}
	}

	static long query(Connection c, String sql, Object... args) throws SQLException {
		try (PreparedStatement ps = c.prepareStatement(sql)) {
			for (int i = 0; i < args.length; i++) {
				ps.setObject(i + 1, args[i]);
			}
			try (ResultSet rs = ps.executeQuery()) {
				if (!rs.next()) {
					throw new IllegalStateException("no row: " + sql);
				}
				return rs.getLong(1);
			}
		}
	}

	static int update(Connection c, String sql, Object... args) throws SQLException {
		try (PreparedStatement ps = c.prepareStatement(sql)) {
			for (int i = 0; i < args.length; i++) {
				ps.setObject(i + 1, args[i]);
			}
			return ps.executeUpdate();
		}
	}

}
