package io.github.dblock.engine;

import io.github.dblock.LockLostException;
import io.github.dblock.LockModeConflictException;
import io.github.dblock.spi.HeldLock;
import org.jspecify.annotations.Nullable;

/**
 * Re-entry of an exclusive hold by the thread that holds it: a PESSIMISTIC hold in the mode it was taken in, a LEASE
 * hold while its lease lasts. Thread-safe (each call works on the current thread's own hold).
 */
final class ExclusiveReentry {

	private final LockSettings settings;

	private final ExclusiveRelease release;

	ExclusiveReentry(LockSettings settings, ExclusiveRelease release) {
		this.settings = settings;
		this.release = release;
	}

	/**
	 * A PESSIMISTIC holder re-enters its own acquisition (never a later holder's), in the mode it holds.
	 * @return the new handle, or {@code null} when the thread holds no PESSIMISTIC lock of the resource
	 * @throws LockLostException if the thread's hold is lost or was taken over
	 * @throws LockModeConflictException if the thread holds the PESSIMISTIC lock and the call asks for another mode
	 */
	@Nullable ExclusiveHandle reenterPessimistic(LocalLock entry, LockCall call) {
		String resource = call.resource();
		PessimisticHold own = entry.pessimisticHold();
		PessimisticHold mine = (ThreadHolds.innermost(resource).orElse(null) instanceof ExclusiveHandle open)
				? open.pessimisticHoldOf(entry) : null;
		if (mine != null && mine != own) {
			// this thread still holds the resource, but its row was taken over since (its connection died and the
			// next local thread was granted the row): re-entering would run more work without exclusion
			HeldLock superseded = mine.lock;
			throw new LockLostException(resource, superseded.fencingToken(), "Lock '" + resource
					+ "' (fencing token " + superseded.fencingToken() + ") was taken over after its connection "
					+ "failed; it cannot be re-entered");
		}
		if (own == null || own.thread != Thread.currentThread()) {
			return null;
		}
		if (own.mode != call.mode()) {
			throw new LockModeConflictException(resource, own.mode, call.mode());
		}
		if (own.lock.isLost()) {
			throw new LockLostException(resource, own.lock.fencingToken(), "Lock '" + resource
					+ "' (fencing token " + own.lock.fencingToken() + ") is already lost; it cannot be re-entered");
		}
		own.holds++;
		ExclusiveHandle handle = new ExclusiveHandle(this.release, entry, own.lock, own.mode, own, null);
		ThreadHolds.push(handle);
		return handle;
	}

	/**
	 * The gate owner re-enters its LEASE hold while the lease lasts, in the mode it holds; once the lease is over (by
	 * this JVM's clock, or found lost) re-entering would run more work without exclusion, so the outer hold counts as
	 * lost and the call acquires anew, keeping the gate.
	 * @return the new handle, or {@code null} when the caller must acquire anew
	 * @throws LockModeConflictException if the hold's lease lasts and the call asks for another mode
	 */
	@Nullable ExclusiveHandle reenterLease(LocalLock entry, LockCall call) {
		String resource = call.resource();
		LeaseHold[] stale = new LeaseHold[1];
		LeaseHold outer = entry.reentrantLease(stale);
		if (stale[0] != null) {
			stale[0].reportSuperseded(resource);
		}
		if (outer == null) {
			return null;
		}
		if (outer.mode != call.mode()) {
			throw new LockModeConflictException(resource, outer.mode, call.mode());
		}
		outer.holds++;
		ExclusiveHandle handle = new ExclusiveHandle(this.release, entry, outer.lock, outer.mode, null, outer);
		this.settings.validateAtCommit(resource, outer.lock);
		ThreadHolds.push(handle);
		return handle;
	}

}
