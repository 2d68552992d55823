package io.github.dblock.engine;

import io.github.dblock.LockMode;
import io.github.dblock.spi.HeldLock;
import io.micrometer.observation.Observation;
import org.jspecify.annotations.Nullable;

/**
 * One acquisition held with the gate (LEASE): its lock, the mode it was taken in, its thread and its hold count (the
 * acquisition and its re-entries), shared by the handles of that acquisition, so that the handles of a hold that was
 * superseded never touch a later holder's state. Thread-safe (its fields are volatile).
 */
final class LeaseHold {

	private static final org.apache.commons.logging.Log logger = org.apache.commons.logging.LogFactory
		.getLog(LeaseHold.class);

	final HeldLock lock;

	/** The mode the lock was taken in: only a request of this mode re-enters it or is handed its lease. */
	final LockMode mode;

	final Thread thread = Thread.currentThread();

	/** Open handles; written only by {@link #thread}. */
	volatile int holds = 1;

	/**
	 * Set when its lease was over and another local thread (or its own, re-entering) took the gate from it; its
	 * handles then release only their own lease and report it lost. Written under the entry's monitor.
	 */
	volatile boolean superseded;

	/** Set under the entry's monitor when its thread begins the final release: it is not superseded after that. */
	volatile boolean closing;

	/** Its hold observation once superseded, for the superseding thread to end with a {@code lost} event. */
	volatile @Nullable Observation holding;

	LeaseHold(HeldLock lock, LockMode mode) {
		this.lock = lock;
		this.mode = mode;
	}

	/**
	 * Whether its lease is over by this JVM's clock ({@link HeldLock#validUntilNanos()}, which errs early) or known
	 * lost, while its thread has not begun to release it.
	 */
	boolean isOver() {
		return !this.closing && (this.lock.isLost() || System.nanoTime() - this.lock.validUntilNanos() >= 0);
	}

	/**
	 * Ends the hold observation of this hold, superseded because its lease was over, with a {@code lost} event, and
	 * says so in the log: the holder had not closed it in time.
	 */
	void reportSuperseded(String resource) {
		Observation observation = this.holding;
		this.holding = null;
		if (observation != null) {
			observation.event(LockSettings.LOST);
			observation.stop();
		}
		logger.warn("The lease of lock '" + resource + "' (fencing token " + this.lock.fencingToken() + ", thread "
				+ this.thread.getName() + ") ended before it was closed; the next local owner acquires anew, and the "
				+ "stale hold's close() will throw LockLostException");
	}

}
