package io.github.dblock.contract;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.dblock.LockHandle;
import io.github.dblock.LockLostException;
import io.github.dblock.LockMode;
import io.github.dblock.LockNotAcquiredException;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.LockType;
import io.github.dblock.LockUpgradeException;
import io.github.dblock.jdbc.admin.LockTableCleaner;
import io.github.dblock.spi.LockProvider;
import io.github.dblock.test.nodes.LockNodes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * The read/write lock contract ({@link LockType#READ}, {@link LockType#WRITE} in {@link LockMode#LEASE}) against the
 * real database, with real threads: readers overlap (proven with a barrier every reader must reach while holding),
 * writers exclude readers and writers, writers are not starved by a stream of readers, fencing tokens increase per
 * resource across both, per-thread reentrancy, no upgrade, expiry of crashed holders, loss detection, cleanup. "Nodes"
 * are separate {@link LockTemplate}s meeting only in the database; threads of one node are separate owners too.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class ReadWriteLockContractTests {

	private LockNodes nodes;

	private LockTemplate nodeA;

	private LockTemplate nodeB;

	private JdbcTemplate jdbc;

	@BeforeAll
	void startNodes() {
		this.nodes = new LockNodes(32);
		this.nodeA = this.nodes.node(LockMode.LEASE, "node-a");
		this.nodeB = this.nodes.node(LockMode.LEASE, "node-b");
		this.jdbc = new JdbcTemplate(this.nodes.dataSource());
	}

	@AfterAll
	void stopNodes() {
		this.nodes.close();
	}

	private static String newResource() {
		return "rw-" + UUID.randomUUID();
	}

	private static LockOptions read() {
		return LockOptions.defaults().withType(LockType.READ);
	}

	private static LockOptions write() {
		return LockOptions.defaults().withType(LockType.WRITE);
	}

	private static LockOptions patient(LockType type) {
		return LockOptions.defaults().withType(type).withWaitTime(Duration.ofSeconds(60));
	}

	private long liveHolders(String resource, String kind) {
		return this.jdbc.queryForObject("SELECT COUNT(*) FROM distributed_lock_rw_hold WHERE resource = ? AND kind = ?"
				+ " AND expires_at > UTC_TIMESTAMP(6)", Long.class, resource.getBytes(StandardCharsets.UTF_8), kind);
	}

	private boolean intentSet(String resource) {
		return Boolean.TRUE.equals(this.jdbc.queryForObject("SELECT COUNT(*) > 0 FROM distributed_lock_rw WHERE resource = ?"
				+ " AND intent_expires_at > UTC_TIMESTAMP(6)", Boolean.class, resource.getBytes(StandardCharsets.UTF_8)));
	}

	@Test
	void readersOfSeveralThreadsOnTwoNodesHoldTheReadLockAtTheSameTime() throws Exception {
		String resource = newResource();
		int readers = 6;
		CyclicBarrier allInside = new CyclicBarrier(readers);
		List<Callable<Long>> tasks = new ArrayList<>();
		for (int i = 0; i < readers; i++) {
			LockTemplate node = (i % 2 == 0) ? this.nodeA : this.nodeB;
			tasks.add(() -> {
				try (LockHandle lock = node.acquire(resource, patient(LockType.READ))) {
					// every reader must get here while all the others hold the read lock too
					allInside.await(30, TimeUnit.SECONDS);
					assertThat(lock.type()).isEqualTo(LockType.READ);
					assertThat(lock.isHeld()).isTrue();
					return lock.fencingToken();
				}
			});
		}
		List<Long> tokens = runAll(tasks);
		assertThat(tokens).doesNotHaveDuplicates().hasSize(readers);
		assertThat(liveHolders(resource, "R")).isZero();
		assertThat(this.nodeA.introspection().localResourceCount()).isZero();
		assertThat(this.nodeB.introspection().localResourceCount()).isZero();
	}

	@Test
	void aWriterExcludesReadersAndWritersOfEveryOwnerAndAReaderExcludesWriters() throws Exception {
		String resource = newResource();
		try (LockHandle writer = this.nodeA.acquire(resource, write())) {
			assertThat(writer.type()).isEqualTo(LockType.WRITE);
			assertThat(writer.mode()).isEqualTo(LockMode.LEASE);
			assertThat(this.nodeB.tryAcquire(resource, read())).as("reader on another node").isEmpty();
			assertThat(this.nodeB.tryAcquire(resource, write())).as("writer on another node").isEmpty();
			assertThat(onOtherThread(() -> this.nodeA.tryAcquire(resource, read()).isPresent()))
				.as("reader on another thread of the same node").isFalse();
			assertThatExceptionOfType(LockNotAcquiredException.class)
				.isThrownBy(() -> this.nodeB.acquire(resource, read().withWaitTime(Duration.ofMillis(200))))
				.withMessageContaining(resource)
				.withMessageContaining("node-a")
				.withMessageContaining("write lock");
		}
		try (LockHandle reader = this.nodeA.acquire(resource, read())) {
			assertThat(this.nodeB.tryAcquire(resource, write())).as("writer while a reader holds").isEmpty();
			assertThat(onOtherThread(() -> this.nodeA.tryAcquire(resource, write()).isPresent()))
				.as("writer on another thread of the same node").isFalse();
			Optional<LockHandle> second = this.nodeB.tryAcquire(resource, read());
			assertThat(second).as("a second reader").isPresent();
			second.get().close();
		}
		assertThat(liveHolders(resource, "R") + liveHolders(resource, "W")).isZero();
		try (LockHandle free = this.nodeB.acquire(resource, write())) {
			assertThat(free.isHeld()).isTrue();
		}
	}

	@Test
	void theReadWriteLockIsADifferentLockFromTheExclusiveLockOfTheSameName() {
		String resource = newResource();
		try (LockHandle exclusive = this.nodeA.acquire(resource)) {
			try (LockHandle writer = this.nodeB.acquire(resource, write())) {
				assertThat(exclusive.type()).isEqualTo(LockType.EXCLUSIVE);
				assertThat(writer.type()).isEqualTo(LockType.WRITE);
			}
		}
	}

	@Test
	void manyMixedReadersAndWritersOnTwoNodesNeverOverlapAWriterAndReadersDoOverlap() throws Exception {
		String resource = newResource();
		AtomicInteger readersInside = new AtomicInteger();
		AtomicInteger writersInside = new AtomicInteger();
		AtomicInteger violations = new AtomicInteger();
		AtomicInteger maxReaders = new AtomicInteger();
		AtomicInteger writes = new AtomicInteger();
		AtomicInteger reads = new AtomicInteger();
		List<Callable<Long>> tasks = new ArrayList<>();
		for (int t = 0; t < 8; t++) {
			LockTemplate node = (t % 2 == 0) ? this.nodeA : this.nodeB;
			tasks.add(() -> {
				for (int i = 0; i < 30; i++) {
					boolean writer = ThreadLocalRandom.current().nextInt(4) == 0;
					node.executeWithoutResult(resource, patient(writer ? LockType.WRITE : LockType.READ), (lock) -> {
						if (writer) {
							if (writersInside.incrementAndGet() != 1 || readersInside.get() != 0) {
								violations.incrementAndGet();
							}
							pause(2);
							if (readersInside.get() != 0) {
								violations.incrementAndGet();
							}
							writersInside.decrementAndGet();
							writes.incrementAndGet();
						}
						else {
							int now = readersInside.incrementAndGet();
							maxReaders.accumulateAndGet(now, Math::max);
							if (writersInside.get() != 0) {
								violations.incrementAndGet();
							}
							pause(4);
							if (writersInside.get() != 0) {
								violations.incrementAndGet();
							}
							readersInside.decrementAndGet();
							reads.incrementAndGet();
						}
					});
				}
				return 0L;
			});
		}
		runAll(tasks);
		assertThat(violations).hasValue(0);
		assertThat(reads.get() + writes.get()).isEqualTo(8 * 30);
		assertThat(writes.get()).isPositive();
		assertThat(maxReaders.get()).as("readers overlapped").isGreaterThan(1);
		assertThat(this.nodeA.introspection().localResourceCount() + this.nodeB.introspection().localResourceCount()).isZero();
	}

	@Test
	void fencingTokensIncreasePerResourceAcrossReadersAndWriters() {
		String resource = newResource();
		List<Long> tokens = new ArrayList<>();
		LockHandle r1 = this.nodeA.acquire(resource, read());
		LockHandle r2 = this.nodeB.acquire(resource, read());
		tokens.add(r1.fencingToken());
		tokens.add(r2.fencingToken());
		r1.close();
		r2.close();
		try (LockHandle w = this.nodeA.acquire(resource, write())) {
			tokens.add(w.fencingToken());
		}
		try (LockHandle r3 = this.nodeB.acquire(resource, read())) {
			tokens.add(r3.fencingToken());
		}
		for (int i = 1; i < tokens.size(); i++) {
			assertThat(tokens.get(i)).isEqualTo(tokens.get(i - 1) + 1);
		}
		assertThat(tokens.get(0)).as("starts at the server clock in microseconds")
			.isGreaterThan(1_600_000_000_000_000L);
	}

	@Test
	void aThreadReentersItsReadAndWriteLocksAndReadsUnderItsOwnWriteLock() throws Exception {
		String resource = newResource();
		try (LockHandle r1 = this.nodeA.acquire(resource, read()); LockHandle r2 = this.nodeA.acquire(resource, read())) {
			assertThat(r2.fencingToken()).isEqualTo(r1.fencingToken());
			assertThat(holdCount(this.nodeA, resource)).isEqualTo(2);
			assertThat(liveHolders(resource, "R")).as("one owner in the database").isEqualTo(1);
		}
		LockHandle w1 = this.nodeA.acquire(resource, write());
		LockHandle w2 = this.nodeA.acquire(resource, write());
		LockHandle r = this.nodeA.acquire(resource, read());
		assertThat(w2.fencingToken()).isEqualTo(w1.fencingToken());
		assertThat(r.fencingToken()).as("read under the own write lock").isEqualTo(w1.fencingToken());
		assertThat(r.type()).isEqualTo(LockType.READ);
		assertThat(holdCount(this.nodeA, resource)).isEqualTo(3);
		w1.close();
		w2.close();
		// the read hold keeps the write lock: nobody else may read or write yet
		assertThat(this.nodeB.tryAcquire(resource, read())).isEmpty();
		assertThat(liveHolders(resource, "W")).isEqualTo(1);
		r.close();
		assertThat(liveHolders(resource, "W")).isZero();
		try (LockHandle other = this.nodeB.acquire(resource, read())) {
			assertThat(other.fencingToken()).isGreaterThan(w1.fencingToken());
		}
		// released in the other order: read first, then write
		LockHandle w = this.nodeA.acquire(resource, write());
		LockHandle inner = this.nodeA.acquire(resource, read());
		inner.close();
		assertThat(this.nodeB.tryAcquire(resource, read())).isEmpty();
		w.close();
		assertThat(this.nodeB.tryAcquire(resource, write())).hasValueSatisfying(LockHandle::close);
		assertThat(this.nodeA.introspection().localResourceCount()).isZero();
	}

	@Test
	void aReaderAskingForTheWriteLockGetsAnUpgradeErrorAtOnceAndKeepsItsReadLock() {
		String resource = newResource();
		try (LockHandle reader = this.nodeA.acquire(resource, read())) {
			long start = System.nanoTime();
			assertThatExceptionOfType(LockUpgradeException.class)
				.isThrownBy(() -> this.nodeA.acquire(resource, write().withWaitTime(Duration.ofSeconds(30))))
				.withMessageContaining(resource)
				.withMessageContaining("cannot be upgraded")
				.withMessageContaining("Release the read lock first")
				.satisfies((ex) -> assertThat(ex.getResource()).isEqualTo(resource));
			assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).as("no waiting").isLessThan(1_000);
			assertThat(reader.isHeld()).isTrue();
			assertThat(holdCount(this.nodeA, resource)).isEqualTo(1);
			assertThat(this.nodeB.tryAcquire(resource, write())).as("still read-locked").isEmpty();
			assertThat(liveHolders(resource, "W")).isZero();
		}
		try (LockHandle writer = this.nodeA.acquire(resource, write())) {
			assertThat(writer.isHeld()).isTrue();
		}
	}

	@Test
	void aWaitingWriterKeepsNewReadersOutAndGetsInWhenTheReadersInsideHaveLeft() throws Exception {
		String resource = newResource();
		LockHandle reader = this.nodeA.acquire(resource, read());
		ExecutorService executor = Executors.newSingleThreadExecutor();
		try {
			Future<Long> writer = executor.submit(() -> {
				try (LockHandle w = this.nodeB.acquire(resource, patient(LockType.WRITE))) {
					return w.fencingToken();
				}
			});
			long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
			while (!intentSet(resource) && System.nanoTime() < deadline) {
				Thread.sleep(5);
			}
			assertThat(intentSet(resource)).as("the waiting writer marked its intent").isTrue();
			assertThatExceptionOfType(LockNotAcquiredException.class)
				.isThrownBy(() -> this.nodeB.acquire(resource, read().withWaitTime(Duration.ofMillis(100))))
				.withMessageContaining("a writer waiting for the lock")
				.withMessageContaining("node-b");
			assertThat(onOtherThread(() -> this.nodeA.tryAcquire(resource, read()).isPresent()))
				.as("a new reader on the reader's own node waits too").isFalse();
			assertThat(writer.isDone()).isFalse();
			reader.close();
			assertThat(writer.get(10, TimeUnit.SECONDS)).isGreaterThan(reader.fencingToken());
		}
		finally {
			executor.shutdownNow();
		}
		assertThat(intentSet(resource)).as("cleared when the writer got in").isFalse();
		assertThat(this.nodeA.tryAcquire(resource, read())).hasValueSatisfying(LockHandle::close);
	}

	@Test
	void aWriterThatGivesUpClearsItsIntentAtOnce() throws Exception {
		String resource = newResource();
		try (LockHandle reader = this.nodeA.acquire(resource, read())) {
			assertThat(this.nodeB.tryAcquire(resource, write().withWaitTime(Duration.ofMillis(300)))).isEmpty();
			assertThat(intentSet(resource)).isFalse();
			Optional<LockHandle> next = this.nodeB.tryAcquire(resource, read());
			assertThat(next).as("readers are let in again").isPresent();
			next.get().close();
		}
	}

	@Test
	void anInterruptedWaitingWriterStopsAtOnceClearsItsIntentAndKeepsTheInterruptFlag() throws Exception {
		String resource = newResource();
		try (LockHandle reader = this.nodeA.acquire(resource, read())) {
			ExecutorService executor = Executors.newSingleThreadExecutor();
			try {
				Future<String> writer = executor.submit(() -> {
					try {
						this.nodeB.acquire(resource, patient(LockType.WRITE)).close();
						return "acquired";
					}
					catch (io.github.dblock.LockInterruptedException ex) {
						return "interrupted, flag " + Thread.currentThread().isInterrupted();
					}
				});
				long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
				while (!intentSet(resource) && System.nanoTime() < deadline) {
					Thread.sleep(5);
				}
				assertThat(intentSet(resource)).isTrue();
				executor.shutdownNow();
				assertThat(writer.get(10, TimeUnit.SECONDS)).isEqualTo("interrupted, flag true");
			}
			finally {
				executor.shutdownNow();
			}
			assertThat(intentSet(resource)).as("cleared by the interrupted writer").isFalse();
			assertThat(this.nodeB.tryAcquire(resource, read())).hasValueSatisfying(LockHandle::close);
			assertThat(this.nodeB.introspection().localResourceCount()).isZero();
		}
	}

	@Test
	void aZeroWaitWriterLeavesNoIntent() {
		String resource = newResource();
		try (LockHandle reader = this.nodeA.acquire(resource, read())) {
			assertThat(this.nodeB.tryAcquire(resource, write())).isEmpty();
			assertThat(intentSet(resource)).isFalse();
		}
	}

	/**
	 * The writer preference policy: eight reader threads on two nodes hold the read lock for 200 ms each and take it
	 * again at once, so the read lock never goes free (checked by sampling before the writer comes). A writer still
	 * gets in within a bound: the readers inside when it arrives finish (200 ms), then its next poll (at most 50 ms
	 * here) takes the lock. 2 s leaves room for a loaded machine.
	 */
	@Test
	void aSteadyStreamOfOverlappingReadersDoesNotStarveAWriter() throws Exception {
		String resource = newResource();
		AtomicBoolean stop = new AtomicBoolean();
		AtomicInteger readersInside = new AtomicInteger();
		AtomicInteger readsWhileWriting = new AtomicInteger();
		AtomicBoolean writing = new AtomicBoolean();
		int readers = 8;
		ExecutorService executor = Executors.newFixedThreadPool(readers);
		List<Future<?>> streams = new ArrayList<>();
		CountDownLatch started = new CountDownLatch(readers);
		try {
			for (int i = 0; i < readers; i++) {
				LockTemplate node = (i % 2 == 0) ? this.nodeA : this.nodeB;
				int stagger = i * 25;
				streams.add(executor.submit(() -> {
					pause(stagger);
					boolean first = true;
					while (!stop.get()) {
						try (LockHandle lock = node.acquire(resource, patient(LockType.READ))) {
							readersInside.incrementAndGet();
							if (writing.get()) {
								readsWhileWriting.incrementAndGet();
							}
							if (first) {
								started.countDown();
								first = false;
							}
							pause(200);
							readersInside.decrementAndGet();
						}
					}
					return null;
				}));
			}
			assertThat(started.await(30, TimeUnit.SECONDS)).isTrue();
			int zeroSamples = 0;
			for (int sample = 0; sample < 100; sample++) {
				if (liveHolders(resource, "R") == 0) {
					zeroSamples++;
				}
				Thread.sleep(5);
			}
			assertThat(zeroSamples).as("the readers' stream keeps the read lock taken").isZero();
			long start = System.nanoTime();
			try (LockHandle writer = this.nodeA.acquire(resource, patient(LockType.WRITE))) {
				writing.set(true);
				long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
				System.out.println("[lock tests] writer waited " + waitedMillis + " ms behind a stream of readers");
				assertThat(waitedMillis).as("writer got in within the bound").isLessThan(2_000);
				assertThat(liveHolders(resource, "R")).as("no reader holds while the writer does").isZero();
				assertThat(readersInside).hasValue(0);
				pause(100);
				writing.set(false);
			}
			assertThat(readsWhileWriting).hasValue(0);
			long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
			while (liveHolders(resource, "R") == 0 && System.nanoTime() < deadline) {
				Thread.sleep(5);
			}
			assertThat(liveHolders(resource, "R")).as("readers resumed after the writer").isPositive();
		}
		finally {
			stop.set(true);
			for (Future<?> stream : streams) {
				stream.get(30, TimeUnit.SECONDS);
			}
			executor.shutdownNow();
		}
	}

	@Test
	void aCrashedReadersLeaseEndsOnTheServersClockAndItsLateReleaseThrows() throws Exception {
		String resource = newResource();
		long beforeAcquire = System.nanoTime(); // before the server starts the lease, whatever the commit costs
		LockHandle stale = this.nodeA.acquire(resource, read().withLeaseTime(Duration.ofMillis(1_500)));
		assertThat(this.nodeB.tryAcquire(resource, write())).isEmpty();
		try (LockHandle writer = this.nodeB.acquire(resource, patient(LockType.WRITE))) {
			long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - beforeAcquire);
			assertThat(waited).as("waited for the reader's lease").isGreaterThanOrEqualTo(1_450L);
			assertThat(writer.fencingToken()).isGreaterThan(stale.fencingToken());
			assertThat(stale.isHeld()).isFalse();
			assertThatExceptionOfType(LockLostException.class).isThrownBy(stale::close)
				.satisfies((ex) -> assertThat(ex.getFencingToken()).isEqualTo(stale.fencingToken()));
			assertThat(this.nodeA.tryAcquire(resource, read())).as("the writer still holds").isEmpty();
		}
	}

	@Test
	void aMinimumHoldTimeKeepsTheWriteLockAfterAnEarlyRelease() throws Exception {
		String resource = newResource();
		long beforeAcquire = System.nanoTime(); // before the server's acquisition instant, whatever the commit costs
		LockHandle writer = this.nodeA.acquire(resource, write().withLeaseTime(Duration.ofSeconds(10))
			.withMinHoldTime(Duration.ofMillis(1_500)));
		writer.close();
		assertThat(this.nodeB.tryAcquire(resource, read())).as("still taken after release").isEmpty();
		try (LockHandle reader = this.nodeB.acquire(resource, patient(LockType.READ))) {
			long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - beforeAcquire);
			assertThat(waited).as("not before the minimum hold ended").isGreaterThanOrEqualTo(1_450L).isLessThan(8_000L);
			assertThat(reader.fencingToken()).isGreaterThan(writer.fencingToken());
		}
	}

	@Test
	void theLeaseIsOnTheServersClock() {
		String resource = newResource();
		try (LockHandle lock = this.nodeA.acquire(resource, write().withLeaseTime(Duration.ofSeconds(7)))) {
			Long micros = this.jdbc.queryForObject("SELECT TIMESTAMPDIFF(MICROSECOND, acquired_at, expires_at) FROM "
					+ "distributed_lock_rw_hold WHERE resource = ?", Long.class, resource.getBytes(StandardCharsets.UTF_8));
			assertThat(micros).isEqualTo(7_000_000L);
			Long age = this.jdbc.queryForObject("SELECT TIMESTAMPDIFF(MICROSECOND, acquired_at, UTC_TIMESTAMP(6)) FROM "
					+ "distributed_lock_rw_hold WHERE resource = ?", Long.class, resource.getBytes(StandardCharsets.UTF_8));
			assertThat(age).isBetween(0L, 5_000_000L);
		}
	}

	@Test
	void renewalKeepsReadAndWriteLeasesAndAFoundLossIsReported() throws Exception {
		LockProvider provider = LockNodes.provider(LockMode.LEASE, this.nodes.dataSource());
		LockTemplate renewing = new LockTemplate(List.of(provider), LockMode.LEASE, Duration.ZERO, Duration.ofSeconds(1),
				"renewing");
		String resource = newResource();
		try (LockHandle writer = renewing.acquire(resource, write())) {
			Thread.sleep(1_500);
			assertThat(writer.isHeld()).as("renewed past its 1 s lease").isTrue();
			assertThat(this.nodeB.tryAcquire(resource, read())).isEmpty();
		}
		LockHandle reader = renewing.acquire(resource, read());
		CountDownLatch lost = new CountDownLatch(1);
		reader.onLost((handle) -> lost.countDown());
		// another party ends the lease in the database, as the server would after an outage longer than the lease
		this.jdbc.update("UPDATE distributed_lock_rw_hold SET expires_at = UTC_TIMESTAMP(6) WHERE resource = ?",
				resource.getBytes(StandardCharsets.UTF_8));
		assertThat(lost.await(5, TimeUnit.SECONDS)).as("onLost ran").isTrue();
		assertThat(reader.isHeld()).isFalse();
		assertThatExceptionOfType(LockLostException.class).isThrownBy(reader::close);
		assertThat(renewing.introspection().localResourceCount()).isZero();
		((AutoCloseable) provider).close();
	}

	@Test
	void theCleanerDeletesExpiredHolderRowsOnly() throws Exception {
		String resource = newResource();
		LockHandle crashed = this.nodeA.acquire(resource, read().withLeaseTime(Duration.ofMillis(50)));
		String live = newResource();
		try (LockHandle holding = this.nodeB.acquire(live, read())) {
			Thread.sleep(100);
			LockTableCleaner cleaner = new LockTableCleaner(this.nodes.dataSource(), LockNodes.TABLE, Duration.ofDays(1),
					100, Duration.ofSeconds(5));
			assertThat(cleaner.deleteExpiredReadWriteHolds()).isGreaterThanOrEqualTo(1);
			assertThat(this.jdbc.queryForObject("SELECT COUNT(*) FROM distributed_lock_rw_hold WHERE resource = ?",
					Long.class, resource.getBytes(StandardCharsets.UTF_8))).isZero();
			assertThat(liveHolders(live, "R")).isEqualTo(1);
			assertThat(this.jdbc.queryForObject("SELECT COUNT(*) FROM distributed_lock_rw WHERE resource = ?",
					Long.class, resource.getBytes(StandardCharsets.UTF_8))).as("the counter row stays").isEqualTo(1);
		}
		assertThatExceptionOfType(LockLostException.class).isThrownBy(crashed::close);
	}

	@Test
	void readAndWriteAreRefusedOutsideLeaseModeBeforeAnythingIsLocked() {
		LockTemplate optimistic = this.nodes.node(LockMode.OPTIMISTIC, "optimistic");
		LockTemplate pessimistic = this.nodes.node(LockMode.PESSIMISTIC, "pessimistic");
		String resource = newResource();
		assertThatIllegalArgumentException()
			.isThrownBy(() -> optimistic.execute(resource, read(), (lock) -> 1))
			.withMessageContaining("READ")
			.withMessageContaining("OPTIMISTIC")
			.withMessageContaining("LockMode.LEASE");
		assertThatIllegalArgumentException()
			.isThrownBy(() -> pessimistic.acquire(resource, write()))
			.withMessageContaining("WRITE")
			.withMessageContaining("PESSIMISTIC");
		assertThatIllegalArgumentException()
			.isThrownBy(() -> this.nodeA.acquire(resource, read().withMode(LockMode.OPTIMISTIC)))
			.withMessageContaining("not available");
		assertThatIllegalArgumentException().isThrownBy(() -> LockOptions.defaults().withType(null))
			.withMessageContaining("type");
		assertThat(this.jdbc.queryForObject("SELECT COUNT(*) FROM distributed_lock_rw WHERE resource = ?", Long.class,
				resource.getBytes(StandardCharsets.UTF_8))).as("nothing touched").isZero();
		assertThat(optimistic.introspection().localResourceCount() + pessimistic.introspection().localResourceCount()).isZero();
	}

	@Test
	void localHoldsShowTheType() {
		String resource = newResource();
		try (LockHandle reader = this.nodeA.acquire(resource, read())) {
			assertThat(this.nodeA.introspection().localHolds()).filteredOn((hold) -> hold.resource().equals(resource))
				.singleElement()
				.satisfies((hold) -> {
					assertThat(hold.type()).isEqualTo(LockType.READ);
					assertThat(hold.mode()).isEqualTo(LockMode.LEASE);
					assertThat(hold.fencingToken()).isEqualTo(reader.fencingToken());
					assertThat(hold.holder()).startsWith("node-a [");
				});
		}
	}

	private static int holdCount(LockTemplate node, String resource) {
		return node.introspection().localHolds().stream().filter((hold) -> hold.resource().equals(resource)).findFirst().orElseThrow()
			.holdCount();
	}

	private static <T> T onOtherThread(Callable<T> task) throws Exception {
		ExecutorService executor = Executors.newSingleThreadExecutor();
		try {
			return executor.submit(task).get(30, TimeUnit.SECONDS);
		}
		finally {
			executor.shutdownNow();
		}
	}

	private static <T> List<T> runAll(List<Callable<T>> tasks) throws Exception {
		ExecutorService executor = Executors.newFixedThreadPool(tasks.size());
		try {
			List<T> results = new ArrayList<>();
			for (Future<T> future : executor.invokeAll(tasks, 3, TimeUnit.MINUTES)) {
				results.add(future.get());
			}
			return results;
		}
		finally {
			executor.shutdownNow();
		}
	}

	private static void pause(long millis) {
		try {
			Thread.sleep(millis);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}

}
