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

	private AcquireResult(@Nullable HeldLock lock, @Nullable String holder) {
		this.lock = lock;
		this.holder = holder;
	}

	/** The lock was taken. */
	public static AcquireResult acquired(HeldLock lock) {
		return new AcquireResult(lock, null);
	}

	/**
	 * The lock was held by another owner until the deadline.
	 * @param holder that owner's description, when known
	 */
	public static AcquireResult busy(@Nullable String holder) {
		return new AcquireResult(null, holder);
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

}
