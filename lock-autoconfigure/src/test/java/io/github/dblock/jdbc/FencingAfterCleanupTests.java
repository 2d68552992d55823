package io.github.dblock.jdbc;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockTemplate;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.test.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 29, part 4: fencing tokens of a resource keep increasing when LEASE takes come faster than one per
 * millisecond (each take reserves a block of 1,024 tokens for the in-JVM hand-off), across the cleanup's deletion and
 * re-creation of the row, and for PESSIMISTIC holders that die before their commit.
 */
class FencingAfterCleanupTests {

	/** The cleanup's retention here: short, so that a test can wait for it (the cleaner accepts down to 1 s). */
	private static final Duration RETENTION = Duration.ofSeconds(1);

	/**
	 * How long the fast takes run before the cleanup: at the 1,667 takes a second measured in the issue, the old code
	 * left the counter 2.8 s ahead of the clock, beyond the retention. (Below 977 takes a second, as on a busy
	 * machine, no counter runs ahead; the deterministic case is {@link #theCleanupKeepsARowWhoseTokenIsAheadOfTheClockUntilTheClockHasPassedItByTheRetention}.)
	 */
	private static final Duration FAST_TAKES = Duration.ofSeconds(4);

	/** The same before a PESSIMISTIC holder: more than 100 ms ahead sent it to the counter on the old code. */
	private static final Duration FAST_TAKES_BEFORE_PESSIMISTIC = Duration.ofSeconds(2);

	private static HikariDataSource pool;

	private static JdbcTemplate jdbc;

	@BeforeAll
	static void setUp() {
		pool = TestDatabase.get().newDataSource(8);
		LockNodes.migrateOnce(pool);
		jdbc = new JdbcTemplate(pool);
	}

	@AfterAll
	static void tearDown() {
		pool.close();
	}

	private static LockRequest explicit(String resource) {
		return new LockRequest(resource, Duration.ofSeconds(30), false, Duration.ZERO, System.nanoTime(),
				"fencing-cleanup-test");
	}

	/**
	 * One thread takes and releases the LEASE lock of {@code resource} as fast as it can for {@code duration}.
	 * @return the largest fencing token handed out
	 */
	private static long takeFast(LeaseLockProvider provider, String resource, Duration duration)
			throws InterruptedException {
		long largest = 0;
		int takes = 0;
		long until = System.nanoTime() + duration.toNanos();
		while (System.nanoTime() - until < 0) {
			HeldLock lock = provider.acquire(explicit(resource)).lock();
			assertThat(lock).as("an uncontended take").isNotNull();
			largest = Math.max(largest, lock.fencingToken());
			assertThat(lock.release()).isTrue();
			takes++;
		}
		System.out.println("[fencing] " + takes + " takes in " + duration.toMillis() + " ms; stored token ahead of the server clock by " + aheadMicros(resource) + " µs");
		return largest;
	}

	private static long serverMicros() {
		return jdbc.queryForObject("SELECT " + LockTableSql.SERVER_MICROS, Long.class);
	}

	/** How far the row's stored token is ahead of the server clock, in µs (negative: behind). */
	private static long aheadMicros(String resource) {
		return jdbc.queryForObject("SELECT fencing_token - " + LockTableSql.SERVER_MICROS
				+ " FROM distributed_lock WHERE resource = ?", Long.class, (Object) LockRows.bytes(resource));
	}

	private static boolean rowExists(String resource) {
		return jdbc.queryForObject("SELECT COUNT(*) FROM distributed_lock WHERE resource = ?", Integer.class,
				(Object) LockRows.bytes(resource)) == 1;
	}

	private static LeaseLockProvider leaseProvider() {
		return (LeaseLockProvider) LockNodes.provider(LockMode.LEASE, pool);
	}

	private static LockTableCleaner cleaner() {
		return new LockTableCleaner(pool, LockNodes.TABLE, RETENTION, 100, Duration.ofSeconds(5));
	}

	/**
	 * Runs the cleanup every 100 ms until it has deleted the row of {@code resource}; the row must go within
	 * {@code patience} (its lease ended when it was released, so once the retention has passed it is stale).
	 */
	private static void cleanUntilDeleted(String resource, Duration patience) throws InterruptedException {
		LockTableCleaner cleaner = cleaner();
		long until = System.nanoTime() + patience.toNanos();
		while (rowExists(resource)) {
			assertThat(System.nanoTime() - until).as("the stale row of '%s' deleted by the cleanup within %s",
					resource, patience).isNegative();
			Thread.sleep(100);
			cleaner.deleteExpired();
		}
	}

	/** The fencing token of one acquisition of {@code resource} in {@code mode} by a new node. */
	private static long nextToken(LockMode mode, String resource) {
		LockTemplate node = LockNodes.node(mode, "after-cleanup", pool);
		if (mode == LockMode.OPTIMISTIC) {
			return node.execute(resource, (lock) -> lock.fencingToken());
		}
		try (LockHandle lock = node.acquire(resource)) {
			return lock.fencingToken();
		}
	}

	@ParameterizedTest
	@EnumSource(LockMode.class)
	void tokensKeepIncreasingWhenTheCleanupDeletesARowTakenFasterThanTheClockAndItIsTakenAgain(LockMode next)
			throws Exception {
		String resource = "fencing-cleanup-" + next + "-" + UUID.randomUUID();
		LeaseLockProvider provider = leaseProvider();
		long largest;
		try {
			largest = takeFast(provider, resource, FAST_TAKES);
		}
		finally {
			provider.close();
		}
		cleanUntilDeleted(resource, Duration.ofSeconds(30));
		long token = nextToken(next, resource);
		assertThat(token).as("the first %s token of the re-created row, after every token the deleted row handed out",
				next).isGreaterThan(largest);
	}

	@Test
	void theCleanupKeepsARowWhoseTokenIsAheadOfTheClockUntilTheClockHasPassedItByTheRetention() throws Exception {
		String resource = "fencing-cleanup-ahead-" + UUID.randomUUID();
		LeaseLockProvider provider = leaseProvider();
		HeldLock lock = provider.acquire(explicit(resource)).lock();
		assertThat(lock.release()).isTrue();
		provider.close();
		// a counter ahead of the clock, as an earlier version's fast LEASE takes left it (or a clock step back)
		long ahead = serverMicros() + TimeUnit.SECONDS.toMicros(3);
		jdbc.update("UPDATE distributed_lock SET fencing_token = ? WHERE resource = ?", ahead,
				LockRows.bytes(resource));
		Thread.sleep(RETENTION.toMillis() + 500); // its lease ended more than the retention ago
		cleaner().deleteExpired();
		assertThat(rowExists(resource)).as("a row whose token the server clock has not passed by the retention")
			.isTrue();
		cleanUntilDeleted(resource, Duration.ofSeconds(30));
		assertThat(serverMicros()).as("deleted only once the clock passed the token by the retention")
			.isGreaterThan(ahead + RETENTION.toNanos() / 1_000);
		assertThat(nextToken(LockMode.LEASE, resource)).isGreaterThan(ahead);
	}

	/**
	 * PESSIMISTIC's guarantee for holders that die before their commit (their token write rolls back with them) rests on
	 * the clock: the next holder's token comes from a later clock reading. Fast LEASE takes on the same resource must
	 * not leave the counter so far ahead of the clock that a PESSIMISTIC holder's token comes from the counter
	 * instead, where the next holder would be handed the same token again.
	 */
	@ParameterizedTest
	@EnumSource(PessimisticLockProvider.Fencing.class)
	void afterFastLeaseTakesAPessimisticHolderWhoseTransactionRollsBackIsFollowedByAGreaterToken(
			PessimisticLockProvider.Fencing fencing) throws Exception {
		String resource = "fencing-fast-then-pessimistic-" + fencing + "-" + UUID.randomUUID();
		LeaseLockProvider lease = leaseProvider();
		long largest;
		try {
			largest = takeFast(lease, resource, FAST_TAKES_BEFORE_PESSIMISTIC);
		}
		finally {
			lease.close();
		}
		PessimisticLockProvider provider = (PessimisticLockProvider) LockNodes.provider(LockMode.PESSIMISTIC, pool);
		provider.setFencing(fencing);
		LockTemplate node = LockNodes.node(provider, "pessimistic-after-fast-takes");
		TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(pool));
		// a holder whose transaction ends without its commit (as a holder that dies): its token write is rolled back
		long dead = transactions.execute((status) -> {
			status.setRollbackOnly();
			try (LockHandle lock = node.acquire(resource)) {
				return lock.fencingToken();
			}
		});
		assertThat(dead).as("above every LEASE token").isGreaterThan(largest);
		long next = transactions.execute((status) -> {
			try (LockHandle lock = node.acquire(resource)) {
				return lock.fencingToken();
			}
		});
		assertThat(next).as("the token after a holder whose transaction rolled back").isGreaterThan(dead);
	}

}
