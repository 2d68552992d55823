package io.github.dblock.engine;

import io.github.dblock.LockMode;
import io.github.dblock.LockType;
import io.github.dblock.spi.HeldLock;
import org.jspecify.annotations.Nullable;

/**
 * One thread's hold of a resource's read or write lock in the database, shared by its reentrant
 * {@link ReadWriteLockHandle}s; its lock is released when the thread's last handle is closed. Written only by the
 * owning thread; read by any (diagnostics).
 */
final class ReadWriteHold {

	final String resource;

	final Thread owner;

	final LockMode mode;

	/** The type taken in the database: READ, or WRITE (which also covers the thread's READ holds). */
	final LockType type;

	final HeldLock held;

	final String holder;

	/** Open handles of the owning thread (its hold count). */
	volatile int holds = 1;

	volatile io.micrometer.observation.@Nullable Observation holding;

	ReadWriteHold(String resource, LockMode mode, LockType type, HeldLock held, String holder) {
		this.resource = resource;
		this.owner = Thread.currentThread();
		this.mode = mode;
		this.type = type;
		this.held = held;
		this.holder = holder;
	}

	/** Its key among the holds of {@link ReadWriteHolds}. */
	Key key() {
		return new Key(this.resource, this.owner);
	}

	/** A thread's read/write hold of a resource. */
	record Key(String resource, Thread owner) {
	}

}
