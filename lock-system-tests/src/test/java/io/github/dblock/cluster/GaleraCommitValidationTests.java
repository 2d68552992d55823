package io.github.dblock.cluster;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.CommitValidation;
import io.github.dblock.LockHandle;
import io.github.dblock.LockLostException;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.LockType;
import io.github.dblock.jdbc.sql.DatabaseServer;
import io.github.dblock.jdbc.admin.DatabaseTopology;
import io.github.dblock.jdbc.lease.LeaseLockProvider;
import io.github.dblock.jdbc.sql.LockDialect;
import io.github.dblock.test.GaleraCluster;
import io.github.dblock.test.nodes.LockNodes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * Commit-time validation on a real 3-node MariaDB Galera cluster ({@link GaleraCluster}): the multi-primary variant
 * of the check, which writes the lock row (exclusive locks) or the resource's {@code _rw} row (WRITE locks) so that
 * certification orders it against a take on another node. Holder A's application node uses cluster node 1, B's
 * cluster node 2; each has its own provider, set to the multi-primary variant as the start-up topology check does on
 * this cluster (asserted).
 * <p>
 * Tagged {@code galera} and {@code clusters}: not part of the Galera smoke, runs with {@code -Pclusters}.
 */
@Tag("galera")
@Tag("clusters")
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class GaleraCommitValidationTests {

	private static final Duration LEASE = Duration.ofMillis(300);

	private static GaleraCluster cluster;

	private static final List<HikariDataSource> pools = new ArrayList<>();

	private static LockDialect dialect;

	private final ExecutorService holderThread = Executors.newSingleThreadExecutor();

	private final String resource = "galera-commit-" + UUID.randomUUID();

	@BeforeAll
	static void startCluster() throws SQLException {
		cluster = GaleraCluster.start(3);
		for (int i = 0; i < 2; i++) {
			pools.add(cluster.node(i).newDataSource(GaleraCluster.DATABASE, 8));
		}
		DatabaseServer server = DatabaseServer.detect(pools.get(0));
		dialect = LockDialect.of(server);
		assertThat(DatabaseTopology.detect(pools.get(0), server).multiPrimaryCluster())
			.as("the topology check finds the multi-primary cluster").isNotNull();
		LockNodes.migrate(pools.get(0));
		cluster.node(0).execute(GaleraCluster.DATABASE, "CREATE TABLE galera_commit_write (id BIGINT AUTO_INCREMENT"
				+ " PRIMARY KEY, resource VARCHAR(100) NOT NULL, writer VARCHAR(32) NOT NULL, KEY (resource))");
		cluster.awaitSchema(GaleraCluster.DATABASE, Duration.ofMinutes(1)); // the other node applies DDL from its queue
	}

	@AfterAll
	static void stopCluster() {
		pools.forEach(HikariDataSource::close);
		pools.clear();
		if (cluster != null) {
			cluster.close();
		}
	}

	@AfterEach
	void stopHolder() {
		this.holderThread.shutdownNow();
	}

	/** An application node on cluster node {@code n} (0-based) with the multi-primary check. */
	private static LockTemplate app(int n, boolean validate) {
		LeaseLockProvider provider = (LeaseLockProvider) LockNodes.provider(LockMode.LEASE, pools.get(n), dialect);
		provider.setMultiPrimary(true);
		LockTemplate app = LockNodes.node(provider, "app" + (n + 1));
		app.setValidateAtCommit(validate);
		return app;
	}

	private static TransactionTemplate tx(int n) {
		DataSourceTransactionManager manager = new DataSourceTransactionManager(pools.get(n));
		manager.addListener(new CommitValidation());
		return new TransactionTemplate(manager);
	}

	private static LockOptions options(LockType type, Duration lease) {
		return LockOptions.defaults().withMode(LockMode.LEASE).withType(type).withLeaseTime(lease);
	}

	private void insert(int n, String writer) {
		new JdbcTemplate(pools.get(n)).update("INSERT INTO galera_commit_write (resource, writer) VALUES (?, ?)",
				this.resource, writer);
	}

	/** The committed writers, read causally (after every commit the cluster has certified so far). */
	private List<String> committedWriters() throws SQLException {
		try (Connection c = cluster.node(2).connect(GaleraCluster.DATABASE)) {
			try (PreparedStatement ps = c.prepareStatement("SET SESSION wsrep_sync_wait = 1")) {
				ps.execute();
			}
			List<String> writers = new ArrayList<>();
			try (PreparedStatement ps = c.prepareStatement(
					"SELECT writer FROM galera_commit_write WHERE resource = ? ORDER BY writer")) {
				ps.setString(1, this.resource);
				try (ResultSet rs = ps.executeQuery()) {
					while (rs.next()) {
						writers.add(rs.getString(1));
					}
				}
			}
			return writers;
		}
	}

	/** B, on cluster node 2, takes the lock once A's lease has ended and commits its write under it. */
	private void nodeBTakesOverAndWrites(LockTemplate b, LockType type) {
		try (LockHandle taken = b.acquire(this.resource, options(type, Duration.ofSeconds(10))
			.withWaitTime(Duration.ofSeconds(10)))) {
			tx(1).executeWithoutResult((status) -> insert(1, "B"));
		}
	}

	/**
	 * A on node 1 writes in its transaction and stalls past its explicit lease; B on node 2 takes the lock and commits
	 * its write; A's commit fails with {@link LockLostException} and only B's write survives.
	 */
	@ParameterizedTest
	@EnumSource(names = { "EXCLUSIVE", "WRITE" })
	void aStaleHolderOnOneNodeRollsBackAfterATakeOnAnother(LockType type) throws Exception {
		LockTemplate a = app(0, true);
		LockTemplate b = app(1, true);
		CountDownLatch written = new CountDownLatch(1);
		CountDownLatch resume = new CountDownLatch(1);
		Future<?> holder = this.holderThread.submit(() -> tx(0).executeWithoutResult((status) ->
			a.executeWithoutResult(this.resource, options(type, LEASE), (lock) -> {
				insert(0, "A");
				written.countDown();
				await(resume);
			})));
		assertThat(written.await(30, TimeUnit.SECONDS)).isTrue();
		nodeBTakesOverAndWrites(b, type);
		resume.countDown();
		assertThatExceptionOfType(ExecutionException.class).isThrownBy(() -> holder.get(60, TimeUnit.SECONDS))
			.withCauseInstanceOf(LockLostException.class)
			.withMessageContaining("was no longer held when its transaction was about to commit");
		assertThat(committedWriters()).containsExactly("B");
	}

	/** The same with {@code validate-at-commit=false}: both writes commit, A's after its lease passed to B. */
	@ParameterizedTest
	@EnumSource(names = { "EXCLUSIVE", "WRITE" })
	void withoutValidationBothCommit(LockType type) throws Exception {
		LockTemplate a = app(0, false);
		LockTemplate b = app(1, true);
		CountDownLatch written = new CountDownLatch(1);
		CountDownLatch resume = new CountDownLatch(1);
		Future<?> holder = this.holderThread.submit(() -> tx(0).executeWithoutResult((status) -> {
			try (LockHandle lock = a.acquire(this.resource, options(type, LEASE))) {
				insert(0, "A");
				written.countDown();
				await(resume);
			}
			catch (LockLostException expected) {
				// its release finds the lease gone, but the transaction still commits
			}
		}));
		assertThat(written.await(30, TimeUnit.SECONDS)).isTrue();
		nodeBTakesOverAndWrites(b, type);
		resume.countDown();
		holder.get(60, TimeUnit.SECONDS);
		assertThat(committedWriters()).containsExactly("A", "B");
	}

	/**
	 * The race a locking read would lose: A's check on node 1 has run (its write to the row is local, not yet
	 * certified) and A's lease then ends while its commit waits; B's take on node 2 does not see A's uncertified
	 * write, so it is granted, and commits first. Exactly one of the two may commit: A's commit fails (certification,
	 * or the brute-force abort by B's replicated take: error 1213), and only B's write survives. A locking read alone
	 * would have let both commit.
	 */
	@ParameterizedTest
	@EnumSource(names = { "EXCLUSIVE", "WRITE" })
	void aTakeOnAnotherNodeDuringTheCheckedCommitLetsOnlyOneCommit(LockType type) throws Exception {
		LockTemplate a = app(0, true);
		LockTemplate b = app(1, true);
		CountDownLatch checked = new CountDownLatch(1);
		CountDownLatch bCommitted = new CountDownLatch(1);
		Future<?> holder = this.holderThread.submit(() -> tx(0).executeWithoutResult((status) ->
			a.executeWithoutResult(this.resource, options(type, LEASE), (lock) -> {
				insert(0, "A");
				TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
					@Override
					public void beforeCompletion() { // after every beforeCommit, the check's included
						checked.countDown();
						await(bCommitted); // the COMMIT is sent after B's take and write have committed
					}
				});
			})));
		assertThat(checked.await(30, TimeUnit.SECONDS)).isTrue();
		try {
			nodeBTakesOverAndWrites(b, type); // granted on node 2 once A's lease has ended there
		}
		finally {
			bCommitted.countDown();
		}
		Throwable failure = catchCause(holder);
		assertThat(failure).as("A's commit").isNotNull();
		Throwable root = NestedExceptionUtils.getMostSpecificCause(failure);
		assertThat(root).isInstanceOf(SQLException.class);
		assertThat(((SQLException) root).getErrorCode()).as("a certification conflict").isEqualTo(1213);
		assertThat(committedWriters()).containsExactly("B");
	}

	private static Throwable catchCause(Future<?> future) throws Exception {
		try {
			future.get(60, TimeUnit.SECONDS);
			return null;
		}
		catch (ExecutionException ex) {
			return ex.getCause();
		}
	}

	private static void await(CountDownLatch latch) {
		try {
			assertThat(latch.await(60, TimeUnit.SECONDS)).isTrue();
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}

}
