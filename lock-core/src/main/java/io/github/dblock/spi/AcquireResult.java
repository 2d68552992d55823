package io.github.dblock.spi;

import org.jspecify.annotations.Nullable;

/**
 * The outcome of {@link LockProvider#acquire(LockRequest)}: either the lock, or the holder that kept it.
 */
public final class AcquireResult {

	@Nullable
	private final HeldLock lock;

	@Nullable
	private final String holder;

	@Nullable
	private final Throwable cause;

	private AcquireResult(@Nullable HeldLock lock, @Nullable String holder, @Nullable Throwable cause) {
		this.lock = lock;
		this.holder = holder;
		this.cause = cause;
	}

	/** The lock was taken. */
	public static AcquireResult acquired(HeldLock lock) {
		return new AcquireResult(lock, null, null);
	}

	/**
	 * The lock was held by another owner until the deadline.
	 * @param holder that owner's description, when known
	 */
	public static AcquireResult busy(@Nullable String holder) {
		return new AcquireResult(null, holder, null);
	}

	/**
	 * The wait time ended because the database answered too slowly (a statement, a reply or a pooled connection that
	 * did not come in time), not because of a database failure.
	 * @param holder the holder's description, when known
	 * @param cause the last timeout, reported as the cause of the caller's {@code LockNotAcquiredException}
	 */
	public static AcquireResult timedOut(@Nullable String holder, Throwable cause) {
		return new AcquireResult(null, holder, cause);
	}

	/** The lock, or {@code null} when busy. */
	@Nullable
	public HeldLock lock() {
		return this.lock;
	}

	/** The holder's description when busy and known. */
	@Nullable
	public String holder() {
		return this.holder;
	}

	/** The timeout that ended the wait, for {@link #timedOut}; {@code null} otherwise. */
	@Nullable
	public Throwable cause() {
		return this.cause;
	}

}
