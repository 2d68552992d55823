package io.github.dblock.engine;

import java.time.Duration;

import io.github.dblock.LockHandle;
import io.github.dblock.LockLostException;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.spi.HeldLock;
import org.jspecify.annotations.Nullable;

/**
 * A {@link LockHandle} for one hold of a resource's {@link LocalLock}. Closed by the thread that acquired it.
 */
final class ExclusiveHandle implements LockHandle, CommitValidatedHold {

	private final ExclusiveRelease release;

	private final LocalLock entry;

	private final HeldLock lock;

	private final LockMode mode;

	private final Thread owner;

	private volatile boolean closed;

	/** The PESSIMISTIC acquisition this hold belongs to, {@code null} for a LEASE hold. */
	private final @Nullable PessimisticHold pessimisticHold;

	/** The LEASE acquisition this hold belongs to, {@code null} for a PESSIMISTIC hold. */
	private final @Nullable LeaseHold lease;

	ExclusiveHandle(ExclusiveRelease release, LocalLock entry, HeldLock lock, LockMode mode,
			@Nullable PessimisticHold pessimisticHold, @Nullable LeaseHold lease) {
		this.release = release;
		this.entry = entry;
		this.lock = lock;
		this.mode = mode;
		this.pessimisticHold = pessimisticHold;
		this.lease = lease;
		this.owner = Thread.currentThread();
	}

	/**
	 * The PESSIMISTIC acquisition this hold belongs to if it is one of the given entry (of the same template), else
	 * {@code null}.
	 */
	@Nullable PessimisticHold pessimisticHoldOf(LocalLock entry) {
		return (this.entry == entry) ? this.pessimisticHold : null;
	}

	/** Whether this is a PESSIMISTIC hold, which lets the local gate go once the row is its own. */
	boolean isPessimistic() {
		return this.pessimisticHold != null;
	}

	/**
	 * Registers commit-time validation of this hold in the current transaction if it is a LEASE hold (a PESSIMISTIC
	 * hold's row lock is in its transaction already) and the template validates.
	 */
	@Override
	public void validateInTransaction() {
		if (this.mode == LockMode.LEASE) {
			this.release.settings().validateAtCommit(this.entry.resource, this.lock);
		}
	}

	@Override
	public String resource() {
		return this.entry.resource;
	}

	@Override
	public LockMode mode() {
		return this.mode;
	}

	@Override
	public long fencingToken() {
		return this.lock.fencingToken();
	}

	@Override
	public boolean isHeld() {
		return !this.closed && !this.lock.isLost() && System.nanoTime() - this.lock.validUntilNanos() < 0;
	}

	@Override
	public void onLost(java.util.function.Consumer<? super LockHandle> listener) {
		this.lock.onLost(() -> listener.accept(this));
	}

	@Override
	public void extend(Duration leaseTime) {
		LockOptions.defaults().withLeaseTime(leaseTime); // validates
		if (this.closed) {
			throw new IllegalStateException("Lock '" + resource() + "' is closed; it cannot be extended");
		}
		if (this.mode != LockMode.LEASE) {
			throw new IllegalStateException("Lock '" + resource() + "' is held in " + this.mode + " mode, which has no "
					+ "lease to extend");
		}
		if (!this.lock.extend(leaseTime)) {
			throw new LockLostException(resource(), fencingToken(), "Lock '" + resource() + "' (fencing token "
					+ fencingToken() + ") could not be extended: its lease had already ended");
		}
	}

	@Override
	public void close() {
		if (this.closed) {
			return;
		}
		if (Thread.currentThread() != this.owner) {
			throw new IllegalStateException("Lock '" + resource() + "' must be released by the thread that acquired it ("
					+ this.owner.getName() + "), not by " + Thread.currentThread().getName());
		}
		this.closed = true;
		ThreadHolds.pop(this);
		this.release.release(this.entry, this.lock, this.pessimisticHold, this.lease);
	}

	@Override
	public String toString() {
		return "LockHandle[resource=" + resource() + ", mode=" + this.mode + ", fencingToken=" + fencingToken()
				+ ", held=" + isHeld() + "]";
	}

}
