package io.github.dblock.testing;

import java.util.HashSet;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.spi.WorkLockProvider;
import org.jspecify.annotations.Nullable;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * OPTIMISTIC work in an {@link InMemoryLockStore}: each attempt reads the version of the resource's exclusive lock
 * (its fencing token), runs the work, and commits if the version did not move and nobody holds the lock. There are no
 * transactions to roll back, so the runs of one resource never overlap.
 * <p>
 * Thread-safe: the set of running resources is guarded by the store's {@link StoreMonitor}; the work runs outside it.
 */
final class OptimisticRuns {

	/** The pauses between the attempts of OPTIMISTIC work: 5 ms doubling to 50 ms. */
	private static final long FIRST_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

	private static final long LONGEST_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

	private final StoreMonitor monitor;

	private final ExclusiveLocks exclusiveLocks;

	/** Resources whose OPTIMISTIC work runs now. */
	private final Set<String> running = new HashSet<>();

	OptimisticRuns(StoreMonitor monitor, ExclusiveLocks exclusiveLocks) {
		this.monitor = monitor;
		this.exclusiveLocks = exclusiveLocks;
	}

	/**
	 * Runs OPTIMISTIC work: reads the resource's version, runs the work, and commits if the version did not move and
	 * nobody holds the lock; else runs it again after a pause, up to {@code maxAttempts} times and not past the
	 * deadline (at least two attempts when allowed). Runs of one resource do not overlap.
	 */
	<T> WorkLockProvider.Outcome<T> execute(LockRequest request, Function<HeldLock, T> work, int maxAttempts)
			throws InterruptedException {
		String resource = request.resource();
		if (TransactionSynchronizationManager.isActualTransactionActive()) {
			throw new IllegalStateException("OPTIMISTIC lock on '" + resource + "' was requested inside an active "
					+ "transaction; it must run its work in a transaction of its own, so that a conflict can roll the "
					+ "work back and run it again. Call it outside the transaction, or use LEASE or PESSIMISTIC mode.");
		}
		long pause = FIRST_PAUSE_NANOS;
		for (int attempt = 1;; attempt++) {
			Long version = startRun(request);
			if (version == null) {
				return new WorkLockProvider.Outcome<>(null, false,
						"another unit of work on the resource, for the whole wait time");
			}
			Attempt<T> result = runOnce(request, work, version);
			if (result.committed()) {
				return new WorkLockProvider.Outcome<>(result.value(), true, null);
			}
			long remaining = request.remainingNanos();
			if (attempt >= maxAttempts || (attempt >= 2 && remaining <= 0)) {
				return new WorkLockProvider.Outcome<>(null, false, "the version of the resource moved during each of "
						+ attempt + " attempts (another owner took the lock meanwhile)");
			}
			TimeUnit.NANOSECONDS.sleep(Math.max(0, Math.min(pause, remaining)));
			pause = Math.min(pause * 2, LONGEST_PAUSE_NANOS);
		}
	}

	/**
	 * Waits for a stall and for the resource's running work to end, then marks it running.
	 * @return the version the run starts from, or null if other work ran for the whole wait time
	 */
	private @Nullable Long startRun(LockRequest request) throws InterruptedException {
		String resource = request.resource();
		synchronized (this.monitor) {
			this.monitor.awaitStall(resource);
			while (this.running.contains(resource)) {
				long remaining = request.remainingNanos();
				if (remaining <= 0) {
					return null;
				}
				this.monitor.await(remaining);
			}
			this.running.add(resource);
			return this.exclusiveLocks.version(resource);
		}
	}

	/** Runs the work once from {@code version}, commits if it can, and ends the run. */
	private <T> Attempt<T> runOnce(LockRequest request, Function<HeldLock, T> work, long version) {
		try {
			T value = work.apply(new VersionHold(version));
			boolean committed;
			synchronized (this.monitor) {
				committed = this.exclusiveLocks.commit(request.resource(), version, request.holder());
			}
			return new Attempt<>(value, committed);
		}
		finally {
			synchronized (this.monitor) {
				this.running.remove(request.resource());
				this.monitor.signalAll();
			}
		}
	}

	/** One attempt's value and whether it committed. */
	private record Attempt<T>(T value, boolean committed) {
	}

	/** What OPTIMISTIC work sees: the version it started from. */
	private static final class VersionHold implements HeldLock {

		private final long version;

		private final String ownerToken = UUID.randomUUID().toString();

		VersionHold(long version) {
			this.version = version;
		}

		@Override
		public long fencingToken() {
			return this.version;
		}

		@Override
		public String ownerToken() {
			return this.ownerToken;
		}

		@Override
		public long validUntilNanos() {
			return Long.MAX_VALUE;
		}

		@Override
		public boolean release() {
			return true;
		}

	}

}
