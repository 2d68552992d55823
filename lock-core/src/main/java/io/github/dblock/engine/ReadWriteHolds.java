package io.github.dblock.engine;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import io.github.dblock.LockInterruptedException;
import io.github.dblock.LockIntrospection.LocalHold;
import io.github.dblock.LockLostException;
import io.github.dblock.LockMode;
import io.github.dblock.LockType;
import io.github.dblock.LockUpgradeException;
import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.spi.ReadWriteLockProvider;
import io.micrometer.observation.Observation;

/**
 * The JVM-local engine of read/write locks: every thread is its own owner in the database; a thread re-enters its
 * read or write hold (a write hold also serves reads), and asking for the write lock while holding only the read lock
 * is refused at once. A hold whose lease is over is not re-entered: it counts as lost and the call acquires anew.
 * Thread-safe.
 */
final class ReadWriteHolds {

	private static final org.apache.commons.logging.Log logger = org.apache.commons.logging.LogFactory
		.getLog(ReadWriteHolds.class);

	/** Read and write holds, per resource and owning thread; removed when the thread's last handle is closed. */
	private final Map<Key, ReadWriteLockHandle.State> holds = new ConcurrentHashMap<>();

	private final LockSettings settings;

	ReadWriteHolds(LockSettings settings) {
		this.settings = settings;
	}

	LockSettings settings() {
		return this.settings;
	}

	/**
	 * A read or write lock: re-entered from the thread's own hold when it has one (a write hold also serves reads;
	 * a read hold cannot serve a write), else taken in the database for this thread as a new owner.
	 * @throws LockUpgradeException if the call asks for WRITE while the thread holds only READ
	 * @throws LockInterruptedException if interrupted while waiting
	 */
	Attempt acquire(LockCall call) {
		Key key = new Key(call.resource(), Thread.currentThread());
		ReadWriteLockHandle.State state = this.holds.get(key);
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
			result = ((ReadWriteLockProvider) call.provider()).acquire(lockRequest, call.type());
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new LockInterruptedException(call.resource(), ex);
		}
		HeldLock held = result.lock();
		if (held == null) {
			return Attempt.notAcquired(result.holder(), result.cause());
		}
		state = new ReadWriteLockHandle.State(call.resource(), call.mode(), call.type(), held, lockRequest.holder());
		this.holds.put(key, state);
		this.settings.interruptOnLoss(held);
		state.holding = this.settings.holding(call.resource(), call.mode(), held);
		ReadWriteLockHandle handle = new ReadWriteLockHandle(this, state, call.type());
		if (call.type() == LockType.WRITE && call.mode() == LockMode.LEASE) {
			// readers share the lock: a READ hold has nothing exclusive for a commit to be validated under
			this.settings.validateAtCommit(call.resource(), held);
		}
		ThreadHolds.push(handle);
		return Attempt.acquired(handle);
	}

	private ReadWriteLockHandle reenter(LockCall call, ReadWriteLockHandle.State state) {
		if (state.type == LockType.READ && call.type() == LockType.WRITE) {
			throw new LockUpgradeException(call.resource());
		}
		state.holds++;
		ReadWriteLockHandle handle = new ReadWriteLockHandle(this, state, call.type());
		if (state.type == LockType.WRITE && state.mode == LockMode.LEASE) {
			this.settings.validateAtCommit(call.resource(), state.held); // re-entered in a transaction begun since
		}
		ThreadHolds.push(handle);
		return handle;
	}

	/**
	 * Called by {@link ReadWriteLockHandle#close()} on the owning thread. The last close of a WRITE hold whose
	 * commit-time validation is pending in the current transaction releases it only once that transaction has
	 * completed (as {@link ExclusiveRelease} does for exclusive holds): the hold stays the thread's meanwhile, with no
	 * open handle, and the thread may re-enter it; once the transaction has completed it is released unless it was
	 * re-entered and is still open.
	 * @throws LockLostException if the lock was no longer held at release
	 */
	void release(ReadWriteLockHandle.State state) {
		if (--state.holds > 0) {
			return;
		}
		CommitCheck check = CommitCheck.pending(state.held);
		if (check == null) {
			releaseNow(state);
			return;
		}
		if (check.isDeferred()) {
			return; // re-entered and closed again in the same transaction: the release deferred at the first close does it
		}
		check.deferUntilCompletion(() -> {
			if (state.holds > 0) {
				return; // re-entered in the transaction and still open: its last close() releases
			}
			try {
				releaseNow(state);
			}
			catch (LockLostException ex) {
				// the commit, if any, was checked under the row lock; only the lease's end was found late
				logger.warn(ex.getMessage() + " (released after its transaction completed)");
			}
			catch (RuntimeException ex) {
				logger.warn("Could not release the " + state.type + " lock '" + state.resource
						+ "' after its transaction completed", ex);
			}
		});
	}

	private void releaseNow(ReadWriteLockHandle.State state) {
		this.holds.remove(new Key(state.resource, state.owner), state);
		Observation holding = state.holding;
		state.holding = null;
		if (holding != null) {
			holding.stop();
		}
		if (!state.held.release()) {
			throw new LockLostException(state.resource, state.held.fencingToken(), "The " + state.type + " lock '"
					+ state.resource + "' (fencing token " + state.held.fencingToken() + ") was no longer held at "
					+ "release (its lease had expired) and another owner may have taken it");
		}
	}

	/** The read and write locks this JVM holds now, a snapshot. */
	List<LocalHold> localHolds() {
		List<LocalHold> result = new ArrayList<>();
		for (ReadWriteLockHandle.State state : this.holds.values()) {
			result.add(new LocalHold(state.resource, state.mode, state.holds, state.held.fencingToken(),
					state.holder, state.type));
		}
		return result;
	}

	/** The number of read and write holds (per owning thread). */
	int size() {
		return this.holds.size();
	}

	/** A thread's read/write hold of a resource. */
	private record Key(String resource, Thread owner) {
	}

}
