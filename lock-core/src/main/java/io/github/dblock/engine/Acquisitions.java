package io.github.dblock.engine;

import java.time.Duration;

import io.github.dblock.LockCallback;
import io.github.dblock.LockHandle;
import io.github.dblock.LockNotAcquiredException;
import io.github.dblock.LockType;
import io.micrometer.observation.Observation;
import org.jspecify.annotations.Nullable;

/**
 * Acquisitions of a call through the holds of its lock type ({@link ExclusiveHolds}, {@link ReadWriteHolds}),
 * observed, and an action run under the lock acquired. Thread-safe.
 */
final class Acquisitions {

	private final LockSettings settings;

	private final ExclusiveHolds exclusive;

	private final ReadWriteHolds readWrite;

	Acquisitions(LockSettings settings, ExclusiveHolds exclusive, ReadWriteHolds readWrite) {
		this.settings = settings;
		this.exclusive = exclusive;
		this.readWrite = readWrite;
	}

	/** Acquires for the current thread, observed as one {@code distributed.lock.acquire}. */
	Attempt acquire(LockCall call) {
		if (Capabilities.work(call.provider()) != null) {
			return acquireUnobserved(call, null); // refuses with a clear message
		}
		Observation observation = this.settings.acquisition(call.resource(), call.mode()).start();
		try {
			Attempt attempt = acquireUnobserved(call, null);
			observation.lowCardinalityKeyValue("outcome", (attempt.handle() != null) ? "acquired" : "timed_out");
			return attempt;
		}
		catch (RuntimeException | Error ex) {
			observation.lowCardinalityKeyValue("outcome", "failed");
			observation.error(ex);
			throw ex;
		}
		finally {
			observation.stop();
		}
	}

	/**
	 * @param admission the gate taken for the call before its transaction began, or {@code null}
	 * ({@link ExclusiveHolds#admit})
	 */
	private Attempt acquireUnobserved(LockCall call, @Nullable Admission admission) {
		if (call.type() != LockType.EXCLUSIVE) {
			return this.readWrite.acquire(call);
		}
		if (Capabilities.work(call.provider()) != null) {
			throw new IllegalArgumentException("Lock mode " + call.mode() + " has no lock to hold: its work runs in the "
					+ "transaction that checks the version. Use execute(...) or @DistributedLock for '" + call.resource() + "'");
		}
		return this.exclusive.acquire(call, admission);
	}

	/**
	 * Acquires, runs the action and releases.
	 * @param reportedWaitTime the wait time a {@link LockNotAcquiredException} names (the caller's, also when this
	 * attempt had only the rest of it)
	 * @param attempts when not {@code null}, one of several attempts: the acquisition is observed by it rather than
	 * on its own, and it is told when the acquisition itself (not the action) failed
	 * @param admission the gate taken for the attempt before its transaction began, or {@code null}
	 */
	<T> @Nullable T executeHolding(LockCall call, LockCallback<T> action,
			Duration reportedWaitTime, @Nullable ExecuteAttempts attempts, @Nullable Admission admission) {
		T result;
		Attempt attempt = (attempts != null) ? acquireUnobserved(call, admission) : acquire(call);
		LockHandle lock = attempt.handle();
		if (lock == null) {
			if (attempts != null) {
				attempts.notAcquired = true;
			}
			throw new LockNotAcquiredException(call.resource(), reportedWaitTime, attempt.holder(), attempt.cause());
		}
		try {
			if (attempts != null) {
				attempts.actionStarted = true; // from here on a failure is not retried: the action may have run
				attempts.stop("acquired", null); // inside the try: a failing observation handler still releases
			}
			result = action.doWithLock(lock);
		}
		catch (Throwable ex) {
			try {
				lock.close();
			}
			catch (RuntimeException releaseFailure) {
				ex.addSuppressed(releaseFailure);
			}
			throw ex;
		}
		lock.close();
		return result;
	}

}
