package io.github.dblock.engine;

import io.github.dblock.LockMode;
import io.github.dblock.spi.HeldLock;
import org.jspecify.annotations.Nullable;

/**
 * The hand-off of a resource's LEASE between the threads of this JVM: the lease its last holder parked for the gate's
 * next owner, and how long that owner first holds back for other nodes' waiters. Its fields are volatile and written
 * by gate owners. Thread-safe.
 */
final class LeaseHandOff {

	private static final org.apache.commons.logging.Log logger = org.apache.commons.logging.LogFactory
		.getLog(LeaseHandOff.class);

	/**
	 * A lock its last holder handed off for the next local thread to take the gate (see
	 * {@link HeldLock#handOff()}), with the mode it was taken in; taken by that thread, or released by the entry's
	 * last user if nobody takes it.
	 */
	private volatile @Nullable Parked parked;

	/**
	 * Until when ({@link System#nanoTime()}) local threads let other nodes take the resource before they ask the
	 * database, after a hand-off chain ended with threads still queued; written and read by gate holders.
	 */
	private volatile long courtesyUntilNanos;

	/**
	 * Whether {@link #courtesyUntilNanos} is set and not yet honoured (nanoTime values may be negative, so 0 is no
	 * "unset"); the next gate holder that asks the database honours and clears it.
	 */
	private volatile boolean courtesyPending;

	/** Takes the lease the previous local holder handed off for the gate's next owner, if any. */
	@Nullable Parked takeParked() {
		Parked handedOff = this.parked;
		this.parked = null;
		return handedOff;
	}

	/**
	 * Hands a lease off to the gate's next owner (see {@link HeldLock#handOff()}).
	 * @param handedOff the successor's lock
	 * @param takenIn the mode the lease was taken in: only a request of that mode may use it
	 */
	void park(HeldLock handedOff, LockMode takenIn) {
		this.parked = new Parked(handedOff, takenIn);
	}

	/**
	 * Takes the time this JVM still holds back for other nodes' waiters, once: in nanoseconds, zero or negative
	 * when there is none.
	 */
	long takeCourtesyNanos() {
		long courtesy = this.courtesyPending ? this.courtesyUntilNanos - System.nanoTime() : 0;
		this.courtesyPending = false;
		return courtesy;
	}

	/** Makes the next gate owner that asks the database hold back for other nodes' waiters for a while. */
	void holdBackFor(long courtesyNanos) {
		this.courtesyUntilNanos = System.nanoTime() + courtesyNanos;
		this.courtesyPending = true;
	}

	/**
	 * A lock handed off for the next local thread, with the mode it was taken in: the thread that takes it uses it only
	 * for a request of the same mode.
	 * @param lock the successor's lock
	 * @param mode the mode the lock was taken in
	 */
	record Parked(HeldLock lock, LockMode mode) {

		/** Releases a handed-off lock that nobody will use; a failure is logged (the lock ends with its lease). */
		void releaseQuietly(String resource) {
			try {
				this.lock.release();
			}
			catch (RuntimeException ex) {
				logger.warn("Could not release the lock '" + resource + "' handed off to a thread that no longer "
						+ "wanted it; it ends with its lease", ex);
			}
		}

	}

}
