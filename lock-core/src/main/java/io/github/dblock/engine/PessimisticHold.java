package io.github.dblock.engine;

import io.github.dblock.LockMode;
import io.github.dblock.spi.HeldLock;

/**
 * One PESSIMISTIC acquisition held without the gate: its lock, the mode it was taken in, its thread and its hold
 * count (the acquisition and its re-entries), shared by the handles of that acquisition, so that its releases never
 * touch a later holder's state.
 */
final class PessimisticHold {

	final HeldLock lock;

	/** The mode the lock was taken in: only a request of this mode re-enters it. */
	final LockMode mode;

	final Thread thread = Thread.currentThread();

	/** Whether the lock pins a connection of the provider's own (not the caller's transaction). */
	final boolean ownConnection;

	/** Open handles; written only by {@link #thread}. */
	volatile int holds = 1;

	PessimisticHold(HeldLock lock, LockMode mode) {
		this.lock = lock;
		this.mode = mode;
		this.ownConnection = !lock.isTransactionBound();
	}

}
