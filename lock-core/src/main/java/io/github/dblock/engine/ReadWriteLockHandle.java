package io.github.dblock.engine;

import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockType;
import io.github.dblock.spi.HeldLock;
import org.jspecify.annotations.Nullable;

/**
 * A {@link LockHandle} for one hold of a read or write lock. All holds of one thread on one resource share a
 * {@link State}, whose database lock is released when the thread's last hold is closed.
 */
final class ReadWriteLockHandle implements LockHandle {

	private final ReadWriteHolds holds;

	private final State state;

	private final LockType type;

	private volatile boolean closed;

	ReadWriteLockHandle(ReadWriteHolds holds, State state, LockType type) {
		this.holds = holds;
		this.state = state;
		this.type = type;
	}

	@Override
	public String resource() {
		return this.state.resource;
	}

	@Override
	public LockMode mode() {
		return this.state.mode;
	}

	@Override
	public LockType type() {
		return this.type;
	}

	@Override
	public long fencingToken() {
		return this.state.held.fencingToken();
	}

	@Override
	public boolean isHeld() {
		HeldLock held = this.state.held;
		return !this.closed && !held.isLost() && System.nanoTime() - held.validUntilNanos() < 0;
	}

	@Override
	public void onLost(java.util.function.Consumer<? super LockHandle> listener) {
		this.state.held.onLost(() -> listener.accept(this));
	}

	@Override
	public void close() {
		if (this.closed) {
			return;
		}
		if (Thread.currentThread() != this.state.owner) {
			throw new IllegalStateException("Lock '" + resource() + "' must be released by the thread that acquired it ("
					+ this.state.owner.getName() + "), not by " + Thread.currentThread().getName());
		}
		this.closed = true;
		ThreadHolds.pop(this);
		this.holds.release(this.state);
	}

	/**
	 * Registers commit-time validation of this hold in the transaction that has just begun on the owning thread, if
	 * it is a LEASE WRITE hold (a hold whose handle is a READ re-entry of the thread's WRITE hold included).
	 */
	void validateInTransaction() {
		if (this.state.type == LockType.WRITE && this.state.mode == LockMode.LEASE) {
			this.holds.settings().validateAtCommit(this.state.resource, this.state.held);
		}
	}

	@Override
	public String toString() {
		return "LockHandle[resource=" + resource() + ", mode=" + mode() + ", type=" + this.type + ", fencingToken="
				+ fencingToken() + ", held=" + isHeld() + "]";
	}

	/**
	 * One thread's hold of a resource's read or write lock in the database, shared by its reentrant handles.
	 * Written only by the owning thread; read by any (diagnostics).
	 */
	static final class State {

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

		State(String resource, LockMode mode, LockType type, HeldLock held, String holder) {
			this.resource = resource;
			this.owner = Thread.currentThread();
			this.mode = mode;
			this.type = type;
			this.held = held;
			this.holder = holder;
		}

	}

}
