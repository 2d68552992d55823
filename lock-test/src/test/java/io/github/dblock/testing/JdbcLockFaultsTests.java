package io.github.dblock.testing;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.CommitValidation;
import io.github.dblock.Fencing;
import io.github.dblock.LockHandle;
import io.github.dblock.LockLostException;
import io.github.dblock.LockMode;
import io.github.dblock.LockNotAcquiredException;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.LockType;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

/**
 * {@link JdbcLockFaults} on the real lock table (the shared test database): each fault is found by the library's
 * own statements, the way the real event would be, and a test that simulates a lost lock takes well under a second.
 * Nodes A and B are templates with their own providers meeting in the table; "fast" has a default lease of 1 s
 * (renewed every third of it).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class JdbcLockFaultsTests {

	private HikariDataSource dataSource;

	private JdbcLockFaults faults;

	private LockTemplate nodeA;

	private LockTemplate nodeB;

	private LockTemplate fast;

	private final ExecutorService executor = Executors.newCachedThreadPool();

	@BeforeAll
	void start() {
		this.dataSource = TestDatabase.get().newDataSource(12);
		LockNodes.migrateOnce(this.dataSource);
		this.faults = new JdbcLockFaults(this.dataSource, LockNodes.TABLE, Duration.ofSeconds(2));
		this.nodeA = LockNodes.node(LockMode.LEASE, "node-a", this.dataSource);
		this.nodeB = LockNodes.node(LockMode.LEASE, "node-b", this.dataSource);
		this.fast = new LockTemplate(List.of(LockNodes.provider(LockMode.LEASE, this.dataSource)), LockMode.LEASE,
				Duration.ZERO, Duration.ofSeconds(1), "node-fast");
		TestDatabase.get().execute("CREATE TABLE IF NOT EXISTS lock_kit_account (id VARCHAR(64) PRIMARY KEY,"
				+ " balance BIGINT NOT NULL, fencing_token BIGINT NOT NULL)");
	}

	@AfterAll
	void stop() {
		this.executor.shutdownNow();
		this.faults.close();
		this.dataSource.close();
	}

	private static String newResource() {
		return "faults-" + UUID.randomUUID();
	}

	private static LockOptions ownLease() {
		return LockOptions.defaults().withLeaseTime(Duration.ofMinutes(5));
	}

	private static long millisSince(long start) {
		return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
	}

	@Test
	void expireLetsAnotherNodeTakeTheLockAtOnceAndTheHoldersReleaseThrows() {
		String resource = newResource();
		long start = System.nanoTime();
		LockHandle held = this.nodeA.acquire(resource, ownLease());
		assertThat(this.faults.isLocked(resource)).isTrue();
		assertThat(this.faults.expire(resource)).isTrue();
		assertThat(this.faults.isLocked(resource)).isFalse();
		try (LockHandle other = this.nodeB.acquire(resource)) {
			assertThat(other.fencingToken()).isGreaterThan(held.fencingToken());
		}
		assertThatExceptionOfType(LockLostException.class).isThrownBy(held::close)
			.satisfies((ex) -> assertThat(ex.getFencingToken()).isEqualTo(held.fencingToken()));
		assertThat(this.faults.expire(resource)).as("nothing held any more").isFalse();
		assertThat(millisSince(start)).isLessThan(1_000);
	}

	@Test
	void aRenewedHolderIsToldOfTheLossAtItsNextRenewalWithinASecond() throws Exception {
		String resource = newResource();
		LockHandle held = this.fast.acquire(resource);
		CountDownLatch lost = new CountDownLatch(1);
		held.onLost((handle) -> lost.countDown());
		long start = System.nanoTime();
		this.faults.expire(resource);
		assertThat(lost.await(5, TimeUnit.SECONDS)).isTrue();
		assertThat(millisSince(start)).as("a third of the 1 s lease, plus a statement").isLessThan(1_000);
		assertThat(held.isHeld()).isFalse();
		assertThatExceptionOfType(LockLostException.class).isThrownBy(held::close);
	}

	@Test
	void takeOverMakesTheLockBusyWithAGreaterTokenAndFencesTheFormerHoldersWrites() {
		String resource = newResource();
		new JdbcTemplate(this.dataSource).update("INSERT INTO lock_kit_account VALUES (?, 0, 0)", resource);
		LockHandle held = this.nodeA.acquire(resource, ownLease());
		long token = this.faults.takeOver(resource, Duration.ofSeconds(2));
		assertThat(token).isGreaterThan(held.fencingToken());
		assertThatExceptionOfType(LockNotAcquiredException.class)
			.isThrownBy(() -> this.nodeB.acquire(resource, LockOptions.defaults().withWaitTime(Duration.ofMillis(100))))
			.satisfies((ex) -> assertThat(ex.getHolder()).startsWith("lock-test (another owner) (lease ends in "));
		// the new owner writes with its token; the former holder, unaware, then tries with its own
		assertThat(fencedWrite(resource, 10, token)).isEqualTo(1);
		assertThatExceptionOfType(LockLostException.class)
			.isThrownBy(() -> Fencing.requireApplied(fencedWrite(resource, 99, held.fencingToken()), held));
		assertThatExceptionOfType(LockLostException.class).isThrownBy(held::close);
		assertThat(new JdbcTemplate(this.dataSource).queryForObject(
				"SELECT balance FROM lock_kit_account WHERE id = ?", Long.class, resource)).isEqualTo(10);
		try (LockHandle next = this.nodeB.acquire(resource, LockOptions.defaults().withWaitTime(Duration.ofSeconds(10)))) {
			assertThat(next.fencingToken()).as("after the other owner's lease").isGreaterThan(token);
		}
	}

	private int fencedWrite(String id, long balance, long token) {
		return new JdbcTemplate(this.dataSource).update("UPDATE lock_kit_account SET balance = ?, fencing_token = ?"
				+ " WHERE id = ? AND fencing_token <= ?", balance, token, id, token);
	}

	@Test
	void takeOverOfANeverUsedResourceMakesItsFirstAcquisitionBusy() {
		String resource = newResource();
		long token = this.faults.takeOver(resource, Duration.ofSeconds(1));
		assertThat(this.nodeA.tryAcquire(resource)).isEmpty();
		try (LockHandle lock = this.nodeA.acquire(resource, LockOptions.defaults().withWaitTime(Duration.ofSeconds(10)))) {
			assertThat(lock.fencingToken()).isGreaterThan(token);
		}
	}

	@Test
	void aTransactionThatRunsUnderALockTakenOverIsRolledBackAtItsCommit() {
		String resource = newResource();
		DataSourceTransactionManager manager = new DataSourceTransactionManager(this.dataSource);
		manager.addListener(new CommitValidation());
		TransactionTemplate transaction = new TransactionTemplate(manager);
		long start = System.nanoTime();
		assertThatExceptionOfType(LockLostException.class).isThrownBy(() -> transaction.executeWithoutResult(
				(status) -> this.nodeA.executeWithoutResult(resource, ownLease(), (lock) -> {
					new JdbcTemplate(this.dataSource).update("INSERT INTO lock_kit_account VALUES (?, 1, ?)", resource,
							lock.fencingToken());
					this.faults.takeOver(resource, Duration.ofMillis(200));
				})));
		assertThat(new JdbcTemplate(this.dataSource).queryForObject(
				"SELECT COUNT(*) FROM lock_kit_account WHERE id = ?", Long.class, resource)).isZero();
		assertThat(millisSince(start)).isLessThan(1_000);
	}

	@Test
	void endLeaseInMovesTheEndOfTheHoldersLease() throws Exception {
		String resource = newResource();
		LockHandle held = this.nodeA.acquire(resource, ownLease());
		assertThat(this.faults.endLeaseIn(resource, Duration.ofMillis(300))).isTrue();
		assertThat(this.nodeB.tryAcquire(resource)).as("still running").isEmpty();
		long start = System.nanoTime();
		try (LockHandle other = this.nodeB.acquire(resource, LockOptions.defaults().withWaitTime(Duration.ofSeconds(10)))) {
			assertThat(millisSince(start)).isLessThan(5_000);
			assertThat(other.fencingToken()).isGreaterThan(held.fencingToken());
		}
		assertThatExceptionOfType(LockLostException.class).isThrownBy(held::close);
	}

	@Test
	void aStallMakesTheNextAcquisitionWaitForItWhateverItsWaitTime() {
		String resource = newResource();
		this.faults.stall(resource, Duration.ofMillis(800));
		long start = System.nanoTime();
		try (LockHandle lock = this.nodeA.acquire(resource)) { // a single attempt: wait time 0
			assertThat(millisSince(start)).isBetween(500L, 5_000L);
		}
		start = System.nanoTime();
		this.nodeA.acquire(resource).close();
		assertThat(millisSince(start)).as("the stall is over").isLessThan(500L);
	}

	@Test
	void isLockedSeesLeasesMinimumHoldsReadWriteHoldsAndAnOpenPessimisticRowLock() throws Exception {
		String resource = newResource();
		assertThat(this.faults.isLocked(resource)).isFalse();
		// a minimum hold far longer than a loaded machine can stall between the release and the check
		this.nodeA.acquire(resource, LockOptions.defaults().withLeaseTime(Duration.ofMinutes(2))
			.withMinHoldTime(Duration.ofMinutes(1))).close();
		assertThat(this.faults.isLocked(resource)).as("minimum hold").isTrue();
		this.faults.expire(resource);
		assertThat(this.faults.isLocked(resource)).isFalse();
		try (LockHandle read = this.nodeA.acquire(resource, LockOptions.defaults().withType(LockType.READ))) {
			assertThat(this.faults.isLocked(resource)).as("read lock").isTrue();
		}
		assertThat(this.faults.isLocked(resource)).isFalse();
		LockTemplate pessimistic = LockNodes.node(LockMode.PESSIMISTIC, "node-p", this.dataSource);
		Future<?> holder = this.executor.submit(() -> {
			try (LockHandle lock = pessimistic.acquire(resource)) {
				assertThat(this.faults.isLocked(resource)).as("open row lock").isTrue();
				assertThatIllegalStateException().isThrownBy(() -> this.faults.expire(resource))
					.withMessageContaining("ends only with its transaction");
			}
			return null;
		});
		holder.get(30, TimeUnit.SECONDS);
		assertThat(this.faults.isLocked(resource)).isFalse();
	}

	@Test
	void takeOverOfAReadWriteLockAsAWriterEndsItsReaders() {
		String resource = newResource();
		LockOptions read = LockOptions.defaults().withType(LockType.READ).withLeaseTime(Duration.ofMinutes(5));
		LockHandle reader = this.nodeA.acquire(resource, read);
		long token = this.faults.takeOver(resource, LockType.WRITE, Duration.ofSeconds(1));
		assertThat(token).isGreaterThan(reader.fencingToken());
		assertThat(this.nodeB.tryAcquire(resource, read.withWaitTime(Duration.ZERO))).isEmpty();
		assertThatExceptionOfType(LockLostException.class).isThrownBy(reader::close);
		long readerToken = this.faults.takeOver(resource, LockType.READ, Duration.ofSeconds(1));
		assertThat(readerToken).isGreaterThan(token);
		try (LockHandle otherReader = this.nodeB.acquire(resource, read.withWaitTime(Duration.ZERO))) {
			assertThat(otherReader.fencingToken()).as("readers share; the writer was ended").isGreaterThan(readerToken);
		}
	}

}
