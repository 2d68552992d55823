package io.github.dblock.reliability.checker;

import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.jdbc.DatabaseServer;
import io.github.dblock.jdbc.LockDialect;
import io.github.dblock.reliability.checker.History.Family;
import io.github.dblock.reliability.checker.History.Observed;
import io.github.dblock.test.GaleraCluster;
import io.github.dblock.test.LockNodes;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The mixed-workload checker on a real 3-node Galera cluster ({@link GaleraCluster}): the {@link Workload} of
 * {@link MixedWorkloadCheckerTests} with each of its 3 nodes on a pool to a different cluster node (through a fault
 * proxy of its own), so that every resource is contended across cluster nodes, and its {@link History} checked by
 * every {@link Checker} invariant. The history, the cleanup job and the forced releases run on cluster node 1 and
 * read with {@code wsrep_sync_wait = 1}, as docs/reference/topology.md advises for reads on Galera.
 * <p>
 * As the library sets itself up on Galera: LEASE providers validate at commit by writing the lock row
 * ({@code setMultiPrimary}), and no PESSIMISTIC call is made, since the library refuses PESSIMISTIC on Galera
 * (docs/reference/topology.md, "Why PESSIMISTIC is refused on Galera and multi-primary groups"). Every other kind
 * of call and every fault of the workload run. {@code -Dlock.checker.galera-duration=} (ISO-8601, {@code PT40S}
 * by default) sets the length, {@code -Dlock.checker.seed=} replays a seed.
 * <p>
 * Tagged {@code galera}: it runs with the Galera smoke, in {@code ./mvnw verify} wherever the Galera provider is
 * installed (CI installs it).
 */
@Tag("clusters")
class GaleraCheckerTests {

	@Test
	void shortRunAcrossClusterNodes() throws Exception {
		List<HikariDataSource> own = new ArrayList<>();
		try (GaleraCluster cluster = GaleraCluster.start(3)) {
			GaleraServers servers = new GaleraServers(cluster, own);
			long conflictsBefore = conflicts(cluster);
			Workload.Result result;
			try {
				result = MixedWorkloadCheckerTests.run(
						MixedWorkloadCheckerTests.duration("lock.checker.galera-duration", Duration.ofSeconds(40)),
						servers);
			}
			catch (Exception | AssertionError ex) {
				System.out.println("[checker] Galera: the cluster nodes' events:\n" + cluster.events());
				throw ex;
			}
			long conflicts = conflicts(cluster) - conflictsBefore;
			System.out.println("[checker] Galera: " + conflicts
					+ " certification failures and brute-force aborts on the cluster nodes during the run");
			Observed observed = result.observed();
			// enough of every kind that a violation could have shown, contended across the cluster nodes
			assertThat(conflicts).as("certification failures and brute-force aborts").isPositive();
			assertThat(MixedWorkloadCheckerTests.count(observed, Family.EXCLUSIVE)).as("exclusive sections")
				.isGreaterThanOrEqualTo(50);
			assertThat(MixedWorkloadCheckerTests.count(observed, "OPTIMISTIC")).as("OPTIMISTIC sections")
				.isGreaterThanOrEqualTo(10);
			assertThat(MixedWorkloadCheckerTests.count(observed, Family.READ)).as("read sections")
				.isGreaterThanOrEqualTo(10);
			assertThat(MixedWorkloadCheckerTests.count(observed, Family.WRITE)).as("write sections")
				.isGreaterThanOrEqualTo(10);
			assertThat(MixedWorkloadCheckerTests.count(observed, Family.PERMIT)).as("permit sections")
				.isGreaterThanOrEqualTo(10);
			assertThat(observed.effects()).as("idempotent effects").hasSizeGreaterThanOrEqualTo(5);
			assertThat(MixedWorkloadCheckerTests.count(observed, "@DistributedLock")).as("@DistributedLock sections")
				.isGreaterThanOrEqualTo(5);
			assertThat(MixedWorkloadCheckerTests.count(observed, "registry")).as("registry sections")
				.isGreaterThanOrEqualTo(5);
			assertThat(MixedWorkloadCheckerTests.count(observed, "ShedLock")).as("ShedLock sections")
				.isGreaterThanOrEqualTo(5);
			assertThat(result.faults()).as("faults").containsEntry("server SIGKILL", 1L)
				.containsEntry("server restarted", 1L);
			assertThat(observed.sections()).as("PESSIMISTIC sections").noneMatch((s) -> s.mode().startsWith("PESSIMISTIC"));
		}
		finally {
			own.forEach(HikariDataSource::close);
		}
	}

	private static long conflicts(GaleraCluster cluster) throws SQLException {
		return cluster.sumOfStatus("wsrep_local_cert_failures") + cluster.sumOfStatus("wsrep_local_bf_aborts");
	}

	/** Workload node {@code i} on cluster node {@code i}; the history on cluster node 1. */
	private static final class GaleraServers implements Workload.Servers {

		private final GaleraCluster cluster;

		private final List<HikariDataSource> own;

		private final List<DataSource> sessions = new ArrayList<>();

		private LockDialect dialect;

		GaleraServers(GaleraCluster cluster, List<HikariDataSource> own) {
			this.cluster = cluster;
			this.own = own;
			for (int i = 0; i < cluster.size(); i++) {
				HikariDataSource pool = cluster.node(i).newDataSource(GaleraCluster.DATABASE, 2);
				own.add(pool);
				this.sessions.add(pool);
			}
		}

		@Override
		public Workload.Pools pools() {
			return (url, size, customizer) -> {
				HikariConfig config = new HikariConfig();
				config.setJdbcUrl(url);
				config.setUsername("root");
				config.setPassword("");
				config.setMaximumPoolSize(size);
				config.setMinimumIdle(0);
				customizer.accept(config);
				return new HikariDataSource(config);
			};
		}

		@Override
		public HikariDataSource historyPool() {
			HikariConfig config = new HikariConfig();
			config.setJdbcUrl(nodeUrl(0));
			config.setUsername("root");
			config.setPassword("");
			config.setMaximumPoolSize(12);
			config.setMinimumIdle(0);
			config.setPoolName("checker-history");
			// the observer reads what every node committed (the other nodes' commits are applied asynchronously)
			config.setConnectionInitSql("SET SESSION wsrep_sync_wait = 1");
			return new HikariDataSource(config);
		}

		@Override
		public String nodeUrl(int index) {
			return this.cluster.node(index).jdbcUrl(GaleraCluster.DATABASE);
		}

		@Override
		public DataSource sessions(int index) {
			return this.sessions.get(index);
		}

		@Override
		public void migrate(DataSource historyPool) {
			LockNodes.migrate(historyPool);
			this.dialect = LockDialect.of(DatabaseServer.detect(historyPool));
		}

		@Override
		public void tablesCreated() {
			try {
				this.cluster.awaitSchema(GaleraCluster.DATABASE, Duration.ofMinutes(1));
			}
			catch (SQLException ex) {
				throw new IllegalStateException(ex);
			}
		}

		@Override
		public boolean multiPrimary() {
			return true;
		}

		@Override
		public LockDialect dialect() {
			return this.dialect;
		}

		/** Cluster nodes 2 and 3: node 1 bootstrapped the cluster and holds the history. */
		@Override
		public List<Integer> restartable() {
			return List.of(1, 2);
		}

		@Override
		public void killServer(int index) {
			this.cluster.node(index).kill();
		}

		/** Rejoins from its recovered position (see {@link GaleraCluster#restart}), then is Synced. */
		@Override
		public void restartServer(int index, Duration timeout) {
			this.cluster.restart(index);
			GaleraCluster.awaitState(this.cluster.node(index), this.cluster.size(), timeout);
		}

	}

}
