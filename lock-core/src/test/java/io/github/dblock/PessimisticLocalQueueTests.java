package io.github.dblock;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.jdbc.pessimistic.PessimisticLockProvider;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import io.github.dblock.wait.Backoff;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A PESSIMISTIC holder lets the JVM's gate go once the database granted it the row, so the next local thread waits
 * in the server's row lock queue and is granted the row at the holder's commit. These tests check what that must not
 * change: exclusion between the threads of one JVM (on connections of the provider's own and inside Spring
 * transactions), fencing tokens in the order of the holds, at most one local thread waiting in the database, hold
 * observations that all stop, reentrancy, and a LEASE caller of the same resource in the same JVM.
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class PessimisticLocalQueueTests {

	private static final int THREADS = 6;

	private static final int SECTIONS_PER_THREAD = 25;

	private HikariDataSource pool;

	private PessimisticLockProvider provider;

	private LockTemplate node;

	private final AtomicInteger started = new AtomicInteger();

	private final AtomicInteger stopped = new AtomicInteger();

	private final String resource = "pipelined-" + UUID.randomUUID();

	@BeforeEach
	void node() {
		this.pool = TestDatabase.get().newDataSource(THREADS * 2 + 4);
		LockNodes.migrateOnce(this.pool);
		this.provider = (PessimisticLockProvider) LockNodes.provider(LockMode.PESSIMISTIC, this.pool);
		this.node = new LockTemplate(List.of(this.provider, LockNodes.provider(LockMode.LEASE, this.pool)),
				LockMode.PESSIMISTIC, Duration.ofSeconds(30), Duration.ofSeconds(30), "pipelined");
		ObservationRegistry observations = ObservationRegistry.create();
		observations.observationConfig().observationHandler(new ObservationHandler<>() {

			@Override
			public boolean supportsContext(Observation.Context context) {
				return "distributed.lock.held".equals(context.getName());
			}

			@Override
			public void onStart(Observation.Context context) {
				PessimisticLocalQueueTests.this.started.incrementAndGet();
			}

			@Override
			public void onStop(Observation.Context context) {
				PessimisticLocalQueueTests.this.stopped.incrementAndGet();
			}

		});
		this.node.setObservationRegistry(observations);
	}

	@AfterEach
	void close() {
		this.pool.close();
	}

	@Test
	void threadsOnConnectionsOfTheirOwnTakeTurnsWithIncreasingTokensAndOneWaiterInTheDatabase() throws Exception {
		Sections sections = new Sections();
		AtomicInteger mostWaiters = new AtomicInteger();
		runThreads(() -> {
			try (LockHandle lock = this.node.acquire(this.resource)) {
				mostWaiters.accumulateAndGet(waitersInDatabase(), Math::max);
				sections.run(lock.fencingToken());
			}
		}, sections);
		assertThat(mostWaiters.get()).as("local threads waiting in the server at once").isEqualTo(1);
		assertThat(this.provider.connectionsInUse()).isZero();
	}

	@Test
	void threadsInsideSpringTransactionsTakeTurnsWithIncreasingTokens() throws Exception {
		Sections sections = new Sections();
		AtomicInteger mostWaiters = new AtomicInteger();
		runThreads(() -> this.node.executeWithoutResult(this.resource, (lock) -> {
			mostWaiters.accumulateAndGet(waitersInDatabase(), Math::max);
			sections.run(lock.fencingToken());
		}), sections);
		assertThat(mostWaiters.get()).as("local threads waiting in the server at once").isEqualTo(1);
	}

	/**
	 * Statements of other sessions that mention this test's resource and are executing (state {@code Updating}, the
	 * state of a statement waiting for a row lock on MariaDB and MySQL; a statement whose reply was already sent
	 * is past it): with the lock held by the caller, those are waiters in the row's lock queue. The statements are
	 * sent with their values inlined (client-side prepared statements), the resource as a hexadecimal literal.
	 */
	private int waitersInDatabase() {
		return waitersInDatabase(this.resource);
	}

	private int waitersInDatabase(String resource) {
		String hex = java.util.HexFormat.of().formatHex(resource.getBytes(java.nio.charset.StandardCharsets.UTF_8));
		Integer count = new org.springframework.jdbc.core.JdbcTemplate(this.pool).queryForObject(
				"SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND COMMAND = 'Query'"
						+ " AND LOWER(INFO) LIKE 'set statement innodb_lock_wait_timeout%for update'"
						+ " AND LOWER(INFO) LIKE CONCAT('%', ?, '%')", Integer.class, hex);
		return (count != null) ? count : 0;
	}

	@Test
	void theHolderReentersWhileTheNextThreadWaitsInTheDatabase() throws Exception {
		ExecutorService executor = Executors.newSingleThreadExecutor();
		try (LockHandle outer = this.node.acquire(this.resource)) {
			Future<Long> next = executor.submit(() -> {
				try (LockHandle lock = this.node.acquire(this.resource)) {
					return lock.fencingToken();
				}
			});
			awaitConnections(2); // the next thread has the gate and waits in the server's row lock queue
			try (LockHandle inner = this.node.acquire(this.resource)) {
				assertThat(inner.fencingToken()).isEqualTo(outer.fencingToken());
				assertThat(this.node.introspection().localHolds()).singleElement().satisfies((hold) -> assertThat(hold.holdCount()).isEqualTo(2));
			}
			assertThat(next).isNotDone();
			outer.close();
			assertThat(next.get(10, TimeUnit.SECONDS)).isGreaterThan(outer.fencingToken());
		}
		finally {
			executor.shutdownNow();
		}
		assertThat(this.node.introspection().localResourceCount()).isZero();
		assertThat(this.stopped.get()).isEqualTo(this.started.get()).isEqualTo(2);
	}

	@Test
	void atTheConnectionCapTheNextLocalThreadWaitsInTheJvmInsteadOfFailing() throws Exception {
		PessimisticLockProvider capped = cappedProvider(1);
		LockTemplate oneConnection = node(capped);
		ExecutorService executor = Executors.newSingleThreadExecutor();
		try {
			LockHandle held = oneConnection.acquire(this.resource);
			Future<Long> next = waiterInJvm(executor, oneConnection, this.resource);
			assertThat(next).as("waits for the local holder, no LockLimitExceededException").isNotDone();
			assertThat(waitersInDatabase()).as("without a free connection it waits in the JVM").isZero();
			assertThatThrownBy(() -> oneConnection.tryAcquire("other-" + this.resource))
				.as("the cap still holds for other resources")
				.isInstanceOf(LockLimitExceededException.class);
			held.close();
			assertThat(next.get(10, TimeUnit.SECONDS)).isGreaterThan(held.fencingToken());
		}
		finally {
			executor.shutdownNow();
		}
		assertThat(capped.connectionsInUse()).isZero();
		assertThat(oneConnection.introspection().localResourceCount()).isZero();
	}

	@Test
	void aHolderWhoseConnectionDiedLosesTheLockWithoutDisturbingTheNextLocalHolder() throws Exception {
		ExecutorService executor = Executors.newSingleThreadExecutor();
		try {
			LockHandle dead = this.node.acquire(this.resource);
			CountDownLatch release = new CountDownLatch(1);
			CountDownLatch inside = new CountDownLatch(1);
			Future<Integer> next = executor.submit(() -> {
				try (LockHandle lock = this.node.acquire(this.resource)) {
					try (LockHandle again = this.node.acquire(this.resource)) {
						assertThat(again.fencingToken()).isEqualTo(lock.fencingToken());
					}
					inside.countDown();
					release.await();
					return this.node.introspection().localHolds().get(0).holdCount();
				}
			});
			awaitWaitersInDatabase(1);
			killConnectionHoldingTheRow();
			assertThat(inside.await(10, TimeUnit.SECONDS)).as("the next local thread got the row").isTrue();
			assertThatThrownBy(() -> this.node.acquire(this.resource)).as("no re-entry into a lock taken over")
				.isInstanceOf(LockLostException.class);
			assertThatThrownBy(dead::close).isInstanceOf(LockLostException.class);
			assertThat(this.node.introspection().localHolds()).singleElement()
				.satisfies((hold) -> assertThat(hold.holdCount()).as("the new holder's count is its own").isEqualTo(1));
			release.countDown();
			assertThat(next.get(10, TimeUnit.SECONDS)).isEqualTo(1);
		}
		finally {
			executor.shutdownNow();
		}
		assertThat(this.node.introspection().localResourceCount()).isZero();
		assertThat(this.provider.connectionsInUse()).isZero();
		assertThat(this.stopped.get()).isEqualTo(this.started.get()).isEqualTo(2);
	}

	@Test
	void aWaiterWaitsInTheJvmWhenHalfTheCapIsUsedSoThatHoldersStillGetConnections() throws Exception {
		PessimisticLockProvider capped = cappedProvider(4);
		LockTemplate four = node(capped);
		String a = this.resource + "-a";
		String b = this.resource + "-b";
		ExecutorService executor = Executors.newFixedThreadPool(3);
		try (LockHandle holdsA = four.acquire(a)) {
			Future<Long> waiterA = executor.submit(() -> {
				try (LockHandle lock = four.acquire(a)) {
					return lock.fencingToken();
				}
			});
			awaitWaitersInDatabase(a, 1); // 2 of 4 connections in use: the first waiter waits in the server
			CountDownLatch holdingB = new CountDownLatch(1);
			CountDownLatch releaseB = new CountDownLatch(1);
			Future<Boolean> nestedUnderB = executor.submit(() -> {
				try (LockHandle lock = four.acquire(b)) {
					holdingB.countDown();
					releaseB.await();
					// the fourth connection: still free, since B's waiter did not take it
					try (LockHandle nested = four.acquire(this.resource + "-c")) {
						return nested.isHeld();
					}
				}
			});
			assertThat(holdingB.await(10, TimeUnit.SECONDS)).isTrue();
			Future<Long> waiterB = waiterInJvm(executor, four, b);
			assertThat(capped.connectionsInUse()).as("B's waiter waits in the JVM").isEqualTo(3);
			assertThat(waitersInDatabase(b)).isZero();
			releaseB.countDown();
			assertThat(nestedUnderB.get(10, TimeUnit.SECONDS)).as("no LockLimitExceededException").isTrue();
			assertThat(waiterB.get(10, TimeUnit.SECONDS)).isPositive();
			holdsA.close();
			assertThat(waiterA.get(10, TimeUnit.SECONDS)).isGreaterThan(holdsA.fencingToken());
		}
		finally {
			executor.shutdownNow();
		}
		assertThat(capped.connectionsInUse()).isZero();
		assertThat(four.introspection().localResourceCount()).isZero();
	}

	/**
	 * At a {@code distributed-lock.pessimistic.max-connections} of 5 (the default without HikariCP; with it, the cap is
	 * derived from the pool's size, 8 for HikariCP's default of 10): the first hot resource's
	 * next thread waits in the server (2 of 5 connections then in use), the second hot resource's next thread waits in
	 * the JVM (3 in use, fewer than half free), and holders of two more resources still get the last two connections.
	 */
	@Test
	void atTheDefaultCapTheSecondHotResourcesWaiterWaitsInTheJvmAndOtherResourcesStillGetConnections()
			throws Exception {
		int cap = 5; // the auto-configuration's cap for a lock pool that is not HikariCP (LockPoolChecksTests)
		PessimisticLockProvider capped = cappedProvider(cap);
		LockTemplate five = node(capped);
		String a = this.resource + "-a";
		String b = this.resource + "-b";
		ExecutorService executor = Executors.newFixedThreadPool(2);
		try {
			LockHandle holdsA = five.acquire(a);
			Future<Long> waiterA = executor.submit(() -> {
				try (LockHandle lock = five.acquire(a)) {
					return lock.fencingToken();
				}
			});
			awaitWaitersInDatabase(a, 1);
			LockHandle holdsB = five.acquire(b);
			Future<Long> waiterB = waiterInJvm(executor, five, b);
			assertThat(capped.connectionsInUse()).as("B's waiter waits in the JVM").isEqualTo(3);
			assertThat(waitersInDatabase(b)).isZero();
			try (LockHandle c = five.acquire(this.resource + "-c"); LockHandle d = five.acquire(this.resource + "-d")) {
				assertThat(capped.connectionsInUse()).isEqualTo(cap);
			}
			holdsB.close();
			assertThat(waiterB.get(10, TimeUnit.SECONDS)).isGreaterThan(holdsB.fencingToken());
			holdsA.close();
			assertThat(waiterA.get(10, TimeUnit.SECONDS)).isGreaterThan(holdsA.fencingToken());
		}
		finally {
			executor.shutdownNow();
		}
		assertThat(capped.connectionsInUse()).isZero();
		assertThat(five.introspection().localResourceCount()).isZero();
	}

	@Test
	void leaseCallersOfTheSameResourceInTheSameJvmStillTakeTurns() throws Exception {
		Sections sections = new Sections();
		AtomicInteger turn = new AtomicInteger();
		LockOptions lease = LockOptions.defaults().withMode(LockMode.LEASE);
		runThreads(() -> {
			if (turn.incrementAndGet() % 2 == 0) {
				this.node.executeWithoutResult(this.resource, lease, (lock) -> sections.run(-1));
			}
			else {
				try (LockHandle lock = this.node.acquire(this.resource)) {
					sections.run(-1);
				}
			}
		}, sections);
	}

	private void runThreads(Section section, Sections sections) throws Exception {
		ExecutorService executor = Executors.newFixedThreadPool(THREADS);
		CountDownLatch start = new CountDownLatch(1);
		List<Future<?>> futures = new ArrayList<>();
		try {
			for (int t = 0; t < THREADS; t++) {
				futures.add(executor.submit(() -> {
					start.await();
					for (int i = 0; i < SECTIONS_PER_THREAD; i++) {
						section.run();
					}
					return null;
				}));
			}
			start.countDown();
			for (Future<?> future : futures) {
				future.get(60, TimeUnit.SECONDS);
			}
		}
		finally {
			executor.shutdownNow();
		}
		assertThat(sections.count()).isEqualTo(THREADS * SECTIONS_PER_THREAD);
		assertThat(sections.overlaps()).as("sections that found another one inside").isZero();
		List<Long> tokens = sections.tokens();
		if (!tokens.contains(-1L)) {
			List<Long> sorted = new ArrayList<>(tokens);
			Collections.sort(sorted);
			assertThat(tokens).as("tokens in the order of the holds").isEqualTo(sorted).doesNotHaveDuplicates();
		}
		assertThat(this.node.introspection().localResourceCount()).as("no local state left").isZero();
		assertThat(this.node.introspection().localHolds()).isEmpty();
		assertThat(this.stopped.get()).as("hold observations stopped").isEqualTo(this.started.get())
			.isEqualTo(THREADS * SECTIONS_PER_THREAD);
	}

	private PessimisticLockProvider cappedProvider(int maxConnections) {
		return new PessimisticLockProvider(this.pool, LockNodes.TABLE, LockNodes.dialect(this.pool),
				new DataSourceTransactionManager(this.pool), Duration.ofSeconds(5),
				new Backoff(Duration.ofMillis(5), Duration.ofMillis(50)), maxConnections);
	}

	private static LockTemplate node(PessimisticLockProvider provider) {
		return new LockTemplate(List.of(provider), LockMode.PESSIMISTIC, Duration.ofSeconds(30), Duration.ofSeconds(30),
				"capped");
	}

	/** Starts a thread that acquires the resource and returns the token, once it waits in the JVM for a local holder. */
	private static Future<Long> waiterInJvm(ExecutorService executor, LockTemplate node, String resource)
			throws InterruptedException {
		java.util.concurrent.atomic.AtomicReference<Thread> waiter = new java.util.concurrent.atomic.AtomicReference<>();
		Future<Long> token = executor.submit(() -> {
			waiter.set(Thread.currentThread());
			try (LockHandle lock = node.acquire(resource)) {
				return lock.fencingToken();
			}
		});
		awaitWaitingInJvm(waiter);
		return token;
	}

	/**
	 * Waits until the thread waits in the JVM for a local holder's release ({@code LockTemplate.awaitRelease}), the
	 * path taken when the provider cannot spare a connection.
	 */
	private static void awaitWaitingInJvm(java.util.concurrent.atomic.AtomicReference<Thread> thread)
			throws InterruptedException {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
		while (thread.get() == null || java.util.Arrays.stream(thread.get().getStackTrace())
			.noneMatch((frame) -> frame.getMethodName().equals("awaitRelease"))) {
			assertThat(System.nanoTime() - deadline).as("waited for the thread to wait in the JVM").isNegative();
			Thread.sleep(5);
		}
	}

	private void awaitWaitersInDatabase(int count) throws InterruptedException {
		awaitWaitersInDatabase(this.resource, count);
	}

	private void awaitWaitersInDatabase(String resource, int count) throws InterruptedException {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
		while (waitersInDatabase(resource) < count) {
			assertThat(System.nanoTime() - deadline).as("waited for %d waiters in the server", count).isNegative();
			Thread.sleep(5);
		}
	}

	/**
	 * Kills the session whose transaction holds the row lock and is idle (the holder's own connection; the waiter's
	 * transaction is in LOCK WAIT), as a dropped connection or a failover would.
	 */
	private void killConnectionHoldingTheRow() {
		org.springframework.jdbc.core.JdbcTemplate jdbc = new org.springframework.jdbc.core.JdbcTemplate(this.pool);
		List<Long> holders = jdbc.queryForList("SELECT trx_mysql_thread_id FROM information_schema.INNODB_TRX"
				+ " WHERE trx_state = 'RUNNING' AND trx_query IS NULL AND trx_rows_locked > 0"
				// only sessions on this test's database: other test runs may share the server
				+ " AND trx_mysql_thread_id IN (SELECT ID FROM information_schema.PROCESSLIST WHERE DB = DATABASE())",
				Long.class);
		assertThat(holders).as("the holder's idle transaction").hasSize(1);
		jdbc.execute("KILL " + holders.get(0));
	}

	private void awaitConnections(int count) throws InterruptedException {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
		while (this.provider.connectionsInUse() < count) {
			assertThat(System.nanoTime() - deadline).as("waited for %d lock connections", count).isNegative();
			Thread.sleep(5);
		}
		Thread.sleep(50); // the waiter's statement reaches the server's lock queue
	}

	@FunctionalInterface
	private interface Section {

		void run() throws Exception;

	}

	/** Counts sections, the ones that found another section inside, and the tokens in the order of entry. */
	private static final class Sections {

		private final AtomicInteger inside = new AtomicInteger();

		private final AtomicInteger overlaps = new AtomicInteger();

		private final List<Long> tokens = Collections.synchronizedList(new ArrayList<>());

		void run(long token) {
			if (this.inside.incrementAndGet() != 1) {
				this.overlaps.incrementAndGet();
			}
			this.tokens.add(token);
			try {
				Thread.sleep(1);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
			this.inside.decrementAndGet();
		}

		int count() {
			return this.tokens.size();
		}

		int overlaps() {
			return this.overlaps.get();
		}

		List<Long> tokens() {
			return new ArrayList<>(this.tokens);
		}

	}

}
