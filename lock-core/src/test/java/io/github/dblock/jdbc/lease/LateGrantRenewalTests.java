package io.github.dblock.jdbc.lease;

import io.github.dblock.jdbc.sql.LockRows;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockType;
import io.github.dblock.idempotency.IdempotencyProvider;
import io.github.dblock.idempotency.IdempotencyStatus;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.test.FaultProxy;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import io.github.dblock.wait.Backoff;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 29, part 5: a hold granted late (its take waited behind another session's row lock, or its reply was held
 * by the network) keeps only the lease time left, counted from the sending of the take. Its renewal, and the check
 * that declares it lost, must be scheduled from that lease end, not a third of the full lease after the grant: the
 * holder keeps a lock it could keep, and {@code onLost} runs before another owner can take it. For exclusive leases,
 * read and write locks, semaphore permits and idempotency claims.
 */
class LateGrantRenewalTests {

	/** The lease of every hold here: renewed (no lease time of the caller's own). */
	private static final Duration LEASE = Duration.ofSeconds(3);

	/**
	 * How long a take is held up, behind another session's row lock or by the proxy holding its reply: most of the
	 * lease.
	 */
	private static final long LATE_MILLIS = 2_300;

	private static final Duration STATEMENT_TIMEOUT = Duration.ofSeconds(5);

	private HikariDataSource direct;

	private FaultProxy proxy;

	private HikariDataSource proxied;

	private final ExecutorService executor = Executors.newCachedThreadPool();

	@BeforeEach
	void setUp() {
		TestDatabase db = TestDatabase.get();
		this.direct = db.newDataSource(6);
		LockNodes.migrateOnce(this.direct);
		this.proxy = FaultProxy.forJdbcUrl(db.jdbcUrl());
	}

	@AfterEach
	void tearDown() {
		this.executor.shutdownNow();
		this.proxy.close();
		if (this.proxied != null) {
			this.proxied.close();
		}
		this.direct.close();
	}

	private HikariDataSource proxiedPool() {
		TestDatabase db = TestDatabase.get();
		String url = this.proxy.jdbcUrl(db.jdbcUrl());
		this.proxied = db.newDataSource(4, (config) -> {
			config.setJdbcUrl(url);
			config.setConnectionTimeout(2_000);
			config.setPoolName("late-grant");
		});
		return this.proxied;
	}

	private static LeaseLockProvider leaseProvider(javax.sql.DataSource dataSource) {
		return new LeaseLockProvider(dataSource, LockNodes.TABLE, LockNodes.dialect(dataSource), STATEMENT_TIMEOUT,
				Duration.ofMillis(5), Duration.ofMillis(50));
	}

	private static JdbcSemaphoreProvider semaphoreProvider(javax.sql.DataSource dataSource, LeaseLockProvider renewals) {
		return new JdbcSemaphoreProvider(dataSource, LockNodes.TABLE, STATEMENT_TIMEOUT,
				new Backoff(Duration.ofMillis(5), Duration.ofMillis(50)), renewals, Map.of());
	}

	/** A renewed request (no lease time of the caller's own) of {@link #LEASE}. */
	private static LockRequest renewed(String resource, Duration wait) {
		return new LockRequest(resource, LEASE, true, Duration.ZERO, System.nanoTime() + wait.toNanos(), "late-grant-test");
	}

	private static LockRequest explicit(String resource, Duration lease) {
		return new LockRequest(resource, lease, false, Duration.ZERO, System.nanoTime(), "late-grant-other");
	}

	/**
	 * Runs {@code take} while another session holds the row lock of {@code key} in {@code table} (a plain transaction's
	 * {@code SELECT ... FOR UPDATE}) for {@link #LATE_MILLIS}, so that the take's first statement, sent after the
	 * row was locked, waits behind it for most of its lease; returns what the take returned. (The hold's remaining
	 * time cannot be checked from outside: a renewal started at once may already have extended it.)
	 */
	private <T> T behindRowLock(String table, String keyColumn, String key, Callable<T> take) throws Exception {
		Future<T> taking;
		try (Connection blocker = this.direct.getConnection()) {
			blocker.setAutoCommit(false);
			try (PreparedStatement ps = blocker.prepareStatement(
					"SELECT 1 FROM " + table + " WHERE " + keyColumn + " = ? FOR UPDATE")) {
				ps.setBytes(1, LockRows.bytes(key));
				try (ResultSet rs = ps.executeQuery()) {
					assertThat(rs.next()).as("the row to lock exists").isTrue();
				}
			}
			taking = this.executor.submit(take);
			Thread.sleep(LATE_MILLIS);
			assertThat(taking.isDone()).as("the take waits behind the row lock").isFalse();
			blocker.commit();
		}
		return taking.get(30, TimeUnit.SECONDS);
	}

	/** Waits past the end of the lease the hold was granted with, plus a margin. */
	private static void waitPastTheGrantedLease() throws InterruptedException {
		Thread.sleep(LEASE.toMillis() + 1_000);
	}

	@Test
	void aLeaseTakenBehindAnotherSessionsRowLockIsRenewedBeforeItsLeaseEndsAndKept() throws Exception {
		LeaseLockProvider node = leaseProvider(this.direct);
		LeaseLockProvider other = leaseProvider(this.direct);
		String resource = "late-grant-lease-" + UUID.randomUUID();
		other.acquire(explicit(resource, Duration.ofSeconds(1))).lock().release(); // creates the row
		HeldLock lock = behindRowLock("distributed_lock", "resource", resource,
				() -> node.acquire(renewed(resource, Duration.ofSeconds(10))).lock());
		assertThat(lock).isNotNull();
		waitPastTheGrantedLease();
		assertThat(lock.isLost()).as("renewed in time: not lost").isFalse();
		assertThat(other.acquire(explicit(resource, Duration.ofSeconds(1))).lock()).as("another node's take").isNull();
		assertThat(lock.release()).as("released by its owner: still its lease").isTrue();
		node.close();
		other.close();
	}

	@ParameterizedTest
	@EnumSource(value = LockType.class, names = { "READ", "WRITE" })
	void aReadOrWriteLockGrantedBehindAnotherSessionsRowLockIsRenewedBeforeItsLeaseEndsAndKept(LockType type)
			throws Exception {
		LeaseLockProvider node = leaseProvider(this.direct);
		LeaseLockProvider other = leaseProvider(this.direct);
		String resource = "late-grant-rw-" + type + "-" + UUID.randomUUID();
		other.acquire(explicit(resource, Duration.ofSeconds(1)), LockType.WRITE).lock().release(); // creates the row
		HeldLock lock = behindRowLock("distributed_lock_rw", "resource", resource,
				() -> node.acquire(renewed(resource, Duration.ofSeconds(10)), type).lock());
		assertThat(lock).isNotNull();
		waitPastTheGrantedLease();
		assertThat(lock.isLost()).as("renewed in time: not lost").isFalse();
		assertThat(other.acquire(explicit(resource, Duration.ofSeconds(1)), LockType.WRITE).lock())
			.as("another node's write lock").isNull();
		assertThat(lock.release()).as("released by its owner: still its lease").isTrue();
		node.close();
		other.close();
	}

	@Test
	void aPermitTakenBehindAnotherSessionsRowLockIsRenewedBeforeItsLeaseEndsAndKept() throws Exception {
		LeaseLockProvider renewals = leaseProvider(this.direct);
		JdbcSemaphoreProvider node = semaphoreProvider(this.direct, renewals);
		JdbcSemaphoreProvider other = semaphoreProvider(this.direct, renewals);
		String name = "late-grant-permit-" + UUID.randomUUID();
		other.setPermits(name, 1);
		HeldLock permit = behindRowLock("distributed_lock_sem", "name", name,
				() -> node.acquire(renewed(name, Duration.ofSeconds(10))).lock());
		assertThat(permit).isNotNull();
		waitPastTheGrantedLease();
		assertThat(permit.isLost()).as("renewed in time: not lost").isFalse();
		assertThat(other.acquire(explicit(name, Duration.ofSeconds(1))).lock()).as("another owner's permit").isNull();
		assertThat(permit.release()).as("released by its owner: still its lease").isTrue();
		renewals.close();
	}

	@Test
	void anIdempotencyClaimWhoseReplyIsLateIsRenewedBeforeItsLeaseEndsAndKept() throws Exception {
		LeaseLockProvider renewals = leaseProvider(proxiedPool());
		IdempotencyStore store = new IdempotencyStore(this.proxied, LockNodes.TABLE, STATEMENT_TIMEOUT,
				new Backoff(Duration.ofMillis(5), Duration.ofMillis(50)), renewals);
		String key = "late-grant-claim-" + UUID.randomUUID();
		CountDownLatch fired = this.proxy.holdReplyToNext(FaultProxy.isQueryContaining("'RUNNING', "));
		CompletableFuture<Void> lifted = CompletableFuture.runAsync(() -> {
			try {
				if (fired.await(20, TimeUnit.SECONDS)) {
					Thread.sleep(LATE_MILLIS);
				}
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
			this.proxy.passThrough();
		});
		long started = System.nanoTime();
		IdempotencyProvider.Claimed claimed = store.claim(key, "late-grant-test", LEASE, Duration.ofHours(1),
				System.nanoTime() + TimeUnit.SECONDS.toNanos(10));
		assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started)).as("the claim waited for its reply")
			.isGreaterThanOrEqualTo(LATE_MILLIS);
		lifted.get(30, TimeUnit.SECONDS);
		assertThat(fired.getCount()).as("the claim's reply was held").isZero();
		IdempotencyProvider.HeldClaim claim = claimed.claim();
		assertThat(claim).as("the claim whose reply came late, within its lease (record: %s)", claimed.record())
			.isNotNull();
		waitPastTheGrantedLease();
		assertThat(claim.isLost()).as("renewed in time: not lost").isFalse();
		claim.succeed("\"done\"", String.class.getName(), null); // LockLostException if the record were not ours
		assertThat(store.find(key)).hasValueSatisfying(
				(record) -> assertThat(record.status()).isEqualTo(IdempotencyStatus.SUCCEEDED));
		renewals.close();
	}

	/**
	 * The take waits behind another session's row lock for most of its lease (as a LEASE caller does behind a
	 * PESSIMISTIC holder), then the node's network stops passing its requests, so no renewal gets through: the loss
	 * must be told when the lease ends by this JVM's clock, before another node is granted the lock. The proxy delays
	 * every packet by {@code 200 ms}: the time between sending the take and its start on the server, by which the
	 * JVM's lease end comes before the server's. The row lock is let go 2.2 s after the take was sent, so its reply
	 * arrives about 2.4 s after, with 0.6 s of the 3 s lease left: a first renewal a third of the lease after that
	 * (the old schedule) would come 0.2 s after the server's lease end.
	 */
	@Test
	void theLossOfALeaseTakenLateIsToldBeforeAnotherNodeIsGranted() throws Exception {
		LeaseLockProvider node = leaseProvider(proxiedPool());
		LeaseLockProvider other = leaseProvider(this.direct);
		String resource = "late-grant-lost-" + UUID.randomUUID();
		other.acquire(explicit(resource, Duration.ofSeconds(1))).lock().release(); // creates the row
		node.acquire(explicit(resource, Duration.ofSeconds(1))).lock().release(); // opens the node's connection
		this.proxy.delay(Duration.ofMillis(200));
		AtomicLong lostAt = new AtomicLong();
		HeldLock lock;
		try (Connection blocker = this.direct.getConnection()) {
			blocker.setAutoCommit(false);
			try (PreparedStatement ps = blocker.prepareStatement(
					"SELECT 1 FROM distributed_lock WHERE resource = ? FOR UPDATE")) {
				ps.setBytes(1, LockRows.bytes(resource));
				ps.executeQuery().close();
			}
			long submitted = System.nanoTime();
			Future<HeldLock> taking = this.executor
				.submit(() -> node.acquire(renewed(resource, Duration.ofSeconds(10))).lock());
			awaitRunningStatementNaming(resource, "fencing_token + 1024");
			this.proxy.blackhole(FaultProxy.Direction.UPSTREAM); // the take has reached the server: nothing more does
			Thread.sleep(Math.max(0, TimeUnit.NANOSECONDS.toMillis(submitted - System.nanoTime()) + 2_200));
			blocker.commit();
			lock = taking.get(30, TimeUnit.SECONDS);
		}
		assertThat(lock).as("the take, granted after the row lock").isNotNull();
		lock.onLost(() -> lostAt.compareAndSet(0, System.nanoTime()));
		HeldLock next = null;
		boolean lostBeforeTheGrant = false;
		long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
		while (next == null && System.nanoTime() - until < 0) {
			boolean lostBefore = lostAt.get() != 0; // read before the attempt is sent
			next = other.acquire(explicit(resource, Duration.ofSeconds(5))).lock();
			if (next != null) {
				lostBeforeTheGrant = lostBefore;
			}
			else {
				Thread.sleep(2);
			}
		}
		assertThat(next).as("another node takes the lock once the unrenewed lease ended").isNotNull();
		long grantedAt = System.nanoTime();
		assertThat(lostBeforeTheGrant).as("onLost ran before another node's take was sent (%s)", (lostAt.get() == 0)
				? "it had not run when the other node had the lock"
				: "it ran " + TimeUnit.NANOSECONDS.toMillis(grantedAt - lostAt.get()) + " ms before that take returned")
			.isTrue();
		assertThat(next.fencingToken()).isGreaterThan(lock.fencingToken());
		assertThat(next.release()).isTrue();
		this.proxy.passThrough();
		node.close();
		other.close();
	}

	/** Waits until a statement of this database's sessions naming {@code resource} and {@code fragment} runs. */
	private void awaitRunningStatementNaming(String resource, String fragment) throws Exception {
		JdbcTemplate jdbc = new JdbcTemplate(this.direct);
		long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
		while (jdbc.queryForObject("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE()"
				+ " AND INFO LIKE ? AND INFO LIKE ?", Integer.class, "%" + resource + "%", "%" + fragment + "%") == 0) {
			assertThat(System.nanoTime() - until).as("the take reached the server").isNegative();
			Thread.sleep(5);
		}
	}

}
