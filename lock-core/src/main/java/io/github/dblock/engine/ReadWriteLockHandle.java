package io.github.dblock.engine;

import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockType;
import io.github.dblock.spi.HeldLock;

/**
 * A {@link LockHandle} for one hold of a read or write lock. All holds of one thread on one resource share a
 * {@link ReadWriteHold}, whose database lock is released ({@link ReadWriteRelease}) when the thread's last hold is
 * closed.
 */
final class ReadWriteLockHandle implements LockHandle, CommitValidatedHold {

	private final ReadWriteRelease release;

	private final ReadWriteHold state;

	private final LockType type;

	private volatile boolean closed;

	ReadWriteLockHandle(ReadWriteRelease release, ReadWriteHold state, LockType type) {
		this.release = release;
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
		this.release.release(this.state);
	}

	/**
	 * Registers commit-time validation of this hold in the transaction that has just begun on the owning thread, if
	 * it is a LEASE WRITE hold (a hold whose handle is a READ re-entry of the thread's WRITE hold included).
	 */
	@Override
	public void validateInTransaction() {
		if (this.state.type == LockType.WRITE && this.state.mode == LockMode.LEASE) {
			this.release.settings().validateAtCommit(this.state.resource, this.state.held);
		}
	}

	@Override
	public String toString() {
		return "LockHandle[resource=" + resource() + ", mode=" + mode() + ", type=" + this.type + ", fencingToken="
				+ fencingToken() + ", held=" + isHeld() + "]";
	}

}
