package io.github.dblock;

import io.github.dblock.spi.HeldLock;

/**
 * One PESSIMISTIC acquisition held without the gate: its lock, its thread and its hold count (the acquisition
 * and its re-entries), shared by the handles of that acquisition, so that its releases never touch a later
 * holder's state.
 */
final class Gateless {

	final HeldLock lock;

	final Thread thread = Thread.currentThread();

	/** Whether the lock pins a connection of the provider's own (not the caller's transaction). */
	final boolean ownConnection;

	/** Open handles; written only by {@link #thread}. */
	volatile int holds = 1;

	Gateless(HeldLock lock) {
		this.lock = lock;
		this.ownConnection = !lock.isTransactionBound();
	}

}
