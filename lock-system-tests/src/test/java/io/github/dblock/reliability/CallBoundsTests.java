package io.github.dblock.reliability;

import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;

import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.HikariPoolMXBean;
import io.github.dblock.LockLostException;
import io.github.dblock.LockMode;
import io.github.dblock.LockNotAcquiredException;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.LockType;
import io.github.dblock.idempotency.IdempotencyProvider;
import io.github.dblock.jdbc.lease.IdempotencyStore;
import io.github.dblock.jdbc.lease.JdbcSemaphoreProvider;
import io.github.dblock.jdbc.lease.LeaseLockProvider;
import io.github.dblock.jdbc.pessimistic.PessimisticLockProvider;
import io.github.dblock.semaphore.PermitNotAcquiredException;
import io.github.dblock.semaphore.SemaphoreOptions;
import io.github.dblock.semaphore.SemaphoreTemplate;
import io.github.dblock.test.FaultProxy;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import io.github.dblock.wait.Backoff;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * Every call ends within its documented bound ({@code docs/reference/limits.md}), measured from the call's start,
 * when the one connection of the node's pool comes free late in the call and the network is silent from that moment
 * on (a blackhole: no RST, nothing answers, new connections hang too): the pool wait and the reply must share one
 * deadline, fixed when the call starts. The node's pool goes through a {@link FaultProxy} on loopback and has one
 * connection, which the test holds until {@link #handOverIntoSilence} gives it back.
 * <p>
 * The bounds, with the statement timeout {@link #STATEMENT_TIMEOUT}: acquisition (acquire, a permit, an idempotency
 * claim) the wait time plus the statement timeout plus 2 s; a release (close, an idempotency outcome) and a
 * renewal the statement timeout plus 2 s. The connection is handed over 300 ms before the pool wait the bound leaves
 * (the call's time less the 2 s reply margin) ends, so that the call does get it and then meets the silence. Each
 * case prints its measured duration; the assertions allow {@link #SLACK_MILLIS} for a loaded 2-core machine.
 */
class CallBoundsTests {

	private static final Duration STATEMENT_TIMEOUT = Duration.ofSeconds(2);

	/** The reply margin the library adds to the statement timeout. */
	private static final long MARGIN_MILLIS = 2_000;

	/** Room for a loaded machine (thread wake-ups, the proxy's threads, HikariCP's hand-off). */
	private static final long SLACK_MILLIS = 750;

	/** How much earlier than the end of the pool wait the test hands its connection over. */
	private static final long HAND_OVER_EARLY_MILLIS = 300;

	private FaultProxy proxy;

	private HikariDataSource faulty;

	private HikariDataSource direct;

	private LockTemplate locks;

	private SemaphoreTemplate semaphores;

	private IdempotencyStore idempotency;

	private final List<LeaseLockProvider> renewals = new ArrayList<>();

	private final ExecutorService caller = Executors.newSingleThreadExecutor();

	private final String resource = "bounds-" + UUID.randomUUID();

	/** The kinds of lock a call is about. */
	enum Kind {

		LEASE, PESSIMISTIC, READ, WRITE, SEMAPHORE, IDEMPOTENCY

	}

	static Stream<Arguments> acquisitions() {
		return Stream.of(Kind.values())
			.flatMap((kind) -> Stream.of(Arguments.of(kind, Duration.ZERO), Arguments.of(kind, Duration.ofSeconds(1))));
	}

	static Stream<Kind> releases() {
		return Stream.of(Kind.values());
	}

	/** PESSIMISTIC holds a row lock, which is not renewed. */
	static Stream<Kind> renewals() {
		return Stream.of(Kind.values()).filter((kind) -> kind != Kind.PESSIMISTIC);
	}

	@BeforeEach
	void start() {
		TestDatabase db = TestDatabase.get();
		this.direct = db.newDataSource(2);
		LockNodes.migrateOnce(this.direct);
		this.proxy = FaultProxy.forJdbcUrl(db.jdbcUrl());
		this.faulty = db.newDataSource(1, (config) -> {
			config.setJdbcUrl(this.proxy.jdbcUrl(db.jdbcUrl()));
			config.setValidationTimeout(250); // HikariCP's minimum: its own overrun when it finds a connection dead
			config.setConnectionTimeout(30_000); // HikariCP's default: no call may wait that long
			config.setPoolName("bounds");
		});
		Backoff backoff = new Backoff(Duration.ofMillis(5), Duration.ofMillis(50));
		LeaseLockProvider lease = leaseProvider();
		PessimisticLockProvider pessimistic = new PessimisticLockProvider(this.faulty, LockNodes.TABLE,
				LockNodes.dialect(this.faulty), new DataSourceTransactionManager(this.faulty), STATEMENT_TIMEOUT,
				backoff, 8);
		// default lease 3 s, renewed every second
		this.locks = new LockTemplate(List.of(lease, pessimistic), LockMode.LEASE, Duration.ZERO,
				Duration.ofSeconds(3), "bounds-node");
		JdbcSemaphoreProvider permits = new JdbcSemaphoreProvider(this.faulty, LockNodes.TABLE, STATEMENT_TIMEOUT,
				backoff, leaseProvider(), Map.of(this.resource, 1));
		permits.createConfiguredPools();
		this.semaphores = new SemaphoreTemplate(permits, Duration.ZERO, Duration.ofSeconds(3), "bounds-node");
		this.idempotency = new IdempotencyStore(this.faulty, LockNodes.TABLE, STATEMENT_TIMEOUT, backoff,
				leaseProvider());
	}

	private LeaseLockProvider leaseProvider() {
		LeaseLockProvider provider = new LeaseLockProvider(this.faulty, LockNodes.TABLE,
				LockNodes.dialect(this.faulty), STATEMENT_TIMEOUT, Duration.ofMillis(5), Duration.ofMillis(50));
		this.renewals.add(provider);
		return provider;
	}

	@AfterEach
	void stop() {
		this.caller.shutdownNow();
		this.renewals.forEach(LeaseLockProvider::close);
		this.proxy.close();
		this.faulty.close();
		this.direct.close();
	}

	@ParameterizedTest(name = "{0} acquisition, wait {1}")
	@MethodSource("acquisitions")
	void anAcquisitionEndsWithinItsWaitTimePlusTheStatementTimeoutPlus2s(Kind kind, Duration wait) throws Exception {
		warmUp(kind);
		long bound = wait.toMillis() + STATEMENT_TIMEOUT.toMillis() + MARGIN_MILLIS;
		Connection held = this.faulty.getConnection();
		long start = System.nanoTime();
		Future<Object> call = this.caller.submit(() -> acquire(kind, wait, Duration.ofSeconds(30)));
		// read/write locks and semaphores keep the last second of the deadline for a last look: their pool wait ends
		// that much earlier
		long lastLook = (kind == Kind.READ || kind == Kind.WRITE || kind == Kind.SEMAPHORE) ? 1_000 : 0;
		handOverIntoSilence(held, start, bound - MARGIN_MILLIS - lastLook - HAND_OVER_EARLY_MILLIS);
		Throwable failure = catchThrowable(() -> call.get(60, TimeUnit.SECONDS));
		long millis = millisSince(start);
		System.out.printf("CallBoundsTests: %s acquisition, wait %d ms: %d ms (bound %d ms)%n", kind, wait.toMillis(),
				millis, bound);
		assertThat(failure).as("not acquired: the database went silent").isNotNull();
		assertThat(failure.getCause()).as("not acquired, or the database failure")
			.isInstanceOfAny(LockNotAcquiredException.class, PermitNotAcquiredException.class,
					DataAccessException.class);
		assertThat(millis).as("%s acquisition, wait %s: within the wait time + statement timeout + 2 s", kind, wait)
			.isLessThanOrEqualTo(bound + SLACK_MILLIS);
	}

	/**
	 * A PESSIMISTIC {@code execute} outside a transaction begins each attempt's transaction through the transaction
	 * manager, whose wait for a pooled connection must end within the call's bound too (HikariCP's own wait here: 30 s).
	 * The pool's one connection stays taken for the whole call, as while the server restarts.
	 */
	@ParameterizedTest(name = "PESSIMISTIC execute, wait {0} ms")
	@ValueSource(longs = { 0, 1_000 })
	void aPessimisticExecuteWaitsForAPooledConnectionWithinItsWaitTimePlusTheStatementTimeoutPlus2s(long waitMillis)
			throws Exception {
		warmUp(Kind.PESSIMISTIC);
		long bound = waitMillis + STATEMENT_TIMEOUT.toMillis() + MARGIN_MILLIS;
		LockOptions options = LockOptions.defaults()
			.withMode(LockMode.PESSIMISTIC)
			.withWaitTime(Duration.ofMillis(waitMillis));
		try (Connection held = this.faulty.getConnection()) {
			long start = System.nanoTime();
			Future<String> call = this.caller.submit(() -> this.locks.execute(this.resource, options, (lock) -> "ran"));
			Throwable failure = catchThrowable(() -> call.get(60, TimeUnit.SECONDS));
			long millis = millisSince(start);
			System.out.printf("CallBoundsTests: PESSIMISTIC execute, wait %d ms: %d ms (bound %d ms)%n", waitMillis,
					millis, bound);
			assertThat(held.isValid(1)).as("the test's connection was held throughout").isTrue();
			assertThat(failure).as("not acquired: no pooled connection came").isNotNull();
			assertThat(failure.getCause()).as("not acquired, naming the lock")
				.isInstanceOf(LockNotAcquiredException.class)
				.hasMessageContaining(this.resource);
			assertThat(millis).as("PESSIMISTIC execute, wait %d ms: within the wait time + statement timeout + 2 s",
					waitMillis)
				.isLessThanOrEqualTo(bound + SLACK_MILLIS);
		}
	}

	@ParameterizedTest(name = "{0} release")
	@MethodSource("releases")
	void aReleaseEndsWithinTheStatementTimeoutPlus2s(Kind kind) throws Exception {
		warmUp(kind);
		Releasable hold = this.caller.submit(() -> acquire(kind, Duration.ZERO, Duration.ofSeconds(30)))
			.get(30, TimeUnit.SECONDS);
		long bound = STATEMENT_TIMEOUT.toMillis() + MARGIN_MILLIS;
		Connection held = (kind != Kind.PESSIMISTIC) ? this.faulty.getConnection() : null;
		long start = System.nanoTime();
		Future<Object> call = this.caller.submit(() -> {
			hold.release();
			return null;
		});
		if (held != null) {
			handOverIntoSilence(held, start, bound - MARGIN_MILLIS - HAND_OVER_EARLY_MILLIS);
		}
		else {
			this.proxy.blackhole(FaultProxy.Direction.BOTH); // the holder's own connection: no pool wait
		}
		Throwable failure = catchThrowable(() -> call.get(60, TimeUnit.SECONDS));
		long millis = millisSince(start);
		System.out.printf("CallBoundsTests: %s release: %d ms (bound %d ms)%n", kind, millis, bound);
		assertThat(failure).as("the release could not reach the database").isNotNull();
		assertThat(failure.getCause()).isInstanceOfAny(DataAccessException.class, LockLostException.class);
		assertThat(millis).as("%s release: within the statement timeout + 2 s", kind)
			.isLessThanOrEqualTo(bound + SLACK_MILLIS);
	}

	@ParameterizedTest(name = "{0} renewal")
	@MethodSource("renewals")
	void aRenewalEndsWithinTheStatementTimeoutPlus2s(Kind kind) throws Exception {
		warmUp(kind);
		this.caller.submit(() -> acquire(kind, Duration.ZERO, null)).get(30, TimeUnit.SECONDS); // lease 3 s, renewed
		long bound = STATEMENT_TIMEOUT.toMillis() + MARGIN_MILLIS;
		Connection held = this.faulty.getConnection();
		HikariPoolMXBean pool = this.faulty.getHikariPoolMXBean();
		awaitCondition("a renewal waits for the pool", 10_000, () -> pool.getThreadsAwaitingConnection() > 0);
		long start = System.nanoTime(); // the renewal began a moment ago
		handOverIntoSilence(held, start, bound - MARGIN_MILLIS - HAND_OVER_EARLY_MILLIS);
		// the renewal ends when its silent connection is given up and evicted
		awaitCondition("the renewal gave its connection up", 30_000, () -> pool.getTotalConnections() == 0);
		long millis = millisSince(start);
		System.out.printf("CallBoundsTests: %s renewal: %d ms (bound %d ms)%n", kind, millis, bound);
		assertThat(millis).as("%s renewal: within the statement timeout + 2 s", kind)
			.isLessThanOrEqualTo(bound + SLACK_MILLIS);
	}

	/** One call of each kind while the network is healthy: the lock rows exist, the pool's connection is open. */
	private void warmUp(Kind kind) throws Exception {
		this.caller.submit(() -> {
			acquire(kind, Duration.ZERO, Duration.ofSeconds(30)).release();
			return null;
		}).get(30, TimeUnit.SECONDS);
		if (kind == Kind.IDEMPOTENCY) {
			this.idempotencyKey = "bounds-" + UUID.randomUUID(); // the warm-up recorded an outcome for the first
		}
	}

	private String idempotencyKey = this.resource;

	/**
	 * Takes the lock of the given kind with the given wait time and lease time ({@code null}: the default lease,
	 * renewed); on the caller thread, which owns the handle.
	 */
	private Releasable acquire(Kind kind, Duration wait, Duration leaseTime) throws Exception {
		LockOptions options = LockOptions.defaults().withWaitTime(wait);
		if (leaseTime != null) {
			options = options.withLeaseTime(leaseTime);
		}
		switch (kind) {
			case LEASE -> {
				return this.locks.acquire(this.resource, options.withMode(LockMode.LEASE))::close;
			}
			case PESSIMISTIC -> {
				return this.locks.acquire(this.resource, options.withMode(LockMode.PESSIMISTIC))::close;
			}
			case READ -> {
				return this.locks.acquire(this.resource, options.withType(LockType.READ))::close;
			}
			case WRITE -> {
				return this.locks.acquire(this.resource, options.withType(LockType.WRITE))::close;
			}
			case SEMAPHORE -> {
				SemaphoreOptions permit = SemaphoreOptions.defaults().withWaitTime(wait);
				return this.semaphores.acquire(this.resource,
						(leaseTime != null) ? permit.withLeaseTime(leaseTime) : permit)::close;
			}
			case IDEMPOTENCY -> {
				IdempotencyProvider.Claimed claimed = this.idempotency.claim(this.idempotencyKey, "bounds-test",
						(leaseTime != null) ? leaseTime : Duration.ofSeconds(3), Duration.ofHours(1),
						System.nanoTime() + wait.toNanos());
				IdempotencyProvider.HeldClaim claim = claimed.claim();
				assertThat(claim).as("claimed (record: %s)", claimed.record()).isNotNull();
				return () -> claim.succeed("\"done\"", String.class.getName(), null);
			}
			default -> throw new IllegalArgumentException(kind.toString());
		}
	}

	/**
	 * Waits until a call waits for the pool's connection, then, {@code afterMillis} after {@code start}, silences the
	 * network in both directions and gives the connection back: the call gets it at once (no validation: it was just
	 * used) and its next statement meets the silence.
	 */
	private void handOverIntoSilence(Connection held, long start, long afterMillis) throws Exception {
		HikariPoolMXBean pool = this.faulty.getHikariPoolMXBean();
		awaitCondition("the call waits for the pool", 10_000, () -> pool.getThreadsAwaitingConnection() > 0);
		long sleep = afterMillis - millisSince(start);
		try (Statement statement = held.createStatement()) {
			statement.execute("SELECT 1");
		}
		if (sleep > 0) {
			Thread.sleep(sleep);
		}
		assertThat(pool.getThreadsAwaitingConnection()).as("the call still waits for the pool after %d ms",
				millisSince(start)).isPositive();
		this.proxy.blackhole(FaultProxy.Direction.BOTH);
		held.close();
	}

	private static void awaitCondition(String what, long timeoutMillis, BooleanSupplier condition)
			throws InterruptedException {
		long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
		while (!condition.getAsBoolean()) {
			assertThat(System.nanoTime() - deadline).as("timed out waiting until %s", what).isNegative();
			Thread.sleep(2);
		}
	}

	private static long millisSince(long start) {
		return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
	}

	/** A hold the caller thread gives back. */
	@FunctionalInterface
	interface Releasable {

		void release() throws Exception;

	}

}
