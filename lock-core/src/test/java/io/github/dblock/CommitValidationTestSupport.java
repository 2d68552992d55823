package io.github.dblock;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The fixture of the commit-validation tests on one server ({@link CommitValidationTests},
 * {@link ReadWriteCommitValidationTests}): node A and node B are two LEASE {@link LockTemplate}s on pools of their own
 * (six connections each); A's transactions ({@link #txA}) are validated at commit by {@link CommitValidation}, B's
 * ({@link #txB}) are not. Each test has a resource of its own and the thread {@link #holderThread} for A's holder,
 * which "stalls" by waiting on a latch past its explicit lease; each node records its writes in
 * {@code commit_check_write}, and {@link #committedWriters()} reads back those that committed.
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
abstract class CommitValidationTestSupport {

	/** The explicit lease of A's stalled holders. */
	static final Duration LEASE = Duration.ofMillis(300);

	HikariDataSource poolA;

	HikariDataSource poolB;

	LockTemplate nodeA;

	LockTemplate nodeB;

	TransactionTemplate txA;

	TransactionTemplate txB;

	final String resource;

	final ExecutorService holderThread = Executors.newSingleThreadExecutor();

	private final LockOptions takeOver;

	/**
	 * @param resourcePrefix the start of each test's resource name (a random UUID follows)
	 * @param takeOver the options of B's take-over in {@link #nodeBTakesOverAndWrites()} (a wait of 5 s is added)
	 */
	CommitValidationTestSupport(String resourcePrefix, LockOptions takeOver) {
		this.resource = resourcePrefix + UUID.randomUUID();
		this.takeOver = takeOver.withWaitTime(Duration.ofSeconds(5));
	}

	@BeforeAll
	static void table() {
		TestDatabase.get().execute("CREATE TABLE IF NOT EXISTS commit_check_write (id BIGINT AUTO_INCREMENT PRIMARY KEY,"
				+ " resource VARCHAR(100) NOT NULL, writer VARCHAR(32) NOT NULL)");
	}

	@BeforeEach
	void nodes() {
		this.poolA = TestDatabase.get().newDataSource(6);
		this.poolB = TestDatabase.get().newDataSource(6);
		LockNodes.migrateOnce(this.poolA);
		this.nodeA = LockNodes.node(LockMode.LEASE, "node-a", this.poolA);
		this.nodeB = LockNodes.node(LockMode.LEASE, "node-b", this.poolB);
		DataSourceTransactionManager managerA = new DataSourceTransactionManager(this.poolA);
		managerA.addListener(new CommitValidation());
		this.txA = new TransactionTemplate(managerA);
		this.txB = new TransactionTemplate(new DataSourceTransactionManager(this.poolB));
	}

	@AfterEach
	void close() {
		this.holderThread.shutdownNow();
		this.poolA.close();
		this.poolB.close();
	}

	/** Records a write of {@code writer} on the resource, in the transaction of {@code pool} the thread is in, if any. */
	void insert(DataSource pool, String writer) {
		new JdbcTemplate(pool).update("INSERT INTO commit_check_write (resource, writer) VALUES (?, ?)", this.resource,
				writer);
	}

	/** The writers whose writes on the resource committed, in the order they were written. */
	List<String> committedWriters() {
		return new JdbcTemplate(this.poolB).queryForList(
				"SELECT writer FROM commit_check_write WHERE resource = ? ORDER BY id", String.class, this.resource);
	}

	/** Node B takes the lock once A's lease has ended, writes "B" under it in a transaction of its own, commits. */
	void nodeBTakesOverAndWrites() {
		try (LockHandle taken = this.nodeB.acquire(this.resource, this.takeOver)) {
			this.txB.executeWithoutResult((status) -> insert(this.poolB, "B"));
		}
	}

	/**
	 * A's stale holder: runs {@code holder} on {@link #holderThread}, handing it {@code stall}, which the holder runs
	 * once it has written; {@code stall} returns only after node B has taken the lock over and committed its write
	 * ({@link #nodeBTakesOverAndWrites()}, which waits for A's lease to end). Returns once B has written.
	 * @return the holder's outcome (its commit, or the exception that refused it)
	 */
	Future<?> holderStalledWhileBTakesOver(Consumer<Runnable> holder) throws InterruptedException {
		CountDownLatch written = new CountDownLatch(1);
		CountDownLatch resume = new CountDownLatch(1);
		Future<?> outcome = this.holderThread.submit(() -> holder.accept(() -> {
			written.countDown();
			await(resume);
		}));
		assertThat(written.await(10, TimeUnit.SECONDS)).isTrue();
		nodeBTakesOverAndWrites();
		resume.countDown();
		return outcome;
	}

	/** Waits up to 30 s for the latch and fails the test (or the holder) if it does not open. */
	static void await(CountDownLatch latch) {
		try {
			assertThat(latch.await(30, TimeUnit.SECONDS)).isTrue();
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}
}
