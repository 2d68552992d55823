package io.github.dblock.testing;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import io.github.dblock.CurrentLock;
import io.github.dblock.Fencing;
import io.github.dblock.LockHandle;
import io.github.dblock.LockLostException;
import io.github.dblock.LockMode;
import io.github.dblock.LockNotAcquiredException;
import io.github.dblock.LockOptions;
import io.github.dblock.LockType;
import io.github.dblock.LockUpgradeException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.transaction.support.TransactionSynchronizationManager;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

/**
 * What {@link InMemoryLockTemplate} adds to the shared lock contract (InMemory*ContractTests): read/write locks,
 * leases on the store's controllable clock, renewal and loss, the faults, and OPTIMISTIC re-runs, each against the
 * documented behaviour of the real template. Nodes are templates on one store.
 */
class InMemoryLockTemplateTests {

	private final InMemoryLockStore store = new InMemoryLockStore();

	private final InMemoryLockTemplate nodeA = new InMemoryLockTemplate(this.store, "node-a");

	private final InMemoryLockTemplate nodeB = new InMemoryLockTemplate(this.store, "node-b");

	private final ExecutorService executor = Executors.newCachedThreadPool();

	@AfterEach
	void stop() {
		this.executor.shutdownNow();
	}

	private static LockOptions once() {
		return LockOptions.defaults().withWaitTime(Duration.ZERO);
	}

	// ---- leases and the clock ----

	@Test
	void aLeaseWithALeaseTimeOfItsOwnEndsWhenTheClockPassesItAndItsReleaseThrows() {
		LockHandle stale = this.nodeA.acquire("r", LockOptions.defaults().withLeaseTime(Duration.ofMinutes(10)));
		assertThat(this.nodeB.tryAcquire("r", once())).isEmpty();
		this.store.advanceClock(Duration.ofMinutes(9));
		assertThat(stale.isHeld()).as("a minute left").isTrue();
		assertThat(this.nodeB.tryAcquire("r", once())).isEmpty();
		this.store.advanceClock(Duration.ofMinutes(1));
		assertThat(stale.isHeld()).isFalse();
		try (LockHandle successor = this.nodeB.acquire("r", once())) {
			assertThat(successor.fencingToken()).isGreaterThan(stale.fencingToken());
			assertThatExceptionOfType(LockLostException.class).isThrownBy(stale::close)
				.satisfies((ex) -> assertThat(ex.getFencingToken()).isEqualTo(stale.fencingToken()));
			assertThat(this.store.isLocked("r")).as("the stale release changed nothing").isTrue();
		}
		assertThat(this.store.isLocked("r")).isFalse();
	}

	@Test
	void aLocalWaiterTakesTheLockSoonAfterTheClockEndedTheHoldersLease() throws Exception {
		LockHandle stale = this.nodeA.acquire("r", LockOptions.defaults().withLeaseTime(Duration.ofMinutes(10)));
		CountDownLatch waiting = new CountDownLatch(1);
		Future<Long> waiter = this.executor.submit(() -> {
			waiting.countDown();
			try (LockHandle lock = this.nodeA.acquire("r", LockOptions.defaults().withWaitTime(Duration.ofSeconds(20)))) {
				return lock.fencingToken();
			}
		});
		waiting.await();
		Thread.sleep(100);
		assertThat(waiter).isNotDone();
		long advancedAt = System.nanoTime();
		this.store.advanceClock(Duration.ofMinutes(10));
		assertThat(waiter.get(10, TimeUnit.SECONDS)).isGreaterThan(stale.fencingToken());
		assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - advancedAt)).as("not the wait time").isLessThan(5_000);
		assertThatExceptionOfType(LockLostException.class).isThrownBy(stale::close);
	}

	@Test
	void aRenewedLeaseOutlivesItsLeaseTimeAndIsLostWhenTheClockJumpsByItsWholeLease() throws Exception {
		LockHandle held = this.nodeA.acquire("r"); // default lease 30 s, renewed
		CountDownLatch lost = new CountDownLatch(1);
		AtomicReference<String> lostOn = new AtomicReference<>();
		held.onLost((handle) -> {
			lostOn.set(Thread.currentThread().getName());
			lost.countDown();
		});
		this.store.advanceClock(Duration.ofSeconds(15));
		this.store.advanceClock(Duration.ofSeconds(15));
		this.store.advanceClock(Duration.ofSeconds(15));
		assertThat(held.isHeld()).as("renewed between the jumps").isTrue();
		assertThat(this.nodeB.tryAcquire("r", once())).isEmpty();
		this.store.advanceClock(Duration.ofSeconds(30));
		assertThat(lost.await(5, TimeUnit.SECONDS)).as("onLost").isTrue();
		assertThat(lostOn.get()).as("on a background thread").isNotEqualTo(Thread.currentThread().getName());
		assertThat(held.isHeld()).isFalse();
		assertThatExceptionOfType(LockLostException.class).isThrownBy(held::close);
	}

	@Test
	void theStoresClockIsWhereLeasesAreMeasuredAndItCanBeShared() {
		Instant before = this.store.now();
		this.store.advanceClock(Duration.ofDays(1));
		assertThat(Duration.between(before, this.store.clock().instant())).isBetween(Duration.ofDays(1),
				Duration.ofDays(1).plusSeconds(5));
		try (LockHandle lock = this.nodeA.acquire("r", LockOptions.defaults().withLeaseTime(Duration.ofSeconds(7)))) {
			var row = this.store.find("r").orElseThrow();
			assertThat(Duration.between(row.acquiredAt(), row.expiresAt())).isEqualTo(Duration.ofSeconds(7));
			assertThat(row.holder()).startsWith("node-a [");
			assertThat(row.fencingToken()).isEqualTo(lock.fencingToken());
			assertThat(row.held()).isTrue();
		}
		assertThat(this.store.find("r").orElseThrow().held()).isFalse();
		assertThat(this.store.find("never")).isEmpty();
		assertThatIllegalArgumentException().isThrownBy(() -> this.store.advanceClock(Duration.ofSeconds(-1)));
	}

	@Test
	void extendMovesTheEndOfALeaseOfItsOwnAndRefusesARenewedOne() {
		LockHandle lease = this.nodeA.acquire("r", LockOptions.defaults().withLeaseTime(Duration.ofSeconds(10)));
		this.store.advanceClock(Duration.ofSeconds(8));
		lease.extend(Duration.ofSeconds(10));
		this.store.advanceClock(Duration.ofSeconds(8));
		assertThat(lease.isHeld()).isTrue();
		this.store.advanceClock(Duration.ofSeconds(3));
		assertThatExceptionOfType(LockLostException.class).isThrownBy(() -> lease.extend(Duration.ofSeconds(10)));
		assertThatExceptionOfType(LockLostException.class).isThrownBy(lease::close);
		try (LockHandle renewed = this.nodeA.acquire("s")) {
			assertThatIllegalStateException().isThrownBy(() -> renewed.extend(Duration.ofSeconds(10)))
				.withMessageContaining("renewed automatically");
		}
	}

	@Test
	void aMinimumHoldTimeKeepsTheLockTakenAfterAnEarlyRelease() {
		this.nodeA.acquire("r", LockOptions.defaults().withLeaseTime(Duration.ofMinutes(2))
			.withMinHoldTime(Duration.ofMinutes(1))).close();
		assertThat(this.store.isLocked("r")).isTrue();
		assertThatExceptionOfType(LockNotAcquiredException.class)
			.isThrownBy(() -> this.nodeB.acquire("r", once()))
			.satisfies((ex) -> assertThat(ex.getHolder()).contains("node-a"));
		this.store.advanceClock(Duration.ofMinutes(1));
		this.nodeB.acquire("r", once()).close();
	}

	// ---- the faults ----

	@Test
	void takeOverMakesTheLockBusyForItsLeaseWithAGreaterTokenAndTheFormerHolderFindsItLost() throws Exception {
		LockHandle held = this.nodeA.acquire("r"); // renewed: it learns of the loss at once
		CountDownLatch lost = new CountDownLatch(1);
		held.onLost((handle) -> lost.countDown());
		long token = this.store.takeOver("r", Duration.ofSeconds(5));
		assertThat(token).isGreaterThan(held.fencingToken());
		assertThat(lost.await(5, TimeUnit.SECONDS)).isTrue();
		assertThat(held.isHeld()).isFalse();
		assertThatExceptionOfType(LockNotAcquiredException.class)
			.isThrownBy(() -> this.nodeB.acquire("r", LockOptions.defaults().withWaitTime(Duration.ofMillis(50))))
			.satisfies((ex) -> assertThat(ex.getHolder()).startsWith(InMemoryLockStore.ANOTHER_OWNER + " (lease ends in "));
		// a fenced write of the former holder is refused by a resource that has seen the new owner's token
		long[] lastToken = { token };
		assertThatExceptionOfType(LockLostException.class)
			.isThrownBy(() -> Fencing.requireApplied(writeIfNewer(lastToken, held.fencingToken()), held));
		assertThatExceptionOfType(LockLostException.class).isThrownBy(held::close);
		this.store.advanceClock(Duration.ofSeconds(5));
		try (LockHandle next = this.nodeB.acquire("r", once())) {
			assertThat(next.fencingToken()).isGreaterThan(token);
		}
	}

	private static int writeIfNewer(long[] lastToken, long token) {
		if (token < lastToken[0]) {
			return 0;
		}
		lastToken[0] = token;
		return 1;
	}

	@Test
	void expireEndsTheLeaseNowALeaseOfItsOwnLearnsOfItAtItsRelease() {
		LockHandle held = this.nodeA.acquire("r", LockOptions.defaults().withLeaseTime(Duration.ofMinutes(5)));
		assertThat(this.store.expire("r")).isTrue();
		assertThat(held.isHeld()).as("this JVM cannot know before it asks the store").isTrue();
		try (LockHandle other = this.nodeB.acquire("r", once())) {
			assertThat(other.fencingToken()).isGreaterThan(held.fencingToken());
		}
		assertThatExceptionOfType(LockLostException.class).isThrownBy(held::close);
		assertThat(this.store.expire("r")).as("nothing held").isFalse();
	}

	@Test
	void aSimulatedLostLockIsReportedWithinASecond() throws Exception {
		long start = System.nanoTime();
		CountDownLatch lost = new CountDownLatch(1);
		assertThatExceptionOfType(LockLostException.class).isThrownBy(() -> this.nodeA.executeWithoutResult("job",
				(lock) -> {
					lock.onLost((handle) -> lost.countDown());
					this.store.expire("job"); // what a GC pause longer than the lease would do
				}));
		assertThat(lost.await(1, TimeUnit.SECONDS)).isTrue();
		assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(1_000);
		assertThat(this.store.isLocked("job")).isFalse();
	}

	@Test
	void endLeaseInMovesTheEndOfTheHoldersLease() {
		LockHandle held = this.nodeA.acquire("r", LockOptions.defaults().withLeaseTime(Duration.ofMinutes(5)));
		assertThat(this.store.endLeaseIn("r", Duration.ofSeconds(10))).isTrue();
		assertThat(this.nodeB.tryAcquire("r", once())).isEmpty();
		this.store.advanceClock(Duration.ofSeconds(10));
		this.nodeB.acquire("r", once()).close();
		assertThatExceptionOfType(LockLostException.class).isThrownBy(held::close);
		assertThat(this.store.endLeaseIn("r", Duration.ZERO)).isFalse();
	}

	@Test
	void aStallMakesTheNextAcquisitionWaitWhateverItsWaitTime() {
		this.store.stall("r", Duration.ofMillis(300));
		long start = System.nanoTime();
		this.nodeA.acquire("r", once()).close();
		assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isBetween(250L, 5_000L);
		start = System.nanoTime();
		this.nodeA.acquire("r", once()).close();
		assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).as("over").isLessThan(250L);
	}

	@Test
	void aPessimisticHoldEndedByAFaultIsLikeADroppedConnection() throws Exception {
		LockHandle held = this.nodeA.acquire("r", LockOptions.defaults().withMode(LockMode.PESSIMISTIC));
		assertThatExceptionOfType(LockNotAcquiredException.class)
			.isThrownBy(() -> this.nodeB.acquire("r", once()))
			.satisfies((ex) -> assertThat(ex.getHolder()).contains("row lock").contains("node-a"));
		CountDownLatch lost = new CountDownLatch(1);
		held.onLost((handle) -> lost.countDown());
		assertThat(this.store.expire("r")).isTrue();
		assertThat(lost.await(5, TimeUnit.SECONDS)).isTrue();
		this.nodeB.acquire("r", once()).close();
		assertThatExceptionOfType(LockLostException.class).isThrownBy(held::close);
	}

	@Test
	void aPessimisticWaitIsRoundedUpToWholeSecondsAsTheServersLockWait() {
		try (LockHandle held = this.nodeA.acquire("r", LockOptions.defaults().withMode(LockMode.PESSIMISTIC))) {
			long start = System.nanoTime();
			assertThatExceptionOfType(LockNotAcquiredException.class).isThrownBy(() -> this.nodeB.acquire("r",
					LockOptions.defaults().withMode(LockMode.PESSIMISTIC).withWaitTime(Duration.ofMillis(100))));
			assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isBetween(950L, 5_000L);
		}
	}

	// ---- read/write locks ----

	@Test
	void readersShareWritersExcludeAndTheReadWriteLockIsNotTheExclusiveOne() throws Exception {
		LockOptions read = LockOptions.defaults().withType(LockType.READ).withWaitTime(Duration.ZERO);
		LockOptions write = LockOptions.defaults().withType(LockType.WRITE).withWaitTime(Duration.ZERO);
		try (LockHandle reader = this.nodeA.acquire("rw", read); LockHandle other = this.nodeB.acquire("rw", read);
				LockHandle exclusive = this.nodeB.acquire("rw", once())) {
			assertThat(other.fencingToken()).isGreaterThan(reader.fencingToken());
			assertThat(reader.type()).isEqualTo(LockType.READ);
			assertThat(this.executor.submit(() -> this.nodeB.tryAcquire("rw", write)).get(10, TimeUnit.SECONDS))
				.as("a writer of another thread").isEmpty();
			assertThatExceptionOfType(LockUpgradeException.class).isThrownBy(() -> this.nodeA.acquire("rw", write));
		}
		try (LockHandle writer = this.nodeA.acquire("rw", write)) {
			assertThat(this.nodeB.tryAcquire("rw", read)).isEmpty();
			try (LockHandle ownRead = this.nodeA.acquire("rw", read)) {
				assertThat(ownRead.fencingToken()).as("covered by its write lock").isEqualTo(writer.fencingToken());
			}
		}
		assertThat(this.store.isLocked("rw")).isFalse();
	}

	@Test
	void aWaitingWriterKeepsNewReadersOutUntilItGetsIn() throws Exception {
		LockOptions read = LockOptions.defaults().withType(LockType.READ);
		LockHandle reader = this.nodeA.acquire("rw", read);
		CountDownLatch waiting = new CountDownLatch(1);
		Future<Long> writer = this.executor.submit(() -> {
			waiting.countDown();
			try (LockHandle lock = this.nodeB.acquire("rw",
					LockOptions.defaults().withType(LockType.WRITE).withWaitTime(Duration.ofSeconds(20)))) {
				return lock.fencingToken();
			}
		});
		waiting.await();
		Thread.sleep(200);
		assertThatExceptionOfType(LockNotAcquiredException.class)
			.isThrownBy(() -> this.nodeB.acquire("rw", read.withWaitTime(Duration.ZERO)))
			.satisfies((ex) -> assertThat(ex.getHolder()).contains("writer waiting").contains("node-b"));
		reader.close();
		assertThat(writer.get(10, TimeUnit.SECONDS)).isGreaterThan(reader.fencingToken());
	}

	@Test
	void takeOverAsAWriterEndsEveryReadWriteHoldAndExpireEndsReaders() throws Exception {
		LockOptions read = LockOptions.defaults().withType(LockType.READ);
		LockHandle reader = this.nodeA.acquire("rw", read);
		CountDownLatch lost = new CountDownLatch(1);
		reader.onLost((handle) -> lost.countDown());
		long token = this.store.takeOver("rw", LockType.WRITE, Duration.ofSeconds(1));
		assertThat(token).isGreaterThan(reader.fencingToken());
		assertThat(lost.await(5, TimeUnit.SECONDS)).isTrue();
		assertThat(this.nodeB.tryAcquire("rw", read.withWaitTime(Duration.ZERO))).isEmpty();
		assertThat(this.store.expire("rw")).isTrue();
		this.nodeB.acquire("rw", read.withWaitTime(Duration.ZERO)).close();
		assertThatExceptionOfType(LockLostException.class).isThrownBy(reader::close);
	}

	// ---- OPTIMISTIC ----

	@Test
	void optimisticWorkWhoseVersionMovedRunsAgainAndSeesTheNewVersion() {
		LockOptions optimistic = LockOptions.defaults().withMode(LockMode.OPTIMISTIC);
		AtomicInteger runs = new AtomicInteger();
		long[] seen = new long[2];
		String result = this.nodeA.execute("o", optimistic, (lock) -> {
			int run = runs.getAndIncrement();
			seen[run] = lock.fencingToken();
			assertThat(CurrentLock.get("o")).contains(lock);
			if (run == 0) {
				this.nodeB.acquire("o", once()).close(); // another owner took the lock meanwhile
			}
			return "done";
		});
		assertThat(result).isEqualTo("done");
		assertThat(runs).hasValue(2);
		assertThat(seen[1]).isGreaterThan(seen[0]);
		assertThatIllegalArgumentException().isThrownBy(() -> this.nodeA.acquire("o", optimistic))
			.withMessageContaining("execute");
	}

	@Test
	void optimisticWorkGivesUpAfterTheMaximumAttemptsAndIsRefusedInsideATransaction() {
		LockOptions optimistic = LockOptions.defaults().withMode(LockMode.OPTIMISTIC);
		AtomicInteger runs = new AtomicInteger();
		assertThatExceptionOfType(LockNotAcquiredException.class).isThrownBy(() -> this.nodeA.execute("o", optimistic,
				(lock) -> {
					runs.incrementAndGet();
					this.store.takeOver("o", Duration.ofMillis(10));
					return null;
				}));
		assertThat(runs).hasValue(InMemoryLockTemplate.DEFAULT_OPTIMISTIC_MAX_ATTEMPTS);
		TransactionSynchronizationManager.setActualTransactionActive(true);
		try {
			assertThatIllegalStateException()
				.isThrownBy(() -> this.nodeA.execute("o2", optimistic, (lock) -> "never"))
				.withMessageContaining("inside an active transaction");
		}
		finally {
			TransactionSynchronizationManager.setActualTransactionActive(false);
		}
	}

	@Test
	void argumentsAreCheckedAsByTheRealTemplate() {
		assertThatIllegalArgumentException().isThrownBy(() -> this.store.takeOver("r", Duration.ZERO));
		assertThatIllegalArgumentException().isThrownBy(() -> this.store.stall(" ", Duration.ofSeconds(1)));
		assertThatIllegalArgumentException().isThrownBy(() -> this.store.endLeaseIn("r", Duration.ofSeconds(-1)));
		assertThatIllegalArgumentException().isThrownBy(() -> this.nodeA.acquire("r",
				LockOptions.defaults().withType(LockType.READ).withMode(LockMode.PESSIMISTIC)));
		assertThatIllegalArgumentException().isThrownBy(() -> new InMemoryLockTemplate(null, "x"));
		assertThatIllegalArgumentException().isThrownBy(() -> new InMemoryLockTemplate(this.store, " "));
	}

}
