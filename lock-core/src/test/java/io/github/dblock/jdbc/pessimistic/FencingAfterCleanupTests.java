package io.github.dblock.jdbc.pessimistic;

import io.github.dblock.jdbc.lease.LeaseLockProvider;
import io.github.dblock.jdbc.sql.LockRows;
import io.github.dblock.jdbc.admin.LockTableCleaner;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockTemplate;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.ServerClockControl;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
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
 * <p>
 * The lock statements read a server clock the test controls ({@link ServerClockControl}), so the take rate is chosen
 * by the test, not by the machine: many takes at one frozen server instant are takes infinitely faster than the
 * clock, and the clock then moves on exactly as far as each test says.
 */
class FencingAfterCleanupTests {

	/** The cleanup's retention here (the cleaner accepts down to 1 s). */
	private static final Duration RETENTION = Duration.ofSeconds(1);

	/**
	 * LEASE takes at one frozen server instant before the cleanup: a counter that gained a block (1,024) per take
	 * would end {@value} × 1,024 µs (1.23 s) ahead of the clock, beyond the retention and the
	 * {@link #PAST_THE_RETENTION} by which the clock then passes it; one that gains a token per take, 1.2 ms.
	 */
	private static final int FAST_TAKES = 1_200;

	/** How far the clock passes the retention after the fast takes, before the cleanup runs. */
	private static final Duration PAST_THE_RETENTION = Duration.ofMillis(100);

	/**
	 * LEASE takes at one frozen instant before a PESSIMISTIC holder: a block per take would leave the counter
	 * {@value} × 1,024 µs (205 ms) ahead of the clock, beyond the 100 ms a PESSIMISTIC acquisition waits for the clock
	 * to catch up ({@code PessimisticFencing.MAX_CLOCK_CATCH_UP_MICROS}).
	 */
	private static final int FAST_TAKES_BEFORE_PESSIMISTIC = 200;

	/** Takes in each of the tests of the counter's lead on the clock. */
	private static final int TAKES = 200;

	/** A microsecond, the server clock's resolution. */
	private static final Duration MICROSECOND = Duration.ofNanos(1_000);

	/** For reading rows only; it is never given to code whose statements read the clock. */
	private static HikariDataSource pool;

	private static JdbcTemplate jdbc;

	/** The data source of every lock operation and cleanup: its sessions read the controlled clock. */
	private ServerClockControl clock;

	@BeforeAll
	static void setUp() {
		pool = TestDatabase.get().newDataSource(2);
		LockNodes.migrateOnce(pool);
		jdbc = new JdbcTemplate(pool);
	}

	@AfterAll
	static void tearDown() {
		pool.close();
	}

	@BeforeEach
	void freezeTheClock() {
		this.clock = ServerClockControl.frozenAt(ServerClockControl.aDayBeforeNow(), 8);
	}

	@AfterEach
	void closeTheClock() {
		this.clock.close();
	}

	private static LockRequest explicit(String resource) {
		return new LockRequest(resource, Duration.ofSeconds(30), false, Duration.ZERO, System.nanoTime(),
				"fencing-cleanup-test");
	}

	/**
	 * Takes and releases the LEASE lock of {@code resource} {@code takes} times at the clock's current instant, which
	 * stands still meanwhile.
	 * @return the largest fencing token handed out
	 */
	private long takeAtOneInstant(String resource, int takes) throws InterruptedException {
		long instant = this.clock.micros();
		long largest = 0;
		try (LeaseLockProvider provider = leaseProvider()) {
			for (int i = 0; i < takes; i++) {
				HeldLock lock = provider.acquire(explicit(resource)).lock();
				assertThat(lock).as("an uncontended take").isNotNull();
				largest = Math.max(largest, lock.fencingToken());
				assertThat(lock.release()).isTrue();
			}
		}
		assertThat(this.clock.micros()).as("the clock stood still").isEqualTo(instant);
		return largest;
	}

	private static long storedToken(String resource) {
		return jdbc.queryForObject("SELECT fencing_token FROM distributed_lock WHERE resource = ?", Long.class,
				(Object) LockRows.bytes(resource));
	}

	private static void setStoredToken(String resource, long token) {
		jdbc.update("UPDATE distributed_lock SET fencing_token = ? WHERE resource = ?", token, LockRows.bytes(resource));
	}

	private static boolean rowExists(String resource) {
		return jdbc.queryForObject("SELECT COUNT(*) FROM distributed_lock WHERE resource = ?", Integer.class,
				(Object) LockRows.bytes(resource)) == 1;
	}

	private LeaseLockProvider leaseProvider() {
		return (LeaseLockProvider) LockNodes.provider(LockMode.LEASE, this.clock);
	}

	private LockTableCleaner cleaner() {
		return new LockTableCleaner(this.clock, LockNodes.TABLE, RETENTION, 100, Duration.ofSeconds(5));
	}

	/** Sets the clock to {@code micros} (µs since the epoch), which must not be before it. */
	private void moveClockTo(long micros) {
		assertThat(micros).as("the clock moves forward").isGreaterThanOrEqualTo(this.clock.micros());
		this.clock.advance(Duration.ofNanos(TimeUnit.MICROSECONDS.toNanos(micros - this.clock.micros())));
	}

	/** The fencing token of one acquisition (and release) of {@code resource} in {@code mode} by {@code node}. */
	private static long take(LockTemplate node, LockMode mode, String resource) {
		if (mode == LockMode.OPTIMISTIC) {
			return node.execute(resource, (lock) -> lock.fencingToken());
		}
		try (LockHandle lock = node.acquire(resource)) {
			return lock.fencingToken();
		}
	}

	/** The fencing token of one acquisition of {@code resource} in {@code mode} by a new node. */
	private long nextToken(LockMode mode, String resource) {
		return take(LockNodes.node(mode, "after-cleanup", this.clock), mode, resource);
	}

	/**
	 * Takes at one frozen instant, then the clock passes the row's lease end (its last release) and its tokens by
	 * the retention: the cleanup deletes the row, and the first token of the row created again, in any mode, is
	 * above every token the deleted row handed out.
	 */
	@ParameterizedTest
	@EnumSource(LockMode.class)
	void tokensKeepIncreasingWhenTheCleanupDeletesARowTakenFasterThanTheClockAndItIsTakenAgain(LockMode next)
			throws Exception {
		String resource = "fencing-cleanup-" + next + "-" + UUID.randomUUID();
		long largest = takeAtOneInstant(resource, FAST_TAKES);
		this.clock.advance(RETENTION.plus(PAST_THE_RETENTION));
		this.clock.setTickPerStatement(MICROSECOND);
		cleaner().deleteExpired();
		assertThat(rowExists(resource)).as("the row deleted by the cleanup, its lease and its tokens more than the"
				+ " retention behind the clock").isFalse();
		long token = nextToken(next, resource);
		assertThat(token).as("the first %s token of the re-created row, after every token the deleted row handed out",
				next).isGreaterThan(largest);
	}

	@Test
	void theCleanupKeepsARowWhoseTokenIsAheadOfTheClockUntilTheClockHasPassedItByTheRetention() throws Exception {
		String resource = "fencing-cleanup-ahead-" + UUID.randomUUID();
		takeAtOneInstant(resource, 1);
		// a counter ahead of the clock, as an earlier version's fast LEASE takes left it (or a clock step back)
		long ahead = this.clock.micros() + TimeUnit.SECONDS.toMicros(3);
		setStoredToken(resource, ahead);
		this.clock.advance(RETENTION.plusSeconds(1)); // its lease ended more than the retention ago
		cleaner().deleteExpired();
		assertThat(rowExists(resource)).as("a row whose token is ahead of the clock").isTrue();
		moveClockTo(ahead + RETENTION.toNanos() / 1_000 - 1);
		cleaner().deleteExpired();
		assertThat(rowExists(resource)).as("a row whose token the clock has passed by a microsecond less than the"
				+ " retention").isTrue();
		this.clock.advance(MICROSECOND.multipliedBy(2));
		cleaner().deleteExpired();
		assertThat(rowExists(resource)).as("a row whose token the clock has passed by more than the retention")
			.isFalse();
		this.clock.setTickPerStatement(MICROSECOND);
		assertThat(nextToken(LockMode.LEASE, resource)).isGreaterThan(ahead);
	}

	/**
	 * PESSIMISTIC's guarantee for holders that die before their commit (their token write rolls back with them) rests on
	 * the clock: the next holder's token comes from a later clock reading. Fast LEASE takes on the same resource must
	 * not leave the counter so far ahead of the clock that a PESSIMISTIC holder's token comes from the counter
	 * instead, where the next holder would be handed the same token again. The takes run at one frozen instant; the
	 * PESSIMISTIC holder comes as much later as they take at one per microsecond, the clock's resolution (a real
	 * take needs a round trip to the server, tens of microseconds at least).
	 */
	@ParameterizedTest
	@EnumSource(PessimisticLockProvider.Fencing.class)
	void afterFastLeaseTakesAPessimisticHolderWhoseTransactionRollsBackIsFollowedByAGreaterToken(
			PessimisticLockProvider.Fencing fencing) throws Exception {
		String resource = "fencing-fast-then-pessimistic-" + fencing + "-" + UUID.randomUUID();
		long largest = takeAtOneInstant(resource, FAST_TAKES_BEFORE_PESSIMISTIC);
		this.clock.advance(MICROSECOND.multipliedBy(FAST_TAKES_BEFORE_PESSIMISTIC));
		this.clock.setTickPerStatement(MICROSECOND);
		PessimisticLockProvider provider = (PessimisticLockProvider) LockNodes.provider(LockMode.PESSIMISTIC,
				this.clock);
		provider.setFencing(fencing);
		LockTemplate node = LockNodes.node(provider, "pessimistic-after-fast-takes");
		TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(this.clock));
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

	/**
	 * What PESSIMISTIC's wait for the clock relies on ({@code PessimisticFencing.MAX_CLOCK_CATCH_UP_MICROS}): takes in
	 * any mode keep the counter within about a millisecond of the server clock. At one frozen instant, takes
	 * infinitely faster than the clock, each take moves the counter on by one token, not by a block. (PESSIMISTIC is
	 * not in this test: at a clock that stands still its acquisition waits, holding the row, for the clock to pass the
	 * stored token, and after 100 ms it takes the stored token + 1.)
	 */
	@ParameterizedTest
	@EnumSource(names = { "LEASE", "OPTIMISTIC" })
	void atOneFrozenInstantEachTakeMovesTheCounterOnByOneToken(LockMode mode) {
		String resource = "fencing-frozen-" + mode + "-" + UUID.randomUUID();
		LockTemplate node = LockNodes.node(mode, "frozen", this.clock);
		long instant = this.clock.micros();
		long previous = 0;
		for (int i = 1; i <= TAKES; i++) {
			long token = take(node, mode, resource);
			assertThat(token).as("token #%d", i).isGreaterThan(previous);
			assertThat(storedToken(resource) - instant).as("the counter's lead on the clock after %d takes", i)
				.isLessThanOrEqualTo(i);
			previous = token;
		}
		assertThat(this.clock.micros()).as("the clock stood still").isEqualTo(instant);
	}

	/**
	 * The same at a clock that moves one microsecond per statement (two per LEASE take and release: half a million
	 * takes a second, several hundred times what a server serves): in every mode, every token handed out and the
	 * counter stay within a millisecond of the clock.
	 */
	@ParameterizedTest
	@EnumSource(LockMode.class)
	void atAMicrosecondPerStatementTheCounterStaysWithinAMillisecondOfTheClock(LockMode mode) {
		String resource = "fencing-microsecond-" + mode + "-" + UUID.randomUUID();
		this.clock.setTickPerStatement(MICROSECOND);
		LockTemplate node = LockNodes.node(mode, "microsecond", this.clock);
		long previous = 0;
		for (int i = 1; i <= TAKES; i++) {
			long token = take(node, mode, resource);
			assertThat(token).as("token #%d", i).isGreaterThan(previous);
			assertThat(token - this.clock.micros()).as("token #%d's lead on the clock (µs)", i)
				.isLessThanOrEqualTo(1_000);
			assertThat(storedToken(resource) - this.clock.micros()).as("the counter's lead on the clock after %d takes"
					+ " (µs)", i).isLessThanOrEqualTo(1_000);
			previous = token;
		}
	}

}
