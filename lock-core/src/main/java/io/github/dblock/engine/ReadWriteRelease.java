package io.github.dblock.engine;

import java.util.Map;

import io.github.dblock.LockLostException;
import io.micrometer.observation.Observation;

/**
 * The release of a read or write hold at its handle's last close: in the database, after the transaction whose
 * commit it validates, if any; the hold then leaves the holds of {@link ReadWriteHolds}. Thread-safe (each call works
 * on the closing thread's own hold).
 */
final class ReadWriteRelease {

	private static final org.apache.commons.logging.Log logger = org.apache.commons.logging.LogFactory
		.getLog(ReadWriteRelease.class);

	/** The holds of {@link ReadWriteHolds}, shared with it: a released hold is removed. */
	private final Map<ReadWriteHold.Key, ReadWriteHold> holds;

	private final LockSettings settings;

	ReadWriteRelease(Map<ReadWriteHold.Key, ReadWriteHold> holds, LockSettings settings) {
		this.holds = holds;
		this.settings = settings;
	}

	/** The settings the handles of these holds validate commits with. */
	LockSettings settings() {
		return this.settings;
	}

	/**
	 * Called by {@link ReadWriteLockHandle#close()} on the owning thread. The last close of a WRITE hold whose
	 * commit-time validation is pending in the current transaction releases it only once that transaction has
	 * completed (as {@link ExclusiveRelease} does for exclusive holds): the hold stays the thread's meanwhile, with no
	 * open handle, and the thread may re-enter it; once the transaction has completed it is released unless it was
	 * re-entered and is still open.
	 * @throws LockLostException if the lock was no longer held at release
	 */
	void release(ReadWriteHold state) {
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

	private void releaseNow(ReadWriteHold state) {
		this.holds.remove(state.key(), state);
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

}
