package io.github.dblock.contract;

import io.github.dblock.jdbc.admin.LockTableAdmin;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import io.github.dblock.LockHandle;
import io.github.dblock.LockInterruptedException;
import io.github.dblock.LockLostException;
import io.github.dblock.LockMode;
import io.github.dblock.LockNotAcquiredException;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.spi.LockProvider;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.jdbc.datasource.DataSourceUtils;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * The behaviour every lock mode promises, checked against the real database through
 * {@link LockTemplate#execute}: units of work on one resource take effect one after another (a non-atomic
 * read-modify-write counter ends exact), fencing tokens increase in the order the database recorded the work,
 * and arguments are checked before anything is locked. "Nodes" are separate {@link LockTemplate}s (own providers,
 * own JVM-local state) that meet only in the database, as separate application instances would.
 * {@link HeldLockContractTests} adds what modes that hand out a lock to hold promise.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class LockContractTests {

	/** The test database's nodes; {@code null} when {@link #newStore()} is not the test database. */
	protected LockNodes nodes;

	protected ContractStore store;

	protected LockTemplate nodeA;

	protected LockTemplate nodeB;

	protected abstract LockMode mode();

	/** Whether units of work never overlap in time (all modes but OPTIMISTIC, which only serializes commits). */
	protected boolean excludesExecution() {
		return true;
	}

	/** The provider a node uses; subclasses may choose another dialect. */
	protected LockProvider provider(DataSource dataSource) {
		return LockNodes.provider(mode(), dataSource);
	}

	protected LockTemplate node(String name) {
		return this.store.node(name);
	}

	/**
	 * Where the nodes meet: the test database (and {@link #nodes} on it). lock-test runs the same tests against its
	 * in-memory store by overriding this.
	 */
	protected ContractStore newStore() {
		this.nodes = new LockNodes(24);
		TestDatabase.get().execute("CREATE TABLE IF NOT EXISTS lock_test_counter (name VARCHAR(100) PRIMARY KEY, "
				+ "value BIGINT NOT NULL)", "CREATE TABLE IF NOT EXISTS lock_test_token (seq BIGINT AUTO_INCREMENT PRIMARY KEY, "
						+ "name VARCHAR(100) NOT NULL, token BIGINT NOT NULL, KEY (name))");
		return new DatabaseStore();
	}

	@BeforeAll
	void startNodes() {
		this.store = newStore();
		this.nodeA = node("node-a");
		this.nodeB = node("node-b");
	}

	@AfterAll
	void stopNodes() {
		this.store.close();
	}

	protected static String newResource() {
		return "contract-" + UUID.randomUUID();
	}

	protected static LockOptions patient() {
		return LockOptions.defaults().withWaitTime(Duration.ofSeconds(60));
	}

	@Test
	void workOnOneResourceFromManyThreadsOnTwoNodesTakesEffectOneAtATime() throws Exception {
		String resource = newResource();
		createCounter(resource);
		int threadsPerNode = 4;
		int incrementsPerThread = 25;
		AtomicInteger inside = new AtomicInteger();
		AtomicInteger overlaps = new AtomicInteger();
		List<Callable<Void>> workers = new ArrayList<>();
		for (LockTemplate node : List.of(this.nodeA, this.nodeB)) {
			for (int t = 0; t < threadsPerNode; t++) {
				workers.add(() -> {
					for (int i = 0; i < incrementsPerThread; i++) {
						node.executeWithoutResult(resource, patient(), (lock) -> {
							if (inside.incrementAndGet() != 1) {
								overlaps.incrementAndGet();
							}
							incrementCounterNonAtomically(resource);
							inside.decrementAndGet();
						});
					}
					return null;
				});
			}
		}
		runAll(workers);
		if (excludesExecution()) {
			assertThat(overlaps).hasValue(0);
		}
		assertThat(readCounter(resource)).isEqualTo(2L * threadsPerNode * incrementsPerThread);
		assertThat(this.nodeA.introspection().localResourceCount()).isZero();
		assertThat(this.nodeB.introspection().localResourceCount()).isZero();
	}

	@Test
	void fencingTokensStrictlyIncreaseInTheOrderTheDatabaseRecordedTheWork() throws Exception {
		String resource = newResource();
		List<Callable<Void>> workers = new ArrayList<>();
		for (LockTemplate node : List.of(this.nodeA, this.nodeB, this.nodeA, this.nodeB)) {
			workers.add(() -> {
				for (int i = 0; i < 20; i++) {
					node.executeWithoutResult(resource, patient(), (lock) -> recordToken(resource, lock.fencingToken()));
				}
				return null;
			});
		}
		runAll(workers);
		List<Long> tokens = recordedTokens(resource);
		assertThat(tokens).hasSize(80);
		for (int i = 1; i < tokens.size(); i++) {
			assertThat(tokens.get(i)).as("token %d after %d", i, i - 1).isGreaterThan(tokens.get(i - 1));
		}
	}

	@Test
	void invalidArgumentsAreRejectedBeforeAnythingIsLocked() {
		assertThatIllegalArgumentException().isThrownBy(() -> LockOptions.defaults().withWaitTime(Duration.ofMillis(-1)));
		assertThatIllegalArgumentException().isThrownBy(() -> LockOptions.defaults().withLeaseTime(Duration.ZERO));
		assertThatIllegalArgumentException().isThrownBy(() -> this.nodeA.execute(null, (lock) -> 1))
			.withMessageContaining("null");
		assertThatIllegalArgumentException().isThrownBy(() -> this.nodeA.execute(" ", (lock) -> 1))
			.withMessageContaining("blank");
		assertThatIllegalArgumentException().isThrownBy(() -> this.nodeA.execute("x".repeat(256), (lock) -> 1))
			.withMessageContaining("256");
		assertThatIllegalArgumentException().isThrownBy(() -> this.nodeA.execute("bad\uD800", (lock) -> 1))
			.withMessageContaining("surrogate");
		String emoji = "🔒".repeat(250) + UUID.randomUUID().toString().substring(0, 5);
		String locked = this.nodeA.execute(emoji, (lock) -> lock.resource());
		assertThat(locked).isEqualTo(emoji);
		assertThat(this.nodeA.introspection().localResourceCount()).isZero();
	}

	// --- helpers ---

	protected static <T> T callInThread(Callable<T> action) throws Exception {
		ExecutorService executor = Executors.newSingleThreadExecutor();
		try {
			return executor.submit(action).get(30, TimeUnit.SECONDS);
		}
		finally {
			executor.shutdownNow();
		}
	}

	protected static void runAll(List<Callable<Void>> workers) throws Exception {
		ExecutorService pool = Executors.newFixedThreadPool(workers.size());
		try {
			List<Future<Void>> futures = pool.invokeAll(workers, 5, TimeUnit.MINUTES);
			for (Future<Void> future : futures) {
				future.get(); // propagates any worker failure
			}
		}
		finally {
			pool.shutdownNow();
		}
	}

	protected String currentOwner(String resource) throws Exception {
		return this.store.currentOwner(resource);
	}

	protected void createCounter(String name) throws Exception {
		this.store.createCounter(name);
	}

	/**
	 * Read, then write: loses updates unless units of work take effect one at a time. Runs on the work's
	 * transaction when there is one (PESSIMISTIC, OPTIMISTIC), else on its own connection.
	 */
	protected void incrementCounterNonAtomically(String name) {
		this.store.incrementCounterNonAtomically(name);
	}

	/** Records a token in the work's transaction (rolled back with it), in database order. */
	protected void recordToken(String name, long token) {
		this.store.recordToken(name, token);
	}

	protected List<Long> recordedTokens(String name) throws Exception {
		return this.store.recordedTokens(name);
	}

	protected long readCounter(String name) throws Exception {
		return this.store.readCounter(name);
	}

	/** The test database as the {@link ContractStore}. */
	private final class DatabaseStore implements ContractStore {

		@Override
		public LockTemplate node(String name) {
			return LockNodes.node(provider(LockContractTests.this.nodes.dataSource()), name);
		}

		@Override
		public String currentOwner(String resource) throws SQLException {
			try (Connection c = LockContractTests.this.nodes.dataSource().getConnection();
					PreparedStatement ps = c.prepareStatement("SELECT owner_token FROM distributed_lock WHERE resource = ?")) {
				ps.setBytes(1, resource.getBytes(java.nio.charset.StandardCharsets.UTF_8));
				try (ResultSet rs = ps.executeQuery()) {
					assertThat(rs.next()).isTrue();
					return rs.getString(1);
				}
			}
		}

		@Override
		public java.util.Optional<io.github.dblock.jdbc.admin.LockTableAdmin.LockRow> row(String resource) {
			return new io.github.dblock.jdbc.admin.LockTableAdmin(LockContractTests.this.nodes.dataSource(), LockNodes.TABLE,
					Duration.ofSeconds(5)).find(resource);
		}

		@Override
		public java.time.Instant now() {
			return new io.github.dblock.jdbc.admin.LockTableAdmin(LockContractTests.this.nodes.dataSource(), LockNodes.TABLE,
					Duration.ofSeconds(5)).serverTime();
		}

		@Override
		public void createCounter(String name) throws SQLException {
			try (Connection c = LockContractTests.this.nodes.dataSource().getConnection();
					PreparedStatement ps = c.prepareStatement("INSERT INTO lock_test_counter (name, value) VALUES (?, 0)")) {
				ps.setString(1, name);
				ps.executeUpdate();
			}
		}

		@Override
		public void incrementCounterNonAtomically(String name) {
			DataSource dataSource = LockContractTests.this.nodes.dataSource();
			Connection c = DataSourceUtils.getConnection(dataSource);
			try {
				long value;
				try (PreparedStatement read = c.prepareStatement("SELECT value FROM lock_test_counter WHERE name = ?")) {
					read.setString(1, name);
					try (ResultSet rs = read.executeQuery()) {
						rs.next();
						value = rs.getLong(1);
					}
				}
				Thread.yield();
				try (PreparedStatement write = c.prepareStatement("UPDATE lock_test_counter SET value = ? WHERE name = ?")) {
					write.setLong(1, value + 1);
					write.setString(2, name);
					write.executeUpdate();
				}
			}
			catch (SQLException ex) {
				throw new IllegalStateException(ex);
			}
			finally {
				DataSourceUtils.releaseConnection(c, dataSource);
			}
		}

		@Override
		public void recordToken(String name, long token) {
			DataSource dataSource = LockContractTests.this.nodes.dataSource();
			Connection c = DataSourceUtils.getConnection(dataSource);
			try (PreparedStatement ps = c.prepareStatement("INSERT INTO lock_test_token (name, token) VALUES (?, ?)")) {
				ps.setString(1, name);
				ps.setLong(2, token);
				ps.executeUpdate();
			}
			catch (SQLException ex) {
				throw new IllegalStateException(ex);
			}
			finally {
				DataSourceUtils.releaseConnection(c, dataSource);
			}
		}

		@Override
		public List<Long> recordedTokens(String name) throws SQLException {
			List<Long> tokens = new ArrayList<>();
			try (Connection c = LockContractTests.this.nodes.dataSource().getConnection();
					PreparedStatement ps = c.prepareStatement("SELECT token FROM lock_test_token WHERE name = ? ORDER BY seq")) {
				ps.setString(1, name);
				try (ResultSet rs = ps.executeQuery()) {
					while (rs.next()) {
						tokens.add(rs.getLong(1));
					}
				}
			}
			return tokens;
		}

		@Override
		public long readCounter(String name) throws SQLException {
			try (Connection c = LockContractTests.this.nodes.dataSource().getConnection();
					PreparedStatement ps = c.prepareStatement("SELECT value FROM lock_test_counter WHERE name = ?")) {
				ps.setString(1, name);
				try (ResultSet rs = ps.executeQuery()) {
					rs.next();
					return rs.getLong(1);
				}
			}
		}

		@Override
		public void close() {
			LockContractTests.this.nodes.close();
		}

	}

}
