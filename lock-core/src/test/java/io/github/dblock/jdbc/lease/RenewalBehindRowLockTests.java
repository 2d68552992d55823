package io.github.dblock.jdbc.lease;

import io.github.dblock.jdbc.sql.LockRows;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockType;
import io.github.dblock.idempotency.IdempotencyProvider;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.Pauses;
import io.github.dblock.test.ServerClockControl;
import io.github.dblock.test.TestDatabase;
import io.github.dblock.wait.Backoff;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A renewal that waits for a row lock until after its lease has ended on the server must find the lease over, not
 * extend it: MariaDB and MySQL fix {@code UTC_TIMESTAMP()} when a statement starts, so a renewal judged by its own
 * statement's clock once it gets the row compares the lease end with a time before it waited. The realistic blocker
 * is the holder's own commit check (a WRITE hold's check locks the resource's {@code _rw} row and its holder row; an
 * exclusive lease's check, or a PESSIMISTIC holder of the same resource, locks the lock row) while its transaction
 * commits slowly; a test connection locks the same rows here. The same holds for a semaphore permit (behind an
 * acquisition attempt of its pool, which locks the pool row and then every holder row) and an idempotency claim
 * (behind a completion in another caller's transaction, which keeps the record locked until that transaction ends).
 * <p>
 * The lock statements read a server clock the test controls ({@link ServerClockControl}): the test moves it past the
 * lease end while the renewal waits, so that the outcome is the database's answer to the renewal and nothing else
 * (with real clocks this JVM's own loss timer would fire at the lease end too, and hide a renewal that revives an
 * ended lease unless the timer runs late). The guarantee checked: once a competitor has been granted the lock, the
 * old holder's renewal reports the lease lost ({@code isLost()}, {@code onLost}); it never goes on as a valid holder
 * beside the competitor. Seen failing before the renewal locked its rows first: the writer's renewal reported
 * success beside the granted reader, and the exclusive lease's renewal beside the other owner's take; likewise the
 * permit's renewal beside the other node's permit, and the claim's renewal beside the second claimant's claim.
 */
class RenewalBehindRowLockTests {

	/**
	 * Renewed (no lease time of the caller's own): the first renewal goes out a third of it (10 s) after the take, and
	 * this JVM's own clock ends it well after the test has its answer, even on a loaded machine.
	 */
	private static final Duration LEASE = Duration.ofSeconds(30);

	/** Long enough that the waiting renewal is not cut off by its statement timeout while the test sets up. */
	private static final Duration STATEMENT_TIMEOUT = Duration.ofSeconds(30);

	/** For the blocking transaction and for watching the server's lock waits; never used by lock code. */
	private static HikariDataSource pool;

	private final ExecutorService executor = Executors.newCachedThreadPool();

	/** The data source of both nodes: their sessions read the controlled clock. */
	private ServerClockControl clock;

	@BeforeAll
	static void setUp() {
		pool = TestDatabase.get().newDataSource(3);
		LockNodes.migrateOnce(pool);
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
		this.executor.shutdownNow();
		this.clock.close();
	}

	private LeaseLockProvider node() {
		return new LeaseLockProvider(this.clock, LockNodes.TABLE, LockNodes.dialect(this.clock), STATEMENT_TIMEOUT,
				Duration.ofMillis(5), Duration.ofMillis(50));
	}

	private static LockRequest renewed(String resource, Duration wait, String holder) {
		return new LockRequest(resource, LEASE, true, Duration.ZERO, System.nanoTime() + wait.toNanos(), holder);
	}

	@Test
	void aWritersRenewalThatWaitsPastTheLeaseEndBehindItsCommitCheckFindsTheLeaseLostAndTheReaderIsGranted()
			throws Exception {
		String resource = "renewal-behind-check-rw-" + UUID.randomUUID();
		try (LeaseLockProvider writerNode = node(); LeaseLockProvider readerNode = node()) {
			HeldLock writer = writerNode.acquire(renewed(resource, Duration.ZERO, "writer"), LockType.WRITE).lock();
			assertThat(writer).as("an uncontended write lock").isNotNull();
			AtomicBoolean told = new AtomicBoolean();
			writer.onLost(() -> told.set(true));
			Future<HeldLock> reader;
			try (Connection blocker = pool.getConnection()) {
				blocker.setAutoCommit(false);
				// what the writer's commit check locks, held as by a transaction that commits slowly
				lockRow(blocker, "SELECT 1 FROM distributed_lock_rw WHERE resource = ? FOR UPDATE", resource, null);
				lockRow(blocker, "SELECT 1 FROM distributed_lock_rw_hold WHERE resource = ? AND owner_token = ? FOR UPDATE",
						resource, writer.ownerToken());
				awaitLockWaits(1, "the writer's renewal waits for a row the blocking transaction locked");
				this.clock.advance(LEASE.plusSeconds(1)); // the write lease ends on the server meanwhile
				reader = this.executor.submit(() -> readerNode
					.acquire(renewed(resource, Duration.ofSeconds(20), "reader"), LockType.READ)
					.lock());
				Pauses.sleep(500); // the reader's acquisition queues for the resource row (it is granted either way)
				blocker.commit();
			}
			HeldLock read = reader.get(30, TimeUnit.SECONDS);
			assertThat(read).as("the reader is granted once the write lease has ended").isNotNull();
			assertThat(Pauses.await(Duration.ofSeconds(3), writer::isLost))
				.as("the writer's renewal, granted its row after the lease ended, reports the write lock lost")
				.isTrue();
			assertThat(Pauses.await(Duration.ofSeconds(3), told::get))
				.as("onLost ran (the listeners run right after the lease is marked lost, on the renewal's thread)")
				.isTrue();
			assertThat(System.nanoTime() - writer.validUntilNanos())
				.as("told by the renewal, before this JVM's own clock ended the lease")
				.isNegative();
			read.release();
		}
	}

	@Test
	void anExclusiveLeasesRenewalThatWaitsPastTheLeaseEndBehindARowLockFindsTheLeaseLost() throws Exception {
		String resource = "renewal-behind-check-lease-" + UUID.randomUUID();
		try (LeaseLockProvider holderNode = node(); LeaseLockProvider otherNode = node()) {
			HeldLock holder = holderNode.acquire(renewed(resource, Duration.ZERO, "holder")).lock();
			assertThat(holder).as("an uncontended lease").isNotNull();
			AtomicBoolean told = new AtomicBoolean();
			holder.onLost(() -> told.set(true));
			Future<HeldLock> other;
			try (Connection blocker = pool.getConnection()) {
				blocker.setAutoCommit(false);
				// what the holder's commit check (or a PESSIMISTIC holder of the resource) locks
				lockRow(blocker, "SELECT 1 FROM distributed_lock WHERE resource = ? FOR UPDATE", resource, null);
				awaitLockWaits(1, "the holder's renewal waits for the row the blocking transaction locked");
				this.clock.advance(LEASE.plusSeconds(1)); // the lease ends on the server meanwhile
				other = this.executor.submit(() -> otherNode.acquire(renewed(resource, Duration.ofSeconds(20), "other"))
					.lock());
				Pauses.sleep(500); // the other node's take queues for the row (it is granted either way)
				blocker.commit();
			}
			HeldLock taken = other.get(30, TimeUnit.SECONDS);
			assertThat(taken).as("the other node takes the lease once it has ended").isNotNull();
			assertThat(Pauses.await(Duration.ofSeconds(3), holder::isLost))
				.as("the holder's renewal, granted its row after the lease ended, reports the lock lost")
				.isTrue();
			assertThat(Pauses.await(Duration.ofSeconds(3), told::get))
				.as("onLost ran (the listeners run right after the lease is marked lost, on the renewal's thread)")
				.isTrue();
			assertThat(System.nanoTime() - holder.validUntilNanos())
				.as("told by the renewal, before this JVM's own clock ended the lease")
				.isNegative();
			taken.release();
		}
	}

	@Test
	void aPermitsRenewalThatWaitsPastTheLeaseEndBehindAnAcquisitionFindsThePermitLostAndTheOtherNodeIsAdmitted()
			throws Exception {
		String name = "renewal-behind-check-sem-" + UUID.randomUUID();
		try (LeaseLockProvider holderRenewals = node(); LeaseLockProvider otherRenewals = node()) {
			JdbcSemaphoreProvider holderNode = semaphores(holderRenewals, name);
			JdbcSemaphoreProvider otherNode = semaphores(otherRenewals, name);
			HeldLock permit = holderNode.acquire(renewed(name, Duration.ZERO, "holder")).lock();
			assertThat(permit).as("the only permit of the pool").isNotNull();
			AtomicBoolean told = new AtomicBoolean();
			permit.onLost(() -> told.set(true));
			Future<HeldLock> other;
			try (Connection blocker = pool.getConnection()) {
				blocker.setAutoCommit(false);
				// what an acquisition attempt of the pool locks (the pool row, then every holder row), held as by an
				// attempt whose transaction commits slowly
				lockRow(blocker, "SELECT 1 FROM distributed_lock_sem WHERE name = ? FOR UPDATE", name, null);
				lockRow(blocker, "SELECT 1 FROM distributed_lock_sem_hold WHERE name = ? FOR UPDATE", name, null);
				awaitLockWaits(1, "the permit's renewal waits for a row the blocking transaction locked");
				this.clock.advance(LEASE.plusSeconds(1)); // the permit's lease ends on the server meanwhile
				other = this.executor.submit(() -> otherNode.acquire(renewed(name, Duration.ofSeconds(20), "other"))
					.lock());
				Pauses.sleep(500); // the other node's attempt queues for the pool row (it is admitted either way)
				blocker.commit();
			}
			HeldLock taken = other.get(30, TimeUnit.SECONDS);
			assertThat(taken).as("the other node is admitted once the permit's lease has ended").isNotNull();
			assertThat(Pauses.await(Duration.ofSeconds(3), permit::isLost))
				.as("the permit's renewal, granted its rows after the lease ended, reports the permit lost")
				.isTrue();
			assertThat(Pauses.await(Duration.ofSeconds(3), told::get))
				.as("onLost ran (the listeners run right after the lease is marked lost, on the renewal's thread)")
				.isTrue();
			assertThat(System.nanoTime() - permit.validUntilNanos())
				.as("told by the renewal, before this JVM's own clock ended the lease")
				.isNegative();
			taken.release();
		}
	}

	/**
	 * The realistic blocker: a completion statement ({@code UPDATE ... WHERE idem_key = ? AND owner_token = ?}) in
	 * the transaction of a caller whose own claim was taken over keeps the record locked until that transaction ends
	 * (in REPEATABLE READ even though it matched nothing); a test connection locks the record here. (A claim's own
	 * completion in a transaction locks the record too, but the claim's renewal has stopped by then, and a renewal in
	 * flight is ignored.)
	 */
	@Test
	void aClaimsRenewalThatWaitsPastTheLeaseEndBehindAnotherTransactionFindsTheClaimLostAndTheSecondClaimantRuns()
			throws Exception {
		String key = "renewal-behind-check-idem-" + UUID.randomUUID();
		try (LeaseLockProvider firstRenewals = node(); LeaseLockProvider secondRenewals = node()) {
			IdempotencyStore firstNode = idempotency(firstRenewals);
			IdempotencyStore secondNode = idempotency(secondRenewals);
			IdempotencyProvider.HeldClaim claim = firstNode
				.claim(key, "first", LEASE, Duration.ofHours(1), System.nanoTime() + TimeUnit.SECONDS.toNanos(5))
				.claim();
			assertThat(claim).as("a new key").isNotNull();
			AtomicBoolean told = new AtomicBoolean();
			claim.onLost(() -> told.set(true));
			Future<IdempotencyProvider.Claimed> second;
			try (Connection blocker = pool.getConnection()) {
				blocker.setAutoCommit(false);
				lockRow(blocker, "SELECT 1 FROM distributed_lock_idem WHERE idem_key = ? FOR UPDATE", key, null);
				awaitLockWaits(1, "the claim's renewal waits for the record the blocking transaction locked");
				this.clock.advance(LEASE.plusSeconds(1)); // the claim's running lease ends on the server meanwhile
				second = this.executor.submit(() -> secondNode.claim(key, "second", LEASE, Duration.ofHours(1),
						System.nanoTime() + TimeUnit.SECONDS.toNanos(20)));
				Pauses.sleep(500); // the second claimant's insert queues for the record (it claims it either way)
				blocker.rollback();
			}
			IdempotencyProvider.HeldClaim taken = second.get(30, TimeUnit.SECONDS).claim();
			assertThat(taken).as("the second claimant takes the record over once the running lease has ended")
				.isNotNull();
			assertThat(Pauses.await(Duration.ofSeconds(3), claim::isLost))
				.as("the claim's renewal, granted the record after the lease ended, reports the claim lost")
				.isTrue();
			assertThat(Pauses.await(Duration.ofSeconds(3), told::get))
				.as("onLost ran (the listeners run right after the lease is marked lost, on the renewal's thread)")
				.isTrue();
			assertThat(System.nanoTime() - claim.validUntilNanos())
				.as("told by the renewal, before this JVM's own clock ended the lease")
				.isNegative();
			taken.release();
		}
	}

	/** A semaphore node whose pool {@code name} has one permit. */
	private JdbcSemaphoreProvider semaphores(LeaseLockProvider renewals, String name) {
		return new JdbcSemaphoreProvider(this.clock, LockNodes.TABLE, STATEMENT_TIMEOUT,
				new Backoff(Duration.ofMillis(5), Duration.ofMillis(50)), renewals, Map.of(name, 1));
	}

	private IdempotencyStore idempotency(LeaseLockProvider renewals) {
		return new IdempotencyStore(this.clock, LockNodes.TABLE, STATEMENT_TIMEOUT,
				new Backoff(Duration.ofMillis(5), Duration.ofMillis(50)), renewals);
	}

	private static void lockRow(Connection connection, String sql, String resource, String owner) throws Exception {
		try (PreparedStatement ps = connection.prepareStatement(sql)) {
			ps.setBytes(1, LockRows.bytes(resource));
			if (owner != null) {
				ps.setString(2, owner);
			}
			try (ResultSet rs = ps.executeQuery()) {
				assertThat(rs.next()).as("the row to lock exists: %s", sql).isTrue();
			}
		}
	}

	/**
	 * Waits (at most 25 s) until {@code count} statements of this database on the lock tables have run for 300 ms or
	 * more: waiting for a row lock, as nothing else makes these primary-key statements slow. (The process list, not
	 * {@code information_schema.INNODB_TRX}: MariaDB does not list there every autocommit statement that waits.)
	 */
	private static void awaitLockWaits(int count, String what) {
		JdbcTemplate jdbc = new JdbcTemplate(pool);
		String waiting = """
				SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND ID <> CONNECTION_ID()
				AND COMMAND = 'Query' AND INFO LIKE '%distributed_lock%' AND TIME_MS >= 300""";
		assertThat(Pauses.await(Duration.ofSeconds(25), () -> jdbc.queryForObject(waiting, Integer.class) >= count))
			.as("%s; statements: %s", what, jdbc.queryForList("""
					SELECT ID, TIME_MS, STATE, INFO FROM information_schema.PROCESSLIST WHERE DB = DATABASE()"""))
			.isTrue();
	}

}
