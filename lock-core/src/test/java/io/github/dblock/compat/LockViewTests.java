package io.github.dblock.compat;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Lock;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.CurrentLock;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.LockView;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * {@link LockTemplate#asLock}: the {@link Lock} contract on the real database, two templates standing for two nodes.
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class LockViewTests {

	private static HikariDataSource pool;

	private static LockTemplate node;

	private static LockTemplate other;

	@BeforeAll
	static void nodes() {
		pool = TestDatabase.get().newDataSource(8);
		LockNodes.migrateOnce(pool);
		node = LockNodes.node(LockMode.LEASE, "view-node", pool);
		other = LockNodes.node(LockMode.LEASE, "view-other", pool);
	}

	@AfterAll
	static void close() {
		pool.close();
	}

	private static String resource() {
		return "view-" + UUID.randomUUID();
	}

	@Test
	void lockIsReentrantOnTheOwnerThreadAndTheLastUnlockReleasesInTheDatabase() {
		String resource = resource();
		LockView lock = node.asLock(resource);
		lock.lock();
		long token = CurrentLock.get(resource).orElseThrow().fencingToken();
		assertThat(token).isPositive();
		assertThat(lock.currentHold().orElseThrow().fencingToken()).isEqualTo(token);
		assertThat(lock.tryLock()).isTrue();
		assertThat(lock.getHoldCount()).isEqualTo(2);
		assertThat(CurrentLock.get(resource).orElseThrow().fencingToken()).isEqualTo(token);
		assertThat(other.tryAcquire(resource)).isEmpty();
		lock.unlock();
		assertThat(lock.isHeldByCurrentThread()).isTrue();
		assertThat(other.tryAcquire(resource)).isEmpty();
		lock.unlock();
		assertThat(lock.isHeldByCurrentThread()).isFalse();
		assertThat(CurrentLock.get(resource)).isEmpty();
		try (LockHandle taken = other.tryAcquire(resource).orElseThrow()) {
			assertThat(taken.fencingToken()).isGreaterThan(token);
			assertThat(lock.tryLock()).isFalse();
		}
	}

	@Test
	void unlockByAThreadThatDoesNotHoldItThrowsIllegalMonitorStateException() throws Exception {
		String resource = resource();
		Lock lock = node.asLock(resource);
		assertThatExceptionOfType(IllegalMonitorStateException.class).isThrownBy(lock::unlock);
		lock.lock();
		try {
			CompletableFuture<Throwable> fromOther = CompletableFuture.supplyAsync(() -> {
				try {
					lock.unlock();
					return null;
				}
				catch (Throwable ex) {
					return ex;
				}
			});
			assertThat(fromOther.get(10, TimeUnit.SECONDS)).isInstanceOf(IllegalMonitorStateException.class);
			assertThat(other.tryAcquire(resource)).isEmpty();
		}
		finally {
			lock.unlock();
		}
		assertThatExceptionOfType(IllegalMonitorStateException.class).isThrownBy(lock::unlock);
	}

	@Test
	void twoViewsOfOneResourceAreTheSameLock() {
		String resource = resource();
		Lock first = node.asLock(resource);
		Lock second = node.asLock(resource, LockOptions.defaults());
		first.lock();
		second.unlock();
		assertThat(CurrentLock.get(resource)).isEmpty();
		assertThatExceptionOfType(IllegalMonitorStateException.class).isThrownBy(first::unlock);
	}

	@Test
	void tryLockWithATimeGivesUpAfterItAndSucceedsOnceFree() throws Exception {
		String resource = resource();
		Lock lock = node.asLock(resource);
		LockHandle held = other.acquire(resource);
		long start = System.nanoTime();
		assertThat(lock.tryLock(200, TimeUnit.MILLISECONDS)).isFalse();
		assertThat(System.nanoTime() - start).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(200));
		held.close();
		assertThat(lock.tryLock(5, TimeUnit.SECONDS)).isTrue();
		lock.unlock();
	}

	@Test
	void tryLockWithATimeGetsTheLockWhenReleasedWhileWaiting() throws Exception {
		String resource = resource();
		Lock lock = node.asLock(resource);
		CountDownLatch taken = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		Thread holder = new Thread(() -> {
			try (LockHandle held = other.acquire(resource)) {
				taken.countDown();
				release.await();
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		});
		holder.start();
		assertThat(taken.await(10, TimeUnit.SECONDS)).isTrue();
		CompletableFuture<Boolean> waiter = CompletableFuture.supplyAsync(() -> {
			try {
				boolean got = lock.tryLock(10, TimeUnit.SECONDS);
				if (got) {
					lock.unlock();
				}
				return got;
			}
			catch (InterruptedException ex) {
				return false;
			}
		});
		sleep(300);
		assertThat(waiter).isNotDone();
		release.countDown();
		assertThat(waiter.get(15, TimeUnit.SECONDS)).isTrue();
		holder.join();
	}

	@Test
	void lockInterruptiblyThrowsInterruptedExceptionAndHoldsNothing() throws Exception {
		String resource = resource();
		Lock lock = node.asLock(resource);
		try (LockHandle held = other.acquire(resource)) {
			AtomicReference<Throwable> outcome = new AtomicReference<>();
			Thread waiter = new Thread(() -> {
				try {
					lock.lockInterruptibly();
					outcome.set(new AssertionError("acquired"));
				}
				catch (Throwable ex) {
					outcome.set(ex);
				}
			});
			waiter.start();
			sleep(300);
			waiter.interrupt();
			waiter.join(10_000);
			assertThat(outcome.get()).isInstanceOf(InterruptedException.class);
		}
		Thread.currentThread().interrupt();
		assertThatExceptionOfType(InterruptedException.class).isThrownBy(lock::lockInterruptibly);
		assertThat(Thread.interrupted()).isFalse();
		Thread.currentThread().interrupt();
		assertThatExceptionOfType(InterruptedException.class).isThrownBy(() -> lock.tryLock(1, TimeUnit.SECONDS));
		assertThat(CurrentLock.get(resource)).isEmpty();
	}

	@Test
	void lockIgnoresInterruptsWhileWaitingAndKeepsTheStatus() throws Exception {
		String resource = resource();
		Lock lock = node.asLock(resource);
		LockHandle held = other.acquire(resource);
		AtomicReference<Boolean> interruptedAfter = new AtomicReference<>();
		AtomicReference<Long> token = new AtomicReference<>();
		Thread waiter = new Thread(() -> {
			lock.lock();
			interruptedAfter.set(Thread.currentThread().isInterrupted());
			token.set(CurrentLock.get(resource).orElseThrow().fencingToken());
			lock.unlock();
		});
		waiter.start();
		sleep(300);
		waiter.interrupt();
		sleep(300);
		assertThat(waiter.isAlive()).isTrue();
		long heldToken = held.fencingToken();
		held.close();
		waiter.join(15_000);
		assertThat(interruptedAfter.get()).isTrue();
		assertThat(token.get()).isGreaterThan(heldToken);
	}

	@Test
	void newConditionIsNotSupported() {
		assertThatExceptionOfType(UnsupportedOperationException.class)
			.isThrownBy(() -> node.asLock(resource()).newCondition());
	}

	@Test
	void aPessimisticViewLocksAndUnlocks() {
		LockTemplate pessimistic = LockNodes.node(LockMode.PESSIMISTIC, "view-pessimistic", pool);
		String resource = resource();
		Lock lock = pessimistic.asLock(resource, LockOptions.defaults().withMode(LockMode.PESSIMISTIC));
		LockTemplate secondNode = LockNodes.node(LockMode.PESSIMISTIC, "view-pessimistic-2", pool);
		lock.lock();
		try {
			assertThat(lock.tryLock()).isTrue();
			lock.unlock();
			assertThat(secondNode.tryAcquire(resource)).isEmpty();
		}
		finally {
			lock.unlock();
		}
		secondNode.tryAcquire(resource).orElseThrow().close();
	}

	@Test
	void optimisticHasNoLockToView() {
		assertThatIllegalArgumentException()
			.isThrownBy(() -> node.asLock(resource(), LockOptions.defaults().withMode(LockMode.OPTIMISTIC)));
	}

	private static void sleep(long millis) {
		try {
			Thread.sleep(millis);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

}
