package io.github.dblock.testing;

import java.time.Duration;
import java.util.List;
import java.util.function.Function;
import java.util.function.Supplier;

import io.github.dblock.LockMode;
import io.github.dblock.LockType;
import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockProvider;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.spi.ReadWriteLockProvider;
import io.github.dblock.spi.TransactionalLockProvider;
import io.github.dblock.spi.WorkLockProvider;

/**
 * The {@link LockProvider}s of an {@link InMemoryLockTemplate}, one per {@link LockMode}, on an
 * {@link InMemoryLockStore}: the template's engine (re-entry, the local queue, read/write holds, CurrentLock) is
 * the real one, only the database is replaced. Thread-safe, like the store.
 */
final class InMemoryProviders {

	private InMemoryProviders() {
	}

	/** The three providers on the store; OPTIMISTIC runs its work at most {@code maxAttempts} times. */
	static List<LockProvider> of(InMemoryLockStore store, int maxAttempts) {
		return List.of(new Lease(store), new RowLock(store), new Optimistic(store, maxAttempts));
	}

	/** LEASE: exclusive leases and read/write leases. */
	private record Lease(InMemoryLockStore store) implements ReadWriteLockProvider {

		@Override
		public LockMode mode() {
			return LockMode.LEASE;
		}

		@Override
		public AcquireResult acquire(LockRequest request) throws InterruptedException {
			return this.store.acquireExclusive(request, false);
		}

		@Override
		public AcquireResult acquire(LockRequest request, LockType type) throws InterruptedException {
			if (type == LockType.EXCLUSIVE) {
				throw new IllegalArgumentException("EXCLUSIVE is not a side of a read/write lock; use acquire(request)");
			}
			return this.store.acquireReadWrite(request, type);
		}

	}

	/**
	 * PESSIMISTIC: a row lock held until released, without a lease; waiters wait in the store (as in the server's
	 * queue). There are no transactions in memory: the work runs directly and the lock ends when its handle is closed.
	 */
	private record RowLock(InMemoryLockStore store) implements TransactionalLockProvider {

		@Override
		public LockMode mode() {
			return LockMode.PESSIMISTIC;
		}

		@Override
		public AcquireResult acquire(LockRequest request) throws InterruptedException {
			return this.store.acquireExclusive(request, true);
		}

		@Override
		public boolean canWaitInDatabase() {
			return true;
		}

		@Override
		public void announceNextAttempt(String resource, Duration nextAttemptWithin) {
			// nothing to announce: waiters in memory are woken when the lock is released
		}

		@Override
		public boolean isRetryableAttemptFailure(RuntimeException failure) {
			return false;
		}

		@Override
		public <T> T inTransaction(LockRequest request, Supplier<T> work) {
			return work.get();
		}

	}

	/** OPTIMISTIC: the version check of {@link InMemoryLockStore#executeOptimistic}. */
	private record Optimistic(InMemoryLockStore store, int maxAttempts) implements WorkLockProvider {

		@Override
		public LockMode mode() {
			return LockMode.OPTIMISTIC;
		}

		@Override
		public AcquireResult acquire(LockRequest request) {
			throw new UnsupportedOperationException("OPTIMISTIC locks exist only around a unit of work; use execute");
		}

		@Override
		public <T> Outcome<T> execute(LockRequest request, Function<HeldLock, T> work) throws InterruptedException {
			return this.store.executeOptimistic(request, work, this.maxAttempts);
		}

	}

}
