package io.github.dblock.jdbc.sql;

import io.github.dblock.jdbc.lease.LeaseLockProvider;
import io.github.dblock.jdbc.optimistic.OptimisticLockProvider;
import io.github.dblock.jdbc.pessimistic.PessimisticLockProvider;
import java.sql.SQLException;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.LockType;
import io.github.dblock.idempotency.IdempotencyStatus;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.spi.TransactionCheckedLock;
import io.github.dblock.test.nodes.IdempotencyNodes;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.Pauses;
import io.github.dblock.test.TestDatabase;
import io.github.dblock.wait.Backoff;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.dao.PessimisticLockingFailureException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.annotation.Isolation;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * MariaDB's snapshot isolation ({@code innodb_snapshot_isolation}, ON by default from 11.6.2): a locking read or a
 * write inside a REPEATABLE READ (or SERIALIZABLE) transaction fails with error 1020 and the whole transaction rolls
 * back when the row changed after the transaction's read view was created. Every statement this library runs inside
 * the caller's transaction (or OPTIMISTIC's work transaction) meets rows that change all the time, so each is run
 * here in a transaction that read first, after the row changed, on connections with the setting ON whatever the
 * suite's setting (on a server with the variable; elsewhere the same scenarios run without it). Each asserts the
 * documented outcome: the check passes for a held lock, the lock is granted, the outcome is recorded, the
 * OPTIMISTIC work runs again after a conflict.
 */
class SnapshotIsolationTests {

	private static HikariDataSource pool;

	private static HikariDataSource otherPool;

	private static JdbcTemplate jdbc;

	private static boolean snapshotIsolation;

	/** Threads of the waiters and other nodes (not the common pool, which has one thread on a 2-core machine). */
	private static final ExecutorService threads = Executors.newCachedThreadPool();

	@BeforeAll
	static void pools() {
		TestDatabase db = TestDatabase.get();
		snapshotIsolation = db.hasSnapshotIsolation();
		String url = snapshotIsolation ? TestDatabase.withSessionVariables(db.jdbcUrl(), "innodb_snapshot_isolation=ON")
				: db.jdbcUrl();
		pool = db.newDataSource(8, (config) -> {
			config.setJdbcUrl(url);
			config.setPoolName("snapshot-isolation-on");
		});
		otherPool = db.newDataSource(8, (config) -> config.setPoolName("snapshot-isolation-other-node"));
		LockNodes.migrateOnce(pool);
		jdbc = new JdbcTemplate(pool);
		jdbc.execute("CREATE TABLE IF NOT EXISTS snapshot_test_item (id VARCHAR(64) PRIMARY KEY, note VARCHAR(64))");
		jdbc.execute("CREATE TABLE IF NOT EXISTS snapshot_test_stock (id VARCHAR(64) PRIMARY KEY, units INT NOT NULL)");
		if (snapshotIsolation) {
			assertThat(jdbc.queryForObject("SELECT @@innodb_snapshot_isolation", Integer.class))
				.as("the sessions of this test run with snapshot isolation ON").isEqualTo(1);
		}
	}

	@AfterAll
	static void close() {
		threads.shutdownNow();
		pool.close();
		otherPool.close();
	}

	private static LockRequest request(String resource, Duration lease, Duration wait) {
		return new LockRequest(resource, lease, false, Duration.ZERO, System.nanoTime() + wait.toNanos(),
				"snapshot-test");
	}

	private static TransactionTemplate transactions(Isolation isolation) {
		TransactionTemplate template = new TransactionTemplate(new DataSourceTransactionManager(pool));
		template.setIsolationLevel(isolation.value());
		return template;
	}

	/** A consistent read of an InnoDB table: under REPEATABLE READ it creates the transaction's read view. */
	private static void readSomething() {
		jdbc.queryForList("SELECT note FROM snapshot_test_item WHERE id = ?", String.class, "nothing");
	}

	private static String waitingOwner(String resource) {
		return new JdbcTemplate(otherPool).queryForObject("SELECT waiting_owner FROM " + LockNodes.TABLE.quoted()
				+ " WHERE resource = ?", String.class, (Object) LockRows.bytes(resource));
	}

	/**
	 * The case: a lock taken before the transaction, the transaction reads, a waiter on another node announces
	 * itself on the lock row, then the commit check runs: it must find the lock held (both variants, every isolation
	 * level that has a read view, and READ COMMITTED).
	 */
	@ParameterizedTest
	@CsvSource({ "REPEATABLE_READ,false", "REPEATABLE_READ,true", "SERIALIZABLE,false", "READ_COMMITTED,false" })
	void aHeldLeasePassesItsCommitCheckAfterTheTransactionReadAndAWaiterAnnouncedItself(Isolation isolation,
			boolean multiPrimary) throws Exception {
		LeaseLockProvider provider = (LeaseLockProvider) LockNodes.provider(LockMode.LEASE, pool);
		LeaseLockProvider otherNode = (LeaseLockProvider) LockNodes.provider(LockMode.LEASE, otherPool);
		provider.setMultiPrimary(multiPrimary);
		String resource = "snapshot-check-" + UUID.randomUUID();
		HeldLock held = provider.acquire(request(resource, Duration.ofSeconds(30), Duration.ZERO)).lock();
		assertThat(held).isInstanceOf(TransactionCheckedLock.class);
		TransactionCheckedLock lock = (TransactionCheckedLock) held;
		CompletableFuture<HeldLock> waiter = new CompletableFuture<>();
		Boolean checked = transactions(isolation).execute((status) -> {
			readSomething();
			CompletableFuture.runAsync(() -> {
				try {
					waiter.complete(otherNode.acquire(request(resource, Duration.ofSeconds(30), Duration.ofSeconds(20)))
						.lock());
				}
				catch (Throwable ex) {
					waiter.completeExceptionally(ex);
				}
			}, threads);
			assertThat(Pauses.await(Duration.ofSeconds(10), () -> waitingOwner(resource) != null))
				.as("the waiter announced itself on the lock row").isTrue();
			boolean valid = lock.lockRowInTransaction();
			jdbc.update("INSERT INTO snapshot_test_item (id, note) VALUES (?, 'checked')", resource);
			return valid;
		});
		assertThat(checked).as("the commit check of a held lock").isTrue();
		assertThat(jdbc.queryForObject("SELECT note FROM snapshot_test_item WHERE id = ?", String.class, resource))
			.isEqualTo("checked");
		assertThat(lock.release()).isTrue();
		HeldLock next = waiter.get(20, TimeUnit.SECONDS);
		assertThat(next).as("the waiter takes the lock once it is released").isNotNull();
		assertThat(next.release()).isTrue();
		provider.close();
		otherNode.close();
	}

	/**
	 * A lock taken inside a transaction that read before (the take itself changes the lock row after the read view),
	 * exclusive and WRITE, both check variants: the commit check runs at the commit and the transaction commits.
	 */
	@ParameterizedTest
	@CsvSource({ "EXCLUSIVE,false", "EXCLUSIVE,true", "WRITE,false", "WRITE,true" })
	void aLockTakenInsideATransactionThatReadFirstCommitsUnderItsCommitCheck(LockType type, boolean multiPrimary) {
		LeaseLockProvider provider = (LeaseLockProvider) LockNodes.provider(LockMode.LEASE, pool);
		provider.setMultiPrimary(multiPrimary);
		LockTemplate node = LockNodes.node(provider, "snapshot-node");
		assertThat(node.isValidateAtCommit()).isTrue();
		String resource = "snapshot-take-" + UUID.randomUUID();
		transactions(Isolation.REPEATABLE_READ).executeWithoutResult((status) -> {
			readSomething();
			node.execute(resource, LockOptions.defaults().withType(type).withLeaseTime(Duration.ofSeconds(30)),
					(lock) -> jdbc.update("INSERT INTO snapshot_test_item (id, note) VALUES (?, ?)", resource,
							"token " + lock.fencingToken()));
		});
		assertThat(jdbc.queryForObject("SELECT note FROM snapshot_test_item WHERE id = ?", String.class, resource))
			.startsWith("token ");
		assertThat(node.introspection().localHeldCount()).as("released once the transaction completed").isZero();
		provider.close();
	}

	/**
	 * A PESSIMISTIC lock that joins a transaction which read first, granted behind a holder whose durable write
	 * committed after that read; with either fencing setting of the caller.
	 */
	@ParameterizedTest
	@EnumSource(PessimisticLockProvider.Fencing.class)
	void aPessimisticLockJoiningATransactionThatReadFirstIsGrantedBehindADurableHolder(
			PessimisticLockProvider.Fencing fencing) throws Exception {
		LockTemplate holderNode = LockNodes.node(LockMode.PESSIMISTIC, "pessimistic-holder", otherPool);
		PessimisticLockProvider callerProvider = (PessimisticLockProvider) LockNodes.provider(LockMode.PESSIMISTIC, pool);
		callerProvider.setFencing(fencing);
		LockTemplate callerNode = LockNodes.node(callerProvider, "pessimistic-caller");
		String resource = "snapshot-pessimistic-" + UUID.randomUUID();
		LockHandle holder = holderNode.acquire(resource);
		long holderToken = holder.fencingToken();
		CompletableFuture<Long> callerSession = new CompletableFuture<>();
		CompletableFuture<Long> caller = CompletableFuture.supplyAsync(() -> transactions(Isolation.REPEATABLE_READ)
			.execute((status) -> {
				readSomething();
				callerSession.complete(jdbc.queryForObject("SELECT CONNECTION_ID()", Long.class));
				return callerNode.execute(resource, LockOptions.defaults().withWaitTime(Duration.ofSeconds(20)),
						(lock) -> {
							jdbc.update("INSERT INTO snapshot_test_item (id, note) VALUES (?, 'pessimistic')", resource);
							return lock.fencingToken();
						});
			}), threads);
		long session = CompletableFuture.anyOf(callerSession, caller).thenApply((first) -> callerSession.join())
			.get(10, TimeUnit.SECONDS);
		JdbcTemplate observer = new JdbcTemplate(otherPool);
		// the caller's locking read has been sent: it waits for the holder's row lock
		assertThat(Pauses.await(Duration.ofSeconds(10), () -> observer.queryForObject("SELECT COUNT(*) FROM "
				+ "information_schema.PROCESSLIST WHERE ID = ? AND INFO LIKE '%FOR UPDATE%'", Integer.class, session) == 1))
			.as("the caller read, then waits in the server's lock queue behind the holder").isTrue();
		assertThat(caller).isNotDone();
		holder.close();
		Long token = caller.get(30, TimeUnit.SECONDS);
		assertThat(token).as("granted after the holder, with a higher token").isGreaterThan(holderToken);
		assertThat(jdbc.queryForObject("SELECT note FROM snapshot_test_item WHERE id = ?", String.class, resource))
			.isEqualTo("pessimistic");
	}

	/** The outcome of an idempotent call recorded in the caller's transaction, which read before the key was claimed. */
	@Test
	void theOutcomeOfAnIdempotentCallIsRecordedInATransactionThatReadFirst() {
		try (IdempotencyNodes.Node node = IdempotencyNodes.node(pool, "snapshot-idempotency", Duration.ofSeconds(30))) {
			String key = "snapshot-idem-" + UUID.randomUUID();
			AtomicInteger runs = new AtomicInteger();
			Integer result = transactions(Isolation.REPEATABLE_READ).execute((status) -> {
				readSomething();
				return node.template().execute(key, Integer.class, (claim) -> {
					jdbc.update("INSERT INTO snapshot_test_item (id, note) VALUES (?, 'paid')", key);
					return runs.incrementAndGet();
				});
			});
			assertThat(result).isEqualTo(1);
			assertThat(node.template().find(key).orElseThrow().status()).isEqualTo(IdempotencyStatus.SUCCEEDED);
			assertThat(node.template().execute(key, Integer.class, (claim) -> runs.incrementAndGet()))
				.as("a duplicate gets the recorded outcome").isEqualTo(1);
			assertThat(runs).hasValue(1);
		}
	}

	private static LockTemplate optimisticNode(String name) {
		return LockNodes.node(new OptimisticLockProvider(pool, LockNodes.TABLE, new DataSourceTransactionManager(pool),
				Duration.ofSeconds(5), new Backoff(Duration.ofMillis(5), Duration.ofMillis(20)), 5), name);
	}

	/** OPTIMISTIC's compare-and-set after another node committed under the same resource since the version read. */
	@Test
	void anOptimisticTakeAfterAnotherNodesCommitIsAConflictAndTheWorkRunsAgain() {
		LockTemplate node = optimisticNode("optimistic-a");
		LockTemplate other = optimisticNode("optimistic-b");
		String resource = "snapshot-optimistic-" + UUID.randomUUID();
		AtomicInteger runs = new AtomicInteger();
		String result = node.execute(resource, (lock) -> {
			int run = runs.incrementAndGet();
			if (run == 1) {
				// another node commits under the resource while this run's transaction is open
				CompletableFuture.runAsync(() -> other.execute(resource, (otherLock) -> "other"), threads).join();
			}
			jdbc.update("INSERT INTO snapshot_test_item (id, note) VALUES (?, ?)", resource + "-" + run, "run " + run);
			return "committed on run " + run;
		});
		assertThat(result).isEqualTo("committed on run 2");
		assertThat(jdbc.queryForList("SELECT note FROM snapshot_test_item WHERE id LIKE ?", String.class,
				resource + "-%")).as("the conflicting run rolled back").containsExactly("run 2");
	}

	/**
	 * OPTIMISTIC work whose own statement meets a row another transaction changed since the version read: with
	 * snapshot isolation the server rolls the work's transaction back (1020), which is a conflict like a deadlock, so
	 * the work runs again; without it the statement reads the latest row and the first run commits.
	 */
	@Test
	void anOptimisticWorkStatementRolledBackBySnapshotIsolationRunsTheWorkAgain() {
		LockTemplate node = optimisticNode("optimistic-stock");
		String resource = "snapshot-stock-" + UUID.randomUUID();
		jdbc.update("INSERT INTO snapshot_test_stock (id, units) VALUES (?, 10)", resource);
		AtomicInteger runs = new AtomicInteger();
		Integer result = node.execute(resource, (lock) -> {
			int run = runs.incrementAndGet();
			if (run == 1) {
				new JdbcTemplate(otherPool).update("UPDATE snapshot_test_stock SET units = units - 1 WHERE id = ?",
						resource);
			}
			jdbc.update("UPDATE snapshot_test_stock SET units = units - 1 WHERE id = ?", resource);
			return run;
		});
		// at READ COMMITTED each statement reads the latest rows: there is no read view to conflict with
		boolean readView = TestDatabase.transactionIsolationSetting().equals("REPEATABLE-READ");
		assertThat(result).as("the run that committed").isEqualTo((snapshotIsolation && readView) ? 2 : 1);
		assertThat(jdbc.queryForObject("SELECT units FROM snapshot_test_stock WHERE id = ?", Integer.class, resource))
			.as("one unit taken by the other transaction, one by the work").isEqualTo(8);
	}

	/** A 1020 that reaches the caller anyway is a retryable concurrency failure, not an uncategorized error. */
	@Test
	void errorCode1020IsTranslatedToARetryableConcurrencyFailure() {
		JdbcLockSupport support = new JdbcLockSupport(pool, Duration.ofSeconds(5));
		assertThat(support.translate("check lock 'x' at commit", new SQLException(
				"Record has changed since last read in table 'distributed_lock'", "HY000", 1020)))
			.isInstanceOf(PessimisticLockingFailureException.class)
			.hasMessageContaining("check lock 'x' at commit")
			.hasMessageContaining("rolled the transaction back");
	}

}
