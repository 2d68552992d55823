package io.github.dblock.engine;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import io.github.dblock.LockInterruptedException;
import io.github.dblock.LockIntrospection.LocalHold;
import io.github.dblock.LockMode;
import io.github.dblock.LockType;
import io.github.dblock.LockUpgradeException;
import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.micrometer.observation.Observation;

/**
 * The JVM-local engine of read/write locks: every thread is its own owner in the database; a thread re-enters its
 * read or write hold (a write hold also serves reads), and asking for the write lock while holding only the read lock
 * is refused at once. A hold whose lease is over is not re-entered: it counts as lost and the call acquires anew.
 * Thread-safe.
 */
final class ReadWriteHolds {

	/** Read and write holds, per resource and owning thread; removed when the thread's last handle is closed. */
	private final Map<ReadWriteHold.Key, ReadWriteHold> holds = new ConcurrentHashMap<>();

	private final LockSettings settings;

	/** What the handles' last close does; removes the released hold from {@link #holds}. */
	private final ReadWriteRelease release;

	ReadWriteHolds(LockSettings settings) {
		this.settings = settings;
		this.release = new ReadWriteRelease(this.holds, settings);
	}

	/**
	 * A read or write lock: re-entered from the thread's own hold when it has one (a write hold also serves reads;
	 * a read hold cannot serve a write), else taken in the database for this thread as a new owner.
	 * @throws LockUpgradeException if the call asks for WRITE while the thread holds only READ
	 * @throws LockInterruptedException if interrupted while waiting
	 */
	Attempt acquire(LockCall call) {
		ReadWriteHold.Key key = new ReadWriteHold.Key(call.resource(), Thread.currentThread());
		ReadWriteHold state = this.holds.get(key);
		if (state != null && (state.held.isLost() || System.nanoTime() - state.held.validUntilNanos() >= 0)) {
			// the thread's hold is over (its lease ended, or it was found lost): re-entering would run more work
			// without exclusion, so that hold counts as lost (its handles' last close() throws LockLostException) and
			// this call acquires anew
			this.holds.remove(key, state);
			Observation holding = state.holding;
			state.holding = null;
			if (holding != null) {
				holding.event(LockSettings.LOST);
				holding.stop();
			}
			state = null;
		}
		if (state != null) {
			return Attempt.acquired(reenter(call, state));
		}
		LockRequest lockRequest = call.toLockRequest(call.deadlineNanos(), this.settings.holderDescription());
		AcquireResult result;
		try {
			result = Capabilities.readWrite(call.provider()).acquire(lockRequest, call.type());
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new LockInterruptedException(call.resource(), ex);
		}
		HeldLock held = result.lock();
		if (held == null) {
			return Attempt.notAcquired(result.holder(), result.cause());
		}
		state = new ReadWriteHold(call.resource(), call.mode(), call.type(), held, lockRequest.holder());
		this.holds.put(key, state);
		this.settings.interruptOnLoss(held);
		state.holding = this.settings.holding(call.resource(), call.mode(), held);
		ReadWriteLockHandle handle = new ReadWriteLockHandle(this.release, state, call.type());
		if (call.type() == LockType.WRITE && call.mode() == LockMode.LEASE) {
			// readers share the lock: a READ hold has nothing exclusive for a commit to be validated under
			this.settings.validateAtCommit(call.resource(), held);
		}
		ThreadHolds.push(handle);
		return Attempt.acquired(handle);
	}

	private ReadWriteLockHandle reenter(LockCall call, ReadWriteHold state) {
		if (state.type == LockType.READ && call.type() == LockType.WRITE) {
			throw new LockUpgradeException(call.resource());
		}
		state.holds++;
		ReadWriteLockHandle handle = new ReadWriteLockHandle(this.release, state, call.type());
		if (state.type == LockType.WRITE && state.mode == LockMode.LEASE) {
			this.settings.validateAtCommit(call.resource(), state.held); // re-entered in a transaction begun since
		}
		ThreadHolds.push(handle);
		return handle;
	}

	/** The read and write locks this JVM holds now, a snapshot. */
	List<LocalHold> localHolds() {
		List<LocalHold> result = new ArrayList<>();
		for (ReadWriteHold state : this.holds.values()) {
			result.add(new LocalHold(state.resource, state.mode, state.holds, state.held.fencingToken(),
					state.holder, state.type));
		}
		return result;
	}

	/** The number of read and write holds (per owning thread). */
	int size() {
		return this.holds.size();
	}

}
