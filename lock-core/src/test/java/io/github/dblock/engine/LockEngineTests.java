package io.github.dblock.engine;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.github.dblock.LockHandle;
import io.github.dblock.LockInterruptedException;
import io.github.dblock.LockLostException;
import io.github.dblock.LockMode;
import io.github.dblock.LockModeConflictException;
import io.github.dblock.LockNotAcquiredException;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The JVM-local engine behind {@link LockTemplate} (reentrancy, the local queue, hand-off, expired holds) against
 * {@link InMemoryLockProvider}, without a database: what it asks of the provider is counted exactly. The same
 * behaviours run against MariaDB/MySQL in ExpiredLeaseTests and LocalHandOffTests.
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class LockEngineTests {

	private final InMemoryLockProvider provider = new InMemoryLockProvider();

	private final LockTemplate template = new LockTemplate(List.of(this.provider), LockMode.LEASE, Duration.ofSeconds(5),
			Duration.ofSeconds(30), "node-1");

	private final ExecutorService executor = Executors.newCachedThreadPool();

	@AfterEach
	void stop() {
		this.executor.shutdownNow();
	}

	@Test
	void reentryByTheHoldingThreadCostsNoAcquisitionAndReleasesOnTheLastClose() {
		try (LockHandle outer = this.template.acquire("r")) {
			try (LockHandle inner = this.template.acquire("r")) {
				assertThat(inner.fencingToken()).isEqualTo(outer.fencingToken());
				assertThat(this.template.introspection().localHolds()).singleElement()
					.satisfies((hold) -> assertThat(hold.holdCount()).isEqualTo(2));
			}
			assertThat(this.provider.owner("r")).as("still held after the inner close").isNotNull();
		}
		assertThat(this.provider.acquisitions.get()).isEqualTo(1);
		assertThat(this.provider.releases.get()).isEqualTo(1);
		assertThat(this.provider.owner("r")).isNull();
		assertThat(this.template.introspection().localResourceCount()).isZero();
	}

	@Test
	void otherLocalThreadsQueueInTheJvmAndOnlyOneAsksTheProvider() throws Exception {
		int threads = 6;
		CountDownLatch start = new CountDownLatch(1);
		int[] inside = new int[1];
		int[] mostInside = new int[1];
		List<Future<Long>> tokens = new java.util.ArrayList<>();
		for (int i = 0; i < threads; i++) {
			tokens.add(this.executor.submit(() -> {
				start.await();
				try (LockHandle lock = this.template.acquire("hot")) {
					synchronized (inside) {
						mostInside[0] = Math.max(mostInside[0], ++inside[0]);
					}
					Thread.sleep(5);
					synchronized (inside) {
						inside[0]--;
					}
					return lock.fencingToken();
				}
			}));
		}
		start.countDown();
		java.util.Set<Long> distinct = new java.util.HashSet<>();
		for (Future<Long> token : tokens) {
			distinct.add(token.get(10, TimeUnit.SECONDS));
		}
		assertThat(mostInside[0]).as("threads inside the section at once").isEqualTo(1);
		assertThat(distinct).as("every holder has a token of its own").hasSize(threads);
		assertThat(this.provider.mostWaiting()).as("threads of this JVM in the provider at once").isEqualTo(1);
		assertThat(this.provider.acquisitions.get() + this.provider.handOffs.get()).isEqualTo(threads);
		assertThat(this.provider.owner("hot")).isNull();
		assertThat(this.template.introspection().localResourceCount()).isZero();
	}

	@Test
	void aQueuedLocalThreadIsHandedTheLeaseWithoutAnAcquisition() throws Exception {
		LockHandle first = this.template.acquire("h");
		Future<Long> second = this.executor.submit(() -> {
			try (LockHandle lock = this.template.acquire("h")) {
				return lock.fencingToken();
			}
		});
		awaitQueued("h");
		long firstToken = first.fencingToken();
		first.close();
		assertThat(second.get(10, TimeUnit.SECONDS)).isGreaterThan(firstToken);
		assertThat(this.provider.acquisitions.get()).isEqualTo(1);
		assertThat(this.provider.handOffs.get()).isEqualTo(1);
		assertThat(this.provider.owner("h")).isNull();
	}

	@Test
	void reentryAfterTheLeaseEndedAcquiresAnewAndTheStaleHoldReportsItsLoss() throws Exception {
		LockOptions shortLease = LockOptions.defaults().withLeaseTime(Duration.ofMillis(100));
		LockHandle outer = this.template.acquire("e", shortLease);
		Thread.sleep(150);
		try (LockHandle again = this.template.acquire("e", shortLease)) {
			assertThat(again.fencingToken()).as("a new acquisition, not a re-entry").isGreaterThan(outer.fencingToken());
			assertThat(this.provider.acquisitions.get()).isEqualTo(2);
		}
		assertThatThrownBy(outer::close).isInstanceOf(LockLostException.class)
			.satisfies((ex) -> assertThat(((LockLostException) ex).getFencingToken()).isEqualTo(outer.fencingToken()));
		assertThat(this.template.introspection().localResourceCount()).isZero();
	}

	@Test
	void anExpiredHoldDoesNotKeepOtherLocalThreadsWaitingAndItsCloseLeavesTheNextHolderAlone() throws Exception {
		LockOptions shortLease = LockOptions.defaults().withLeaseTime(Duration.ofMillis(200));
		LockHandle stale = this.template.acquire("x", shortLease);
		CountDownLatch holding = new CountDownLatch(1);
		CountDownLatch done = new CountDownLatch(1);
		Future<Long> next = this.executor.submit(() -> {
			try (LockHandle lock = this.template.acquire("x", LockOptions.defaults().withWaitTime(Duration.ofSeconds(5)))) {
				holding.countDown();
				done.await();
				return lock.fencingToken();
			}
		});
		assertThat(holding.await(5, TimeUnit.SECONDS)).as("the next thread got the lock after the lease ended").isTrue();
		String nextOwner = this.provider.owner("x");
		assertThat(nextOwner).isNotNull();
		assertThatThrownBy(stale::close).isInstanceOf(LockLostException.class);
		assertThat(this.provider.owner("x")).as("the stale close did not release the next holder's lock")
			.isEqualTo(nextOwner);
		done.countDown();
		assertThat(next.get(5, TimeUnit.SECONDS)).isGreaterThan(stale.fencingToken());
		assertThat(this.provider.owner("x")).isNull();
		assertThat(this.template.introspection().localResourceCount()).isZero();
	}

	@Test
	void aLocalWaiterGivesUpAtItsWaitTimeNamingTheLocalHolder() throws Exception {
		try (LockHandle held = this.template.acquire("w")) {
			Future<Throwable> waiter = this.executor.submit(() -> {
				try {
					this.template.acquire("w", LockOptions.defaults().withWaitTime(Duration.ofMillis(100)));
					return null;
				}
				catch (LockNotAcquiredException ex) {
					return ex;
				}
			});
			assertThat(waiter.get(5, TimeUnit.SECONDS)).isInstanceOf(LockNotAcquiredException.class)
				.hasMessageContaining("node-1").hasMessageContaining("this JVM");
			assertThat(held.isHeld()).isTrue();
		}
		assertThat(this.provider.acquisitions.get()).as("the waiter never asked the provider").isEqualTo(1);
		assertThat(this.template.introspection().localResourceCount()).isZero();
	}

	@Test
	void anInterruptedLocalWaiterStopsWaitingAndHoldsNothing() throws Exception {
		Throwable[] failure = new Throwable[1];
		try (LockHandle held = this.template.acquire("i")) {
			Thread waiter = new Thread(() -> {
				try {
					this.template.acquire("i", LockOptions.defaults().withWaitTime(Duration.ofSeconds(30))).close();
				}
				catch (RuntimeException ex) {
					failure[0] = ex;
				}
			});
			waiter.start();
			awaitQueued("i");
			waiter.interrupt();
			waiter.join(5_000);
			assertThat(waiter.isAlive()).isFalse();
			assertThat(held.isHeld()).isTrue();
		}
		assertThat(failure[0]).isInstanceOf(LockInterruptedException.class);
		assertThat(this.template.introspection().localResourceCount()).isZero();
		assertThat(this.provider.owner("i")).isNull();
		assertThat(this.provider.acquisitions.get()).as("the waiter never asked the provider").isEqualTo(1);
	}

	@Test
	void pessimisticThreadsWithEmptySectionsRunOnceEachInTokenOrderWithOneInTheProviderAtATime() throws Exception {
		InMemoryLockProvider.RowLocks rows = new InMemoryLockProvider.RowLocks();
		LockTemplate pessimistic = new LockTemplate(List.of(rows), LockMode.PESSIMISTIC, Duration.ofSeconds(30),
				Duration.ofSeconds(30), "node-1");
		int threads = 8;
		int perThread = 200;
		java.util.concurrent.atomic.AtomicInteger inside = new java.util.concurrent.atomic.AtomicInteger();
		java.util.concurrent.atomic.AtomicInteger overlaps = new java.util.concurrent.atomic.AtomicInteger();
		List<Long> tokens = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
		CountDownLatch start = new CountDownLatch(1);
		List<Future<?>> futures = new java.util.ArrayList<>();
		for (int t = 0; t < threads; t++) {
			futures.add(this.executor.submit(() -> {
				start.await();
				for (int i = 0; i < perThread; i++) {
					try (LockHandle lock = pessimistic.acquire("hot")) {
						if (inside.incrementAndGet() != 1) {
							overlaps.incrementAndGet();
						}
						tokens.add(lock.fencingToken());
						inside.decrementAndGet();
					}
				}
				return null;
			}));
		}
		start.countDown();
		for (Future<?> future : futures) {
			future.get(30, TimeUnit.SECONDS);
		}
		assertThat(overlaps.get()).as("sections that found another one inside").isZero();
		List<Long> expected = java.util.stream.LongStream.rangeClosed(1, threads * perThread).boxed().toList();
		assertThat(tokens).as("every section once, tokens in the order of the holds").isEqualTo(expected);
		assertThat(rows.mostWaiting()).as("threads waiting in the provider at once").isEqualTo(1);
		assertThat(pessimistic.introspection().localResourceCount()).isZero();
	}

	@Test
	void onePessimisticWaiterBehindALocalHolderWaitsInTheProviderOrInTheJvmWithoutConnections()
			throws Exception {
		InMemoryLockProvider.RowLocks rows = new InMemoryLockProvider.RowLocks();
		LockTemplate pessimistic = new LockTemplate(List.of(rows), LockMode.PESSIMISTIC, Duration.ofSeconds(30),
				Duration.ofSeconds(30), "node-1");
		int others = 3;
		for (boolean spare : new boolean[] { true, false }) {
			rows.spareConnections = spare;
			LockHandle holder = pessimistic.acquire("r");
			List<Future<Long>> waiters = new java.util.ArrayList<>();
			for (int i = 0; i < others; i++) {
				waiters.add(this.executor.submit(() -> {
					try (LockHandle lock = pessimistic.acquire("r")) {
						return lock.fencingToken();
					}
				}));
			}
			int expected = spare ? 1 : 0;
			long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
			while (rows.waiting() < expected) {
				assertThat(System.nanoTime() - deadline).as("%d waiters in the provider", expected).isNegative();
				Thread.sleep(1);
			}
			Thread.sleep(100);
			assertThat(rows.waiting()).as("threads in the provider, spare connections: %s", spare).isEqualTo(expected);
			try (LockHandle inner = pessimistic.acquire("r")) {
				assertThat(inner.fencingToken()).as("the holder re-enters").isEqualTo(holder.fencingToken());
			}
			holder.close();
			java.util.Set<Long> distinct = new java.util.HashSet<>();
			for (Future<Long> waiter : waiters) {
				assertThat(waiter.get(10, TimeUnit.SECONDS)).isGreaterThan(holder.fencingToken());
				distinct.add(waiter.get());
			}
			assertThat(distinct).hasSize(others);
			assertThat(pessimistic.introspection().localResourceCount()).isZero();
		}
	}

	@Test
	void aLeaseIsHandedOffOnlyToAQueuedThreadOfTheSameMode() throws Exception {
		InMemoryLockProvider.RowLocks rows = new InMemoryLockProvider.RowLocks();
		LockTemplate both = new LockTemplate(List.of(this.provider, rows), LockMode.LEASE, Duration.ofSeconds(5),
				Duration.ofSeconds(30), "node-1");
		LockHandle lease = both.acquire("r");
		Future<String> rowLock = this.executor.submit(() -> {
			try (LockHandle lock = both.acquire("r", LockOptions.defaults().withMode(LockMode.PESSIMISTIC))) {
				return lock.mode() + ", lease handed off=" + (this.provider.handOffs.get() > 0);
			}
		});
		awaitQueued(both, "r");
		lease.close();
		assertThat(rowLock.get(5, TimeUnit.SECONDS)).isEqualTo("PESSIMISTIC, lease handed off=false");
		assertThat(rows.mostWaiting()).as("the row lock was asked for").isEqualTo(1);
		assertThat(this.provider.releases.get()).as("the lease went back to its provider").isEqualTo(1);
		assertThat(this.provider.owner("r")).isNull();
		try (LockHandle next = both.acquire("r")) {
			assertThat(next.fencingToken()).as("a LEASE taken anew").isGreaterThan(lease.fencingToken());
		}
		assertThat(both.introspection().localResourceCount()).isZero();
	}

	@Test
	void aThreadThatHoldsAResourceInOneModeIsRefusedTheOtherModeAtOnce() throws Exception {
		InMemoryLockProvider.RowLocks rows = new InMemoryLockProvider.RowLocks();
		LockTemplate both = new LockTemplate(List.of(this.provider, rows), LockMode.LEASE, Duration.ofSeconds(5),
				Duration.ofSeconds(30), "node-1");
		LockOptions pessimistic = LockOptions.defaults().withMode(LockMode.PESSIMISTIC);
		try (LockHandle lease = both.acquire("r")) {
			assertThatThrownBy(() -> both.acquire("r", pessimistic)).isInstanceOf(LockModeConflictException.class);
			assertThatThrownBy(() -> both.executeWithoutResult("r", pessimistic, (lock) -> {
			})).isInstanceOf(LockModeConflictException.class);
			try (LockHandle again = both.acquire("r")) {
				assertThat(again.mode()).isEqualTo(LockMode.LEASE);
				assertThat(again.fencingToken()).isEqualTo(lease.fencingToken());
			}
		}
		try (LockHandle row = both.acquire("r", pessimistic)) {
			assertThatThrownBy(() -> both.acquire("r")).isInstanceOfSatisfying(LockModeConflictException.class,
					(ex) -> assertThat(ex.getHeldMode()).isEqualTo(LockMode.PESSIMISTIC));
			try (LockHandle again = both.acquire("r", pessimistic)) {
				assertThat(again.mode()).isEqualTo(LockMode.PESSIMISTIC);
			}
		}
		assertThat(this.provider.acquisitions.get()).as("nothing asked of the LEASE provider for the refusals").isEqualTo(1);
		assertThat(rows.mostWaiting()).isEqualTo(1);
		assertThat(both.introspection().localResourceCount()).isZero();
	}

	@Test
	void pessimisticExecuteCallersQueueInTheJvmBeforeTheyBeginATransaction() throws Exception {
		InMemoryLockProvider.RowLocks rows = new InMemoryLockProvider.RowLocks();
		LockTemplate pessimistic = new LockTemplate(List.of(rows), LockMode.PESSIMISTIC, Duration.ofSeconds(30),
				Duration.ofSeconds(30), "node-1");
		int threads = 8;
		int perThread = 50;
		java.util.concurrent.atomic.AtomicInteger inside = new java.util.concurrent.atomic.AtomicInteger();
		java.util.concurrent.atomic.AtomicInteger overlaps = new java.util.concurrent.atomic.AtomicInteger();
		CountDownLatch start = new CountDownLatch(1);
		List<Future<?>> futures = new java.util.ArrayList<>();
		for (int t = 0; t < threads; t++) {
			futures.add(this.executor.submit(() -> {
				start.await();
				for (int i = 0; i < perThread; i++) {
					pessimistic.executeWithoutResult("hot", (lock) -> {
						if (inside.incrementAndGet() != 1) {
							overlaps.incrementAndGet();
						}
						Thread.yield();
						inside.decrementAndGet();
					});
				}
				return null;
			}));
		}
		start.countDown();
		for (Future<?> future : futures) {
			future.get(30, TimeUnit.SECONDS);
		}
		assertThat(overlaps.get()).isZero();
		// only the caller with the gate waits in a transaction (a pooled connection, in a real provider); the others
		// wait in the JVM, without one
		assertThat(rows.mostWaitingTransactions()).as("transactions waiting for the row at once (8 callers)")
			.isEqualTo(1);
		assertThat(rows.prepared.get()).as("once per attempt").isEqualTo(threads * perThread);
		assertThat(rows.preparedInsideTransaction.get()).as("always before the attempt's transaction").isZero();
		assertThat(pessimistic.introspection().localResourceCount()).isZero();
	}

	private void awaitQueued(LockTemplate template, String resource) throws InterruptedException {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
		while (!template.introspection().hasQueuedThreads(resource)) {
			assertThat(System.nanoTime() - deadline).as("a local thread queued for %s", resource).isNegative();
			Thread.sleep(1);
		}
	}

	private void awaitQueued(String resource) throws InterruptedException {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
		while (!this.template.introspection().hasQueuedThreads(resource)) {
			assertThat(System.nanoTime() - deadline).as("a local thread queued for %s", resource).isNegative();
			Thread.sleep(1);
		}
	}

}
