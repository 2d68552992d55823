package io.github.dblock.reliability;

import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockHandle;
import io.github.dblock.LockLostException;
import io.github.dblock.LockMode;
import io.github.dblock.LockNotAcquiredException;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.jdbc.lease.LeaseLockProvider;
import io.github.dblock.jdbc.pessimistic.PessimisticLockProvider;
import io.github.dblock.semaphore.PermitNotAcquiredException;
import io.github.dblock.semaphore.SemaphoreOptions;
import io.github.dblock.semaphore.SemaphoreTemplate;
import io.github.dblock.test.FaultProxy;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.nodes.SemaphoreNodes;
import io.github.dblock.test.TestDatabase;
import io.github.dblock.wait.Backoff;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * Lock calls keep their time bounds whatever the network does: the node's JDBC traffic goes through a
 * {@link FaultProxy} on loopback that holds replies, blackholes connections or delays packets without closing any
 * socket, as a dead peer or a dropped route would. Before the client-side network timeout, each of these calls waited
 * until the reply came (with a real dead peer: until TCP keepalive, about two hours).
 * <p>
 * Statement timeout 2 s, so every reply is awaited at most 2 s + 2 s; the bounds asserted add room for a loaded
 * 2-core machine.
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class NetworkFaultTests {

	private static final Duration STATEMENT_TIMEOUT = Duration.ofSeconds(2);

	/** The statement timeout plus the network margin, plus room for a loaded machine. */
	private static final long ONE_STATEMENT_MILLIS = 2_000 + 2_000 + 2_000;

	private FaultProxy proxy;

	private HikariDataSource faulty;

	private HikariDataSource direct;

	private LockTemplate node;

	private LockTemplate healthyNode;

	private final ExecutorService caller = Executors.newSingleThreadExecutor();

	private final String resource = "network-" + UUID.randomUUID();

	@BeforeEach
	void start() {
		TestDatabase db = TestDatabase.get();
		this.direct = db.newDataSource(4);
		LockNodes.migrateOnce(this.direct);
		this.proxy = FaultProxy.forJdbcUrl(db.jdbcUrl());
		this.faulty = db.newDataSource(6, (config) -> {
			config.setJdbcUrl(this.proxy.jdbcUrl(db.jdbcUrl()));
			config.setValidationTimeout(1_000);
			config.setConnectionTimeout(30_000); // HikariCP's default: the lock calls must not wait that long
			config.setPoolName("faulty");
		});
		this.node = template(this.faulty, "faulty-node");
		this.healthyNode = template(this.direct, "healthy-node");
	}

	private static LockTemplate template(HikariDataSource dataSource, String name) {
		Backoff backoff = new Backoff(Duration.ofMillis(5), Duration.ofMillis(50));
		LeaseLockProvider lease = new LeaseLockProvider(dataSource, LockNodes.TABLE, LockNodes.dialect(dataSource),
				STATEMENT_TIMEOUT, backoff.initial(), backoff.max());
		PessimisticLockProvider pessimistic = new PessimisticLockProvider(dataSource, LockNodes.TABLE,
				LockNodes.dialect(dataSource), new DataSourceTransactionManager(dataSource), STATEMENT_TIMEOUT, backoff, 8);
		// default lease 3 s, renewed every second
		return new LockTemplate(List.of(lease, pessimistic), LockMode.LEASE, Duration.ZERO, Duration.ofSeconds(3), name);
	}

	@AfterEach
	void stop() {
		this.caller.shutdownNow();
		this.proxy.close();
		this.faulty.close();
		this.direct.close();
	}

	private static LockOptions options(LockMode mode, Duration waitTime) {
		return LockOptions.defaults().withMode(mode).withWaitTime(waitTime);
	}

	/** Runs on the caller thread, so that the handle's owner thread is that one; fails the test after 60 s. */
	private <T> T call(java.util.concurrent.Callable<T> action) throws Exception {
		Future<T> future = this.caller.submit(action);
		try {
			return future.get(60, TimeUnit.SECONDS);
		}
		catch (java.util.concurrent.ExecutionException ex) {
			if (ex.getCause() instanceof Exception cause) {
				throw cause;
			}
			throw ex;
		}
	}

	private static long millisSince(long start) {
		return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
	}

	@Test
	void aTakeWhoseReplyNeverComesIsRetriedOnANewConnectionAndFindsItsOwnLease() throws Exception {
		CountDownLatch trapped = this.proxy.holdReplyToNext(FaultProxy.isQueryContaining("SET owner_token"));
		long start = System.nanoTime();
		LockHandle lock = call(() -> this.node.acquire(this.resource, options(LockMode.LEASE, Duration.ofSeconds(10))));
		long millis = millisSince(start);
		assertThat(trapped.getCount()).as("the take reached the server and its reply was held").isZero();
		assertThat(millis).as("the silent connection was given up after the network timeout")
			.isBetween(3_000L, ONE_STATEMENT_MILLIS + 2_000);
		assertThat(lock.isHeld()).isTrue();
		assertThat(this.healthyNode.tryAcquire(this.resource)).as("the lease is this node's").isEmpty();
		call(() -> {
			lock.close();
			return null;
		});
		assertThat(this.healthyNode.tryAcquire(this.resource)).as("released").isPresent().get()
			.satisfies(LockHandle::close);
	}

	@Test
	void aRenewalStuckOnASilentConnectionHidesNoLossAndDelaysNoRelease() throws Exception {
		LockHandle lock = call(() -> this.node.acquire(this.resource));
		CountDownLatch lost = new CountDownLatch(1);
		long[] lostAt = new long[1];
		lock.onLost((handle) -> {
			lostAt[0] = System.nanoTime();
			lost.countDown();
		});
		Thread.sleep(1_500); // a renewal or two got through
		long silentFrom = System.nanoTime();
		this.proxy.blackhole(FaultProxy.Direction.BOTH);
		assertThat(lost.await(15, TimeUnit.SECONDS)).as("onLost fired while the renewal still waits").isTrue();
		assertThat(TimeUnit.NANOSECONDS.toMillis(lostAt[0] - silentFrom)).as("within one lease of the silence")
			.isLessThanOrEqualTo(3_000 + 1_000);
		assertThat(lock.isHeld()).isFalse();
		long closeStart = System.nanoTime();
		Throwable closed = catchThrowable(() -> call(() -> {
			lock.close();
			return null;
		}));
		assertThat(closed).isInstanceOf(LockLostException.class);
		assertThat(millisSince(closeStart)).as("close() does not wait for the stuck renewal").isLessThan(1_000);
		// the healthy node gets the lock once the lease has run out on the server
		try (LockHandle next = this.healthyNode.acquire(this.resource, options(LockMode.LEASE, Duration.ofSeconds(10)))) {
			assertThat(next.fencingToken()).isGreaterThan(lock.fencingToken());
		}
	}

	@Test
	void aReleaseWhoseReplyNeverComesEndsWithinOneStatementTimeout() throws Exception {
		LockHandle lock = call(() -> this.node.acquire(this.resource,
				options(LockMode.LEASE, Duration.ZERO).withLeaseTime(Duration.ofSeconds(30))));
		this.proxy.holdReplyToNext(FaultProxy.isQueryContaining("waiting_owner = NULL"));
		long start = System.nanoTime();
		Throwable failure = catchThrowable(() -> call(() -> {
			lock.close();
			return null;
		}));
		long millis = millisSince(start);
		// the release committed but its reply never came: a retry within the lease finds the row no longer ours and
		// counts it released; either way close() returns within one statement timeout and the retry budget
		assertThat(millis).isLessThan(ONE_STATEMENT_MILLIS + 2_000 + 2_000);
		assertThat(failure).satisfiesAnyOf((f) -> assertThat(f).isNull(),
				(f) -> assertThat(f).isInstanceOf(DataAccessException.class));
		try (LockHandle next = this.healthyNode.acquire(this.resource, options(LockMode.LEASE, Duration.ZERO))) {
			assertThat(next.fencingToken()).as("the release had committed").isGreaterThan(lock.fencingToken());
		}
	}

	@ParameterizedTest
	@EnumSource(value = LockMode.class, names = { "LEASE", "PESSIMISTIC" })
	void aBlackholedDatabaseEndsTheWaitWithinTheWaitTimeAndOneStatementTimeout(LockMode mode) throws Exception {
		call(() -> {
			this.node.acquire(this.resource, options(mode, Duration.ZERO)).close(); // pool warmed
			return null;
		});
		this.proxy.blackhole(FaultProxy.Direction.BOTH);
		long start = System.nanoTime();
		Throwable failure = catchThrowable(
				() -> call(() -> this.node.acquire(this.resource, options(mode, Duration.ofSeconds(2)))));
		long millis = millisSince(start);
		assertThat(failure).as("not acquired, or the database failure once the wait time ended")
			.isInstanceOfAny(LockNotAcquiredException.class, DataAccessException.class);
		assertThat(millis).as("wait time 2 s + one statement timeout + margin").isLessThan(2_000 + ONE_STATEMENT_MILLIS);
	}

	@ParameterizedTest
	@EnumSource(value = LockMode.class, names = { "LEASE", "PESSIMISTIC" })
	void aCallThatFindsThePoolExhaustedWaitsItsWaitTimeNotThePoolsConnectionTimeout(LockMode mode) throws Exception {
		this.faulty.setMaximumPoolSize(1);
		try (Connection taken = this.faulty.getConnection()) {
			long start = System.nanoTime();
			Throwable failure = catchThrowable(
					() -> call(() -> this.node.acquire(this.resource, options(mode, Duration.ofSeconds(1)))));
			long millis = millisSince(start);
			assertThat(failure).isInstanceOf(LockNotAcquiredException.class)
				.hasMessageContaining("did not answer in time")
				.cause().hasMessageContaining("Connection is not available");
			assertThat(millis).as("about the wait time, not HikariCP's 30 s").isLessThan(1_000 + ONE_STATEMENT_MILLIS);
		}
	}

	@Test
	void readWriteLocksAndSemaphoresThatFindThePoolExhaustedAreNotAcquiredWithTheCause() throws Exception {
		SemaphoreTemplate semaphores = SemaphoreNodes.node("faulty-semaphores", this.faulty, Duration.ofSeconds(30),
				java.util.Map.of(this.resource, 2));
		this.faulty.setMaximumPoolSize(1);
		try (Connection taken = this.faulty.getConnection()) {
			long start = System.nanoTime();
			Throwable write = catchThrowable(() -> call(() -> this.node.acquire(this.resource,
					options(LockMode.LEASE, Duration.ofSeconds(1)).withType(io.github.dblock.LockType.WRITE))));
			assertThat(write).isInstanceOf(LockNotAcquiredException.class)
				.cause().hasMessageContaining("Connection is not available");
			assertThat(millisSince(start)).isLessThan(1_000 + ONE_STATEMENT_MILLIS);
			start = System.nanoTime();
			Throwable permit = catchThrowable(() -> call(() -> semaphores.acquire(this.resource,
					SemaphoreOptions.defaults().withWaitTime(Duration.ofSeconds(1)))));
			assertThat(permit).isInstanceOf(PermitNotAcquiredException.class)
				.cause().hasMessageContaining("Connection is not available");
			assertThat(millisSince(start)).isLessThan(1_000 + ONE_STATEMENT_MILLIS);
		}
	}

	@Test
	void aSlowNetworkEndsTheWaitAsNotAcquiredOrAcquiredNeverAsADatabaseError() throws Exception {
		call(() -> {
			this.node.acquire(this.resource, options(LockMode.LEASE, Duration.ZERO)).close();
			return null;
		});
		try (LockHandle holder = this.healthyNode.acquire(this.resource,
				options(LockMode.LEASE, Duration.ZERO).withLeaseTime(Duration.ofSeconds(30)))) {
			this.proxy.delay(Duration.ofMillis(1_500));
			long start = System.nanoTime();
			Throwable failure = catchThrowable(
					() -> call(() -> this.node.acquire(this.resource, options(LockMode.LEASE, Duration.ofSeconds(2)))));
			assertThat(failure).isInstanceOf(LockNotAcquiredException.class);
			assertThat(millisSince(start)).isLessThan(2_000 + ONE_STATEMENT_MILLIS);
		}
		this.proxy.passThrough();
	}

	@Test
	void pessimisticCommitWhoseReplyNeverComesEndsWithinOneStatementTimeout() throws Exception {
		LockHandle lock = call(() -> this.node.acquire(this.resource, options(LockMode.PESSIMISTIC, Duration.ZERO)));
		CountDownLatch trapped = this.proxy.holdReplyToNext(FaultProxy.isQuery("COMMIT"));
		long start = System.nanoTime();
		Throwable failure = catchThrowable(() -> call(() -> {
			lock.close();
			return null;
		}));
		assertThat(trapped.getCount()).isZero();
		assertThat(millisSince(start)).as("the COMMIT's reply was awaited one statement timeout plus the margin")
			.isLessThan(ONE_STATEMENT_MILLIS);
		assertThat(failure).as("its outcome is unknown: reported lost").isInstanceOf(LockLostException.class);
		try (LockHandle next = this.healthyNode.acquire(this.resource, options(LockMode.PESSIMISTIC, Duration.ofSeconds(5)))) {
			assertThat(next.fencingToken()).isGreaterThan(lock.fencingToken());
		}
	}

	@Test
	void pessimisticLockingStatementWhoseReplyNeverComesIsRetriedWithinTheBound() throws Exception {
		CountDownLatch trapped = this.proxy.holdReplyToNext(FaultProxy.isQueryContaining("FOR UPDATE"));
		long start = System.nanoTime();
		Throwable failure = catchThrowable(() -> call(() -> {
			try (LockHandle lock = this.node.acquire(this.resource, options(LockMode.PESSIMISTIC, Duration.ofSeconds(3)))) {
				assertThat(lock.isHeld()).isTrue();
			}
			return null;
		}));
		long millis = millisSince(start);
		assertThat(trapped.getCount()).isZero();
		// the first attempt's connection is given up after its bound (wait + statement timeout + margin), and its
		// transaction dies with it on the server once the proxy closes; the call ends within that bound either way
		assertThat(millis).isLessThan(3_000 + ONE_STATEMENT_MILLIS + 2_000);
		assertThat(failure).satisfiesAnyOf((f) -> assertThat(f).isNull(),
				(f) -> assertThat(f).isInstanceOfAny(LockNotAcquiredException.class, DataAccessException.class));
		this.proxy.reset(); // the server side of the held connection goes too: its transaction ends
		try (LockHandle next = this.healthyNode.acquire(this.resource, options(LockMode.PESSIMISTIC, Duration.ofSeconds(5)))) {
			assertThat(next.isHeld()).isTrue();
		}
	}

	@Test
	void pessimisticIdleTimeoutFreesTheRowOfAHolderWhoseConnectionWentSilent() throws Exception {
		Backoff backoff = new Backoff(Duration.ofMillis(5), Duration.ofMillis(50));
		PessimisticLockProvider bounded = new PessimisticLockProvider(this.faulty, LockNodes.TABLE,
				LockNodes.dialect(this.faulty), new DataSourceTransactionManager(this.faulty), STATEMENT_TIMEOUT, backoff, 8);
		bounded.setIdleTimeout(Duration.ofSeconds(2));
		LockTemplate silentNode = new LockTemplate(List.of(bounded), LockMode.PESSIMISTIC, Duration.ZERO,
				Duration.ofSeconds(3), "silent-node");
		LockHandle lock = call(() -> silentNode.acquire(this.resource, options(LockMode.PESSIMISTIC, Duration.ZERO)));
		// the holder's connection goes silent without closing: without the bound the server would keep its
		// transaction, and the row lock, for wait_timeout (8 h by default)
		this.proxy.blackhole(FaultProxy.Direction.BOTH);
		long start = System.nanoTime();
		try (LockHandle next = this.healthyNode.acquire(this.resource, options(LockMode.PESSIMISTIC, Duration.ofSeconds(20)))) {
			assertThat(next.fencingToken()).isGreaterThan(lock.fencingToken());
		}
		assertThat(millisSince(start)).as("freed about 2 s after the holder went silent").isLessThan(2_000 + 3_000);
		this.proxy.passThrough();
		Throwable closed = catchThrowable(() -> call(() -> {
			lock.close();
			return null;
		}));
		assertThat(closed).as("the silent holder learns it lost the lock").isInstanceOf(LockLostException.class);
		// the connection that served a bounded hold goes back to the pool with the server's own wait_timeout (one
		// connection in the pool, so the query below runs on it)
		this.faulty.setMaximumPoolSize(1);
		this.faulty.getHikariPoolMXBean().softEvictConnections();
		call(() -> {
			try (LockHandle again = silentNode.acquire(this.resource, options(LockMode.PESSIMISTIC, Duration.ZERO))) {
				assertThat(again.isHeld()).isTrue();
			}
			return null;
		});
		Integer sessionTimeout = new JdbcTemplate(this.faulty).queryForObject("SELECT @@SESSION.wait_timeout", Integer.class);
		Integer globalTimeout = new JdbcTemplate(this.faulty).queryForObject("SELECT @@GLOBAL.wait_timeout", Integer.class);
		assertThat(sessionTimeout).isEqualTo(globalTimeout);
	}

	@Test
	void theHealthyNodeIsNotAffected() {
		// guards the tests above against a proxy that delays everyone: the direct pool is untouched by its settings
		this.proxy.blackhole(FaultProxy.Direction.BOTH);
		long start = System.nanoTime();
		try (LockHandle lock = this.healthyNode.acquire(this.resource)) {
			assertThat(lock.isHeld()).isTrue();
		}
		assertThat(millisSince(start)).isLessThan(2_000);
		assertThat(new JdbcTemplate(this.direct).queryForObject("SELECT 1", Integer.class)).isEqualTo(1);
	}

}
