package io.github.dblock.jdbc.lease;

import io.github.dblock.jdbc.sql.LockRows;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockType;
import io.github.dblock.idempotency.IdempotencyStatus;
import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.test.FaultProxy;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import io.github.dblock.wait.Backoff;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 23, parts 1 to 3: read/write and semaphore acquisitions whose {@code COMMIT} reply is late or lost, forced
 * with a {@link FaultProxy} between one "node" and the real database; a second node and plain reads go to the
 * database directly. Part 4: a LEASE take whose reply arrives after its lease time (a partition that held the traffic,
 * as the issue-20 soak did) is not handed out.
 */
class ReplyLossTests {

	/**
	 * The statement timeout of the nodes whose reply is held (late): their network timeout (statement timeout + 2 s)
	 * must outlast the hold.
	 */
	private static final Duration STATEMENT_TIMEOUT = Duration.ofSeconds(5);

	/** The statement timeout of the nodes whose reply is dropped: the network timeout ends the read after 3 s. */
	private static final Duration SHORT_STATEMENT_TIMEOUT = Duration.ofSeconds(1);

	private FaultProxy proxy;

	private HikariDataSource proxied;

	private HikariDataSource direct;

	@BeforeEach
	void setUp() {
		TestDatabase db = TestDatabase.get();
		this.direct = db.newDataSource(6);
		LockNodes.migrateOnce(this.direct);
		this.proxy = FaultProxy.forJdbcUrl(db.jdbcUrl());
	}

	@AfterEach
	void tearDown() {
		this.proxy.close();
		if (this.proxied != null) {
			this.proxied.close();
		}
		this.direct.close();
	}

	/**
	 * A pool through the proxy. A lost reply ends with the lock connections' network timeout (the statement timeout
	 * plus 2 s, set by the library on every lock connection).
	 */
	private HikariDataSource proxiedPool() {
		TestDatabase db = TestDatabase.get();
		String url = this.proxy.jdbcUrl(db.jdbcUrl());
		this.proxied = db.newDataSource(4, (config) -> {
			config.setJdbcUrl(url);
			config.setConnectionTimeout(2_000);
			config.setPoolName("reply-loss");
		});
		return this.proxied;
	}

	private static LockRequest request(String resource, Duration lease, boolean renew, Duration wait) {
		return new LockRequest(resource, lease, renew, Duration.ZERO, System.nanoTime() + wait.toNanos(), "reply-loss-test");
	}

	/** Lets the held connection's traffic pass {@code millis} after the trap fired. */
	private CompletableFuture<Void> liftAfter(CountDownLatch fired, long millis) {
		return CompletableFuture.runAsync(() -> {
			try {
				if (fired.await(20, TimeUnit.SECONDS)) {
					Thread.sleep(millis);
				}
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
			this.proxy.passThrough();
		});
	}

	/**
	 * A write lock's acquisition by {@code node} with the reply to the grant's {@code COMMIT} held for
	 * {@code holdMillis}; returns once the hold was lifted, after checking that the trap fired.
	 */
	private AcquireResult writeWithCommitReplyHeld(LeaseLockProvider node, String resource, Duration lease,
			long holdMillis, Duration wait) throws Exception {
		CountDownLatch fired = this.proxy.holdReplyToNext(FaultProxy.isQuery("COMMIT"));
		CompletableFuture<Void> lifted = liftAfter(fired, holdMillis);
		AcquireResult result = node.acquire(request(resource, lease, false, wait), LockType.WRITE);
		lifted.get(30, TimeUnit.SECONDS);
		assertThat(fired.getCount()).as("the grant's COMMIT reply was held").isZero();
		return result;
	}

	/** A lease handed out must still run by this JVM's clock. */
	private static void assertRunsByThisJvmsClock(HeldLock lock, String what) {
		assertThat(System.nanoTime() - lock.validUntilNanos()).as("%s runs, by this JVM's clock", what).isNegative();
	}

	private static LeaseLockProvider leaseProvider(javax.sql.DataSource dataSource, Duration statementTimeout) {
		return new LeaseLockProvider(dataSource, LockNodes.TABLE, LockNodes.dialect(dataSource), statementTimeout,
				Duration.ofMillis(5), Duration.ofMillis(50));
	}

	private static JdbcSemaphoreProvider semaphoreProvider(javax.sql.DataSource dataSource, LeaseLockProvider renewals,
			Duration statementTimeout) {
		return new JdbcSemaphoreProvider(dataSource, LockNodes.TABLE, statementTimeout,
				new Backoff(Duration.ofMillis(5), Duration.ofMillis(50)), renewals, Map.of());
	}

	/** Live holder rows of a read/write resource on the server's clock. */
	private int liveReadWriteHolders(String resource) throws SQLException {
		return count("SELECT COUNT(*) FROM " + LockNodes.TABLE.quoted("_rw_hold")
				+ " WHERE resource = ? AND expires_at > UTC_TIMESTAMP(6)", resource);
	}

	/** Live permit rows of a semaphore on the server's clock. */
	private int livePermits(String name) throws SQLException {
		return count("SELECT COUNT(*) FROM " + JdbcSemaphoreProvider.holdTable(LockNodes.TABLE)
				+ " WHERE name = ? AND expires_at > UTC_TIMESTAMP(6)", name);
	}

	private int count(String sql, String key) throws SQLException {
		try (Connection c = this.direct.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
			ps.setBytes(1, LockRows.bytes(key));
			try (ResultSet rs = ps.executeQuery()) {
				rs.next();
				return rs.getInt(1);
			}
		}
	}

	// ---- part 1: read/write renewal started before COMMIT

	@Test
	void aWriteLockWhoseCommitReplyIsLateIsNotRenewedByNobody() throws Exception {
		LeaseLockProvider node = leaseProvider(proxiedPool(), STATEMENT_TIMEOUT);
		LeaseLockProvider other = leaseProvider(this.direct, STATEMENT_TIMEOUT);
		String resource = "reply-late-w-" + UUID.randomUUID();
		// creates the resource's row, so that the next COMMIT through the proxy is the grant's
		other.acquire(request(resource, Duration.ofSeconds(2), false, Duration.ZERO), LockType.WRITE).lock().release();
		CountDownLatch commitTrapped = this.proxy.holdReplyToNext(FaultProxy.isQuery("COMMIT"));
		CompletableFuture<CountDownLatch> lookTrap = CompletableFuture.supplyAsync(() -> {
			try {
				commitTrapped.await(20, TimeUnit.SECONDS);
				// then the look for our own row (if the code makes one) gets no reply either: the outcome stays unknown
				CountDownLatch lookTrapped = this.proxy
					.dropReplyToNext(FaultProxy.isQueryContaining("SELECT fencing_token, TIMESTAMPDIFF"));
				Thread.sleep(2_500); // past the 1 s query timeout of a wait of 0
				for (FaultProxy.Link link : this.proxy.connections()) {
					link.passThrough(); // the late reply arrives; the proxy-wide trap stays armed
				}
				return lookTrapped;
			}
			catch (InterruptedException ex) {
				throw new IllegalStateException(ex);
			}
		});
		AcquireResult result = node.acquire(request(resource, Duration.ofSeconds(2), true, Duration.ZERO), LockType.WRITE);
		lookTrap.get(30, TimeUnit.SECONDS);
		assertThat(commitTrapped.getCount()).as("the grant's COMMIT was trapped").isZero();
		assertThat(result.lock()).as("nothing to hand out: the outcome could not be learned").isNull();
		// nobody holds a handle: what the grant left must end with its 2 s lease, not be renewed for ever
		Thread.sleep(4_500);
		assertThat(liveReadWriteHolders(resource)).as("live holder rows 4.5 s after a 2 s lease nobody holds").isZero();
		HeldLock next = other.acquire(request(resource, Duration.ofSeconds(2), false, Duration.ZERO), LockType.READ)
			.lock();
		assertThat(next).as("a reader after the lease ended").isNotNull();
		next.release();
		node.close();
		other.close();
	}

	// ---- part 4: a lease whose reply arrives after its lease time

	/** The take of an exclusive lease (the only lease statement that advances the token by a block). */
	private static final java.util.function.Predicate<byte[]> LEASE_TAKE = FaultProxy.isQueryContaining("fencing_token + 1024");

	@Test
	void aLeaseWhoseTakeReplyArrivesAfterTheLeaseTimeIsNotHandedOutAndIsReleased() throws Exception {
		LeaseLockProvider node = leaseProvider(proxiedPool(), STATEMENT_TIMEOUT);
		LeaseLockProvider other = leaseProvider(this.direct, STATEMENT_TIMEOUT);
		String resource = "reply-late-lease-" + UUID.randomUUID();
		// creates the row, so that the node's acquisition is a take (an UPDATE), not an insert
		other.acquire(request(resource, Duration.ofSeconds(2), false, Duration.ZERO)).lock().release();
		CountDownLatch fired = this.proxy.holdReplyToNext(LEASE_TAKE);
		CompletableFuture<Void> lifted = liftAfter(fired, 1_500); // past the 1 s lease, within the 7 s network timeout
		long started = System.nanoTime();
		AcquireResult result = node.acquire(request(resource, Duration.ofSeconds(1), false, Duration.ZERO));
		lifted.get(30, TimeUnit.SECONDS);
		assertThat(fired.getCount()).as("the take's reply was held").isZero();
		assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started)).as("the call waited for the late reply")
			.isGreaterThanOrEqualTo(1_500);
		assertThat(result.lock()).as("a lease whose reply came after its lease time may be another owner's by now")
			.isNull();
		assertThat(result.holder()).contains("came after the lease time of 1000 ms");
		// the late lease was given back: another node takes the lock at once, not after the lease ran out on the server
		HeldLock next = other.acquire(request(resource, Duration.ofSeconds(2), false, Duration.ZERO)).lock();
		assertThat(next).as("the lock is free right after the call").isNotNull();
		next.release();
		node.close();
		other.close();
	}

	@Test
	void aLeaseWhoseTakeReplyArrivesAfterTheLeaseTimeIsTakenAgainWithinTheWaitTime() throws Exception {
		LeaseLockProvider node = leaseProvider(proxiedPool(), STATEMENT_TIMEOUT);
		LeaseLockProvider other = leaseProvider(this.direct, STATEMENT_TIMEOUT);
		String resource = "reply-late-lease2-" + UUID.randomUUID();
		other.acquire(request(resource, Duration.ofSeconds(2), false, Duration.ZERO)).lock().release();
		CountDownLatch fired = this.proxy.holdReplyToNext(LEASE_TAKE);
		CompletableFuture<Void> lifted = liftAfter(fired, 1_500);
		AcquireResult result = node.acquire(request(resource, Duration.ofSeconds(1), false, Duration.ofSeconds(10)));
		lifted.get(30, TimeUnit.SECONDS);
		assertThat(fired.getCount()).isZero();
		HeldLock lock = result.lock();
		assertThat(lock).as("taken again once the network passed the replies on (busy: %s)", result.holder())
			.isNotNull();
		assertRunsByThisJvmsClock(lock, "the lease handed out");
		assertThat(lock.isLost()).isFalse();
		assertThat(lock.release()).as("released by its owner, so it was still this node's lease").isTrue();
		node.close();
		other.close();
	}

	// With a wait of 0 the grant's COMMIT is cancelled by its 1 s query timeout, and the look for an unacknowledged
	// grant then finds its lease over on the server's clock; a wait of some seconds lets the late reply arrive.

	@Test
	void aWriteLockWhoseCommitReplyArrivesAfterTheLeaseTimeIsGivenBackAndTakenAgain() throws Exception {
		LeaseLockProvider node = leaseProvider(proxiedPool(), STATEMENT_TIMEOUT);
		LeaseLockProvider other = leaseProvider(this.direct, STATEMENT_TIMEOUT);
		String resource = "reply-late-w4-" + UUID.randomUUID();
		other.acquire(request(resource, Duration.ofSeconds(2), false, Duration.ZERO), LockType.WRITE).lock().release();
		AcquireResult result = writeWithCommitReplyHeld(node, resource, Duration.ofSeconds(1), 1_500,
				Duration.ofSeconds(5));
		HeldLock lock = result.lock();
		assertThat(lock).as("granted again once the replies passed (busy: %s)", result.holder()).isNotNull();
		assertRunsByThisJvmsClock(lock, "the write lease handed out");
		assertThat(liveReadWriteHolders(resource)).as("one holder: the late grant was given back").isEqualTo(1);
		assertThat(lock.release()).isTrue();
		node.close();
		other.close();
	}

	@Test
	void aPermitWhoseCommitReplyArrivesAfterTheLeaseTimeIsGivenBackAndTakenAgain() throws Exception {
		LeaseLockProvider renewals = leaseProvider(proxiedPool(), STATEMENT_TIMEOUT);
		JdbcSemaphoreProvider node = semaphoreProvider(this.proxied, renewals, STATEMENT_TIMEOUT);
		JdbcSemaphoreProvider other = semaphoreProvider(this.direct, renewals, STATEMENT_TIMEOUT);
		String name = "reply-late-p2-" + UUID.randomUUID();
		other.setPermits(name, 2);
		CountDownLatch fired = this.proxy.holdReplyToNext(FaultProxy.isQuery("COMMIT"));
		CompletableFuture<Void> lifted = liftAfter(fired, 1_500);
		AcquireResult result = node.acquire(request(name, Duration.ofSeconds(1), false, Duration.ofSeconds(5)));
		lifted.get(30, TimeUnit.SECONDS);
		assertThat(fired.getCount()).as("the take's COMMIT reply was held").isZero();
		HeldLock permit = result.lock();
		assertThat(permit).as("taken again once the replies passed (busy: %s)", result.holder()).isNotNull();
		assertRunsByThisJvmsClock(permit, "the permit handed out");
		assertThat(livePermits(name)).as("one permit: the late one was given back").isEqualTo(1);
		assertThat(permit.release()).isTrue();
		renewals.close();
	}

	// ---- part 2: an unknown outcome reported as busy

	@Test
	void aWriteLockWhoseCommitReplyIsLateIsFoundAndHeld() throws Exception {
		LeaseLockProvider node = leaseProvider(proxiedPool(), STATEMENT_TIMEOUT);
		LeaseLockProvider other = leaseProvider(this.direct, STATEMENT_TIMEOUT);
		String resource = "reply-late-w2-" + UUID.randomUUID();
		other.acquire(request(resource, Duration.ofSeconds(2), false, Duration.ZERO), LockType.WRITE).lock().release();
		AcquireResult result = writeWithCommitReplyHeld(node, resource, Duration.ofSeconds(20), 2_500, Duration.ZERO);
		HeldLock lock = result.lock();
		assertThat(lock).as("the committed grant, found by its owner token (holder: %s)", result.holder()).isNotNull();
		assertThat(lock.isLost()).isFalse();
		assertThat(liveReadWriteHolders(resource)).isEqualTo(1);
		assertThat(lock.release()).isTrue();
		assertThat(liveReadWriteHolders(resource)).isZero();
		node.close();
		other.close();
	}

	@Test
	void aWriteLockWhoseCommitReplyIsLateIsFoundByTheNextAttempt() throws Exception {
		LeaseLockProvider node = leaseProvider(proxiedPool(), Duration.ofSeconds(2));
		LeaseLockProvider other = leaseProvider(this.direct, STATEMENT_TIMEOUT);
		String resource = "reply-late-w3-" + UUID.randomUUID();
		other.acquire(request(resource, Duration.ofSeconds(2), false, Duration.ZERO), LockType.WRITE).lock().release();
		// held past the 2 s query timeout, within the 4 s network one; a wait of 6 s leaves time for another attempt,
		// which used to insert our holder row again (a duplicate key)
		AcquireResult result = writeWithCommitReplyHeld(node, resource, Duration.ofSeconds(20), 3_000,
				Duration.ofSeconds(6));
		HeldLock lock = result.lock();
		assertThat(lock).as("the committed grant, found by its owner token").isNotNull();
		assertThat(liveReadWriteHolders(resource)).isEqualTo(1);
		assertThat(lock.release()).isTrue();
		node.close();
		other.close();
	}

	@Test
	void aWriteLockWhoseCommitReplyIsLostAtTheEndOfTheWaitIsFoundAndHeld() throws Exception {
		LeaseLockProvider node = leaseProvider(proxiedPool(), SHORT_STATEMENT_TIMEOUT);
		LeaseLockProvider other = leaseProvider(this.direct, STATEMENT_TIMEOUT);
		String resource = "reply-lost-w-" + UUID.randomUUID();
		other.acquire(request(resource, Duration.ofSeconds(2), false, Duration.ZERO), LockType.WRITE).lock().release();
		CountDownLatch fired = this.proxy.dropReplyToNext(FaultProxy.isQuery("COMMIT"));
		AcquireResult result = node.acquire(request(resource, Duration.ofSeconds(20), false, Duration.ZERO),
				LockType.WRITE);
		assertThat(fired.getCount()).isZero();
		HeldLock lock = result.lock();
		assertThat(lock).as("the committed grant, found by its owner token").isNotNull();
		assertThat(liveReadWriteHolders(resource)).isEqualTo(1);
		assertThat(lock.release()).isTrue();
		assertThat(liveReadWriteHolders(resource)).isZero();
		node.close();
		other.close();
	}

	@Test
	void aPermitWhoseCommitReplyIsLateIsFoundAndHeld() throws Exception {
		LeaseLockProvider renewals = leaseProvider(proxiedPool(), STATEMENT_TIMEOUT);
		JdbcSemaphoreProvider node = semaphoreProvider(this.proxied, renewals, STATEMENT_TIMEOUT);
		JdbcSemaphoreProvider other = semaphoreProvider(this.direct, renewals, STATEMENT_TIMEOUT);
		String name = "reply-late-p-" + UUID.randomUUID();
		other.setPermits(name, 1);
		CountDownLatch fired = this.proxy.holdReplyToNext(FaultProxy.isQuery("COMMIT"));
		CompletableFuture<Void> lifted = liftAfter(fired, 2_500);
		AcquireResult result = node.acquire(request(name, Duration.ofSeconds(20), false, Duration.ZERO));
		lifted.get(30, TimeUnit.SECONDS);
		assertThat(fired.getCount()).isZero();
		HeldLock permit = result.lock();
		assertThat(permit).as("the committed permit, found by its owner token (busy: %s)", result.holder()).isNotNull();
		assertThat(livePermits(name)).isEqualTo(1);
		assertThat(permit.release()).isTrue();
		assertThat(livePermits(name)).isZero();
		HeldLock next = other.acquire(request(name, Duration.ofSeconds(2), false, Duration.ZERO)).lock();
		assertThat(next).as("the single permit is free again").isNotNull();
		next.release();
		renewals.close();
	}

	@Test
	void aPermitWhoseCommitReplyIsLateIsFoundByTheNextAttempt() throws Exception {
		LeaseLockProvider renewals = leaseProvider(proxiedPool(), Duration.ofSeconds(2));
		JdbcSemaphoreProvider node = semaphoreProvider(this.proxied, renewals, Duration.ofSeconds(2));
		JdbcSemaphoreProvider other = semaphoreProvider(this.direct, renewals, STATEMENT_TIMEOUT);
		String name = "reply-late-p2-" + UUID.randomUUID();
		other.setPermits(name, 2);
		CountDownLatch fired = this.proxy.holdReplyToNext(FaultProxy.isQuery("COMMIT"));
		CompletableFuture<Void> lifted = liftAfter(fired, 3_000); // past the 2 s query timeout, within the 4 s network one
		// a wait of 6 s leaves time for another attempt, which used to take a second permit for the same owner
		AcquireResult result = node.acquire(request(name, Duration.ofSeconds(20), false, Duration.ofSeconds(6)));
		lifted.get(30, TimeUnit.SECONDS);
		assertThat(fired.getCount()).isZero();
		HeldLock permit = result.lock();
		assertThat(permit).as("the committed permit, found by its owner token").isNotNull();
		assertThat(livePermits(name)).as("one permit taken, not two").isEqualTo(1);
		assertThat(permit.release()).isTrue();
		assertThat(livePermits(name)).isZero();
		renewals.close();
	}

	@Test
	void aPermitWhoseCommitReplyIsLostAtTheEndOfTheWaitIsFoundAndHeld() throws Exception {
		LeaseLockProvider renewals = leaseProvider(proxiedPool(), SHORT_STATEMENT_TIMEOUT);
		JdbcSemaphoreProvider node = semaphoreProvider(this.proxied, renewals, SHORT_STATEMENT_TIMEOUT);
		JdbcSemaphoreProvider other = semaphoreProvider(this.direct, renewals, STATEMENT_TIMEOUT);
		String name = "reply-lost-p-" + UUID.randomUUID();
		other.setPermits(name, 1);
		CountDownLatch fired = this.proxy.dropReplyToNext(FaultProxy.isQuery("COMMIT"));
		AcquireResult result = node.acquire(request(name, Duration.ofSeconds(20), false, Duration.ZERO));
		assertThat(fired.getCount()).isZero();
		HeldLock permit = result.lock();
		assertThat(permit).as("the committed permit, found by its owner token").isNotNull();
		assertThat(permit.release()).isTrue();
		assertThat(livePermits(name)).isZero();
		renewals.close();
	}

	// ---- part 3: the semaphore's recovery path counts a full lease

	@Test
	void aPermitFoundAfterALostCommitReplyEndsWithTheRowsLease() throws Exception {
		LeaseLockProvider renewals = leaseProvider(proxiedPool(), SHORT_STATEMENT_TIMEOUT);
		JdbcSemaphoreProvider node = semaphoreProvider(this.proxied, renewals, SHORT_STATEMENT_TIMEOUT);
		JdbcSemaphoreProvider other = semaphoreProvider(this.direct, renewals, STATEMENT_TIMEOUT);
		String name = "reply-lost-p3-" + UUID.randomUUID();
		other.setPermits(name, 1);
		CountDownLatch fired = this.proxy.dropReplyToNext(FaultProxy.isQuery("COMMIT"));
		// the take commits, its reply is lost, the driver gives up after its 3 s network timeout, and the retry finds
		// the row with about 3 s of its 6 s lease left
		HeldLock permit = node.acquire(request(name, Duration.ofSeconds(6), false, Duration.ofSeconds(10))).lock();
		assertThat(fired.getCount()).isZero();
		assertThat(permit).isNotNull();
		HeldLock next = null;
		long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
		while (next == null && System.nanoTime() - giveUp < 0) {
			next = other.acquire(request(name, Duration.ofSeconds(30), false, Duration.ZERO)).lock();
			if (next == null) {
				Thread.sleep(20);
			}
		}
		assertThat(next).as("another owner admitted when the first permit's row expired").isNotNull();
		boolean firstStillValid = System.nanoTime() - permit.validUntilNanos() < 0;
		assertThat(firstStillValid).as("the first permit still counted as held while another owner holds the single "
				+ "permit, %d ms after its row expired", TimeUnit.NANOSECONDS.toMillis(permit.validUntilNanos()
						- System.nanoTime()))
			.isFalse();
		next.release();
		renewals.close();
	}

	// ---- part 5: a release or completion whose reply is late committed after all

	@Test
	void aPermitReleaseWhoseReplyIsLateCountsAsReleased() throws Exception {
		LeaseLockProvider renewals = leaseProvider(proxiedPool(), Duration.ofSeconds(2));
		JdbcSemaphoreProvider node = semaphoreProvider(this.proxied, renewals, Duration.ofSeconds(2));
		String name = "reply-late-rel-" + UUID.randomUUID();
		node.setPermits(name, 1);
		HeldLock permit = node.acquire(request(name, Duration.ofSeconds(20), false, Duration.ZERO)).lock();
		assertThat(permit).isNotNull();
		CountDownLatch fired = this.proxy.holdReplyToNext(FaultProxy.isQueryContaining("DELETE FROM"));
		CompletableFuture<Void> lifted = liftAfter(fired, 3_000); // past the 2 s query timeout, within the 4 s network one
		assertThat(permit.release()).as("the delete committed; only its reply was late").isTrue();
		lifted.get(30, TimeUnit.SECONDS);
		assertThat(fired.getCount()).isZero();
		assertThat(livePermits(name)).isZero();
		renewals.close();
	}

	@Test
	void anIdempotencyClaimWhoseReplyArrivesAfterItsLeaseTimeIsNotHandedOutButTakenAgain() throws Exception {
		LeaseLockProvider renewals = leaseProvider(proxiedPool(), STATEMENT_TIMEOUT);
		IdempotencyStore store = new IdempotencyStore(this.proxied, LockNodes.TABLE, STATEMENT_TIMEOUT,
				new Backoff(Duration.ofMillis(5), Duration.ofMillis(50)), renewals);
		String key = "reply-late-claim-" + UUID.randomUUID();
		CountDownLatch fired = this.proxy.holdReplyToNext(FaultProxy.isQueryContaining("'RUNNING', "));
		CompletableFuture<Void> lifted = liftAfter(fired, 1_500); // past the claim's 1 s lease
		io.github.dblock.idempotency.IdempotencyProvider.Claimed claimed = store.claim(key, "reply-loss-test",
				Duration.ofSeconds(1), Duration.ofHours(1), System.nanoTime() + TimeUnit.SECONDS.toNanos(5));
		lifted.get(30, TimeUnit.SECONDS);
		assertThat(fired.getCount()).as("the claim's reply was held").isZero();
		assertThat(claimed.claim()).as("claimed again once the replies passed (record: %s)", claimed.record())
			.isNotNull();
		StoredClaim claim = (StoredClaim) claimed.claim();
		assertRunsByThisJvmsClock(claim, "the claim handed out");
		claim.succeed("\"done\"", String.class.getName(), null);
		assertThat(store.find(key)).hasValueSatisfying(
				(record) -> assertThat(record.status()).isEqualTo(IdempotencyStatus.SUCCEEDED));
		renewals.close();
	}

	@Test
	void anIdempotencyOutcomeWhoseReplyIsLateCountsAsRecorded() throws Exception {
		LeaseLockProvider renewals = leaseProvider(proxiedPool(), Duration.ofSeconds(2));
		IdempotencyStore store = new IdempotencyStore(this.proxied, LockNodes.TABLE, Duration.ofSeconds(2),
				new Backoff(Duration.ofMillis(5), Duration.ofMillis(50)), renewals);
		String key = "reply-late-idem-" + UUID.randomUUID();
		io.github.dblock.idempotency.IdempotencyProvider.HeldClaim claim = store
			.claim(key, "reply-loss-test", Duration.ofSeconds(20), Duration.ofHours(1), System.nanoTime())
			.claim();
		assertThat(claim).isNotNull();
		CountDownLatch fired = this.proxy.holdReplyToNext(FaultProxy.isQueryContaining("SET status = 'SUCCEEDED'"));
		CompletableFuture<Void> lifted = liftAfter(fired, 3_000);
		claim.succeed("\"done\"", String.class.getName(), null); // no exception: the record is ours and SUCCEEDED
		lifted.get(30, TimeUnit.SECONDS);
		assertThat(fired.getCount()).isZero();
		assertThat(store.find(key)).hasValueSatisfying((record) -> {
			assertThat(record.status()).isEqualTo(IdempotencyStatus.SUCCEEDED);
			assertThat(record.outcomeJson()).isEqualTo("\"done\"");
		});
		renewals.close();
	}

}
