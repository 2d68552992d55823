package io.github.dblock.integration;

import java.io.IOException;
import java.time.Duration;
import java.util.ConcurrentModificationException;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.Lock;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.CurrentLock;
import io.github.dblock.LockLostException;
import io.github.dblock.LockMode;
import io.github.dblock.integration.DistributedLockRegistry;
import io.github.dblock.jdbc.admin.LockTableAdmin;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.integration.support.locks.DistributedLock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

/**
 * The Spring Integration {@code LockRegistry} contract as {@code JdbcLockRegistry}'s own tests exercise it, against
 * {@link DistributedLockRegistry}: two registries on one database (each with its own pool and template) stand for two
 * nodes.
 */
class DistributedLockRegistryTests {

	private static HikariDataSource poolA;

	private static HikariDataSource poolB;

	private static DistributedLockRegistry registry;

	private static DistributedLockRegistry otherNode;

	private static DistributedLockRegistry withTtl;

	private static LockTableAdmin admin;

	@BeforeAll
	static void nodes() {
		poolA = TestDatabase.get().newDataSource(6);
		poolB = TestDatabase.get().newDataSource(6);
		LockNodes.migrateOnce(poolA);
		registry = new DistributedLockRegistry(LockNodes.node(LockMode.LEASE, "registry-a", poolA), null);
		otherNode = new DistributedLockRegistry(LockNodes.node(LockMode.LEASE, "registry-b", poolB), null);
		withTtl = new DistributedLockRegistry(LockNodes.node(LockMode.LEASE, "registry-ttl", poolA),
				Duration.ofMillis(300));
		admin = new LockTableAdmin(poolA, LockNodes.TABLE, Duration.ofSeconds(5));
	}

	@AfterAll
	static void close() {
		poolA.close();
		poolB.close();
	}

	private static String key() {
		return "registry-" + UUID.randomUUID();
	}

	@Test
	void theSameKeyIsExclusiveAcrossTwoNodesAndFreeAfterUnlock() throws Exception {
		String key = key();
		Lock lock = registry.obtain(key);
		lock.lockInterruptibly();
		try {
			assertThat(otherNode.obtain(key).tryLock()).isFalse();
			assertThat(otherNode.obtain(key).tryLock(100, TimeUnit.MILLISECONDS)).isFalse();
			assertThat(admin.isLocked(key)).isTrue();
		}
		finally {
			lock.unlock();
		}
		Lock other = otherNode.obtain(key);
		assertThat(other.tryLock()).isTrue();
		other.unlock();
		assertThat(admin.isLocked(key)).isFalse();
	}

	@Test
	void differentKeysAreIndependent() {
		Lock one = registry.obtain(key());
		Lock two = otherNode.obtain(key());
		assertThat(one.tryLock()).isTrue();
		assertThat(two.tryLock()).isTrue();
		one.unlock();
		two.unlock();
	}

	@Test
	void locksAreReentrantAndTheFencingTokenIsTheHolds() throws Exception {
		String key = key();
		Lock lock1 = registry.obtain(key);
		lock1.lockInterruptibly();
		long token = CurrentLock.get(key).orElseThrow().fencingToken();
		Lock lock2 = registry.obtain(key);
		lock2.lockInterruptibly();
		assertThat(CurrentLock.get(key).orElseThrow().fencingToken()).isEqualTo(token);
		lock2.unlock();
		assertThat(otherNode.obtain(key).tryLock()).isFalse();
		lock1.unlock();
		assertThat(otherNode.obtain(key).tryLock()).isTrue();
		otherNode.obtain(key).unlock();
	}

	@Test
	void aSecondThreadWaitsUntilTheFirstUnlocks() throws Exception {
		String key = key();
		Lock lock = registry.obtain(key);
		lock.lockInterruptibly();
		CountDownLatch started = new CountDownLatch(1);
		CompletableFuture<Boolean> waiter = CompletableFuture.supplyAsync(() -> {
			started.countDown();
			try {
				boolean got = registry.obtain(key).tryLock(10, TimeUnit.SECONDS);
				registry.obtain(key).unlock();
				return got;
			}
			catch (InterruptedException ex) {
				return false;
			}
		});
		started.await();
		Thread.sleep(200);
		assertThat(waiter).isNotDone();
		lock.unlock();
		assertThat(waiter.get(15, TimeUnit.SECONDS)).isTrue();
	}

	@Test
	void unlockByANonOwnerThrowsIllegalMonitorStateException() throws Exception {
		String key = key();
		Lock lock = registry.obtain(key);
		lock.lockInterruptibly();
		try {
			CompletableFuture<Throwable> fromOther = CompletableFuture.supplyAsync(() -> {
				try {
					registry.obtain(key).unlock();
					return null;
				}
				catch (Throwable ex) {
					return ex;
				}
			});
			assertThat(fromOther.get(10, TimeUnit.SECONDS)).isInstanceOf(IllegalMonitorStateException.class);
		}
		finally {
			lock.unlock();
		}
		assertThatExceptionOfType(IllegalMonitorStateException.class).isThrownBy(() -> registry.obtain(key).unlock());
	}

	@Test
	void aLockWithATtlExpiresAndItsUnlockThenThrowsConcurrentModificationException() throws Exception {
		String key = key();
		DistributedLock lock = registry.obtain(key);
		assertThat(lock.tryLock(Duration.ZERO, Duration.ofMillis(200))).isTrue();
		Thread.sleep(400);
		assertThat(admin.isLocked(key)).isFalse();
		DistributedLock other = otherNode.obtain(key);
		assertThat(other.tryLock(Duration.ofSeconds(1), Duration.ofSeconds(10))).isTrue();
		assertThatExceptionOfType(ConcurrentModificationException.class).isThrownBy(lock::unlock)
			.withCauseInstanceOf(LockLostException.class);
		assertThat(admin.isLocked(key)).isTrue();
		other.unlock();
	}

	@Test
	void theRegistryTtlAppliesToLockAndRenewLockExtendsIt() throws Exception {
		String key = key();
		Lock lock = withTtl.obtain(key);
		lock.lock();
		withTtl.renewLock(key, Duration.ofSeconds(5));
		Thread.sleep(500); // past the registry's 300 ms
		assertThat(otherNode.obtain(key).tryLock()).isFalse();
		withTtl.renewLock(key); // back to the registry's 300 ms from now
		Thread.sleep(500);
		assertThat(admin.isLocked(key)).isFalse();
		assertThatIllegalStateException().isThrownBy(() -> withTtl.renewLock(key));
		assertThatExceptionOfType(ConcurrentModificationException.class).isThrownBy(lock::unlock);
	}

	@Test
	void renewLockOnARenewedLeaseChecksItIsHeldAndRefusesATtl() {
		String key = key();
		DistributedLock lock = registry.obtain(key);
		lock.lock();
		try {
			registry.renewLock(key);
			assertThatIllegalStateException().isThrownBy(() -> registry.renewLock(key, Duration.ofSeconds(5)))
				.withMessageContaining("renewed automatically");
			assertThatExceptionOfType(java.util.concurrent.CompletionException.class)
				.isThrownBy(() -> CompletableFuture.runAsync(() -> registry.renewLock(key)).join())
				.withCauseInstanceOf(IllegalMonitorStateException.class);
		}
		finally {
			lock.unlock();
		}
		assertThatExceptionOfType(IllegalMonitorStateException.class).isThrownBy(() -> registry.renewLock(key));
	}

	@Test
	void executeLockedPassesCheckedExceptionsAndTimesOut() throws Exception {
		String key = key();
		IOException thrown = new IOException("boom");
		assertThatExceptionOfType(IOException.class).isThrownBy(() -> registry.executeLocked(key, () -> {
			assertThat(admin.isLocked(key)).isTrue();
			throw thrown;
		})).isSameAs(thrown);
		assertThat(admin.isLocked(key)).isFalse();
		assertThat(registry.executeLocked(key, () -> "done")).isEqualTo("done");
		Lock held = otherNode.obtain(key);
		held.lock();
		try {
			assertThatExceptionOfType(TimeoutException.class)
				.isThrownBy(() -> registry.executeLocked(key, Duration.ofMillis(100), () -> "never"));
		}
		finally {
			held.unlock();
		}
	}

	@Test
	void keysMustBeValidStrings() {
		assertThatIllegalArgumentException().isThrownBy(() -> registry.obtain(42));
		assertThatIllegalArgumentException().isThrownBy(() -> registry.obtain(""));
	}

}
