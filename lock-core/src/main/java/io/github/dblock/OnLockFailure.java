package io.github.dblock;

/**
 * What a {@link DistributedLock} method does when its lock stays busy for the whole wait time.
 */
public enum OnLockFailure {

	/** Throw {@link LockNotAcquiredException} (the default). */
	THROW,

	/**
	 * Do not run the method and return "nothing": {@code null}, {@link java.util.Optional#empty()} for an
	 * {@code Optional}, zero or {@code false} for a primitive, nothing for {@code void}. Logged at debug level. The
	 * usual choice for {@code @Scheduled} jobs on several instances: the instances that do not get the lock skip the
	 * tick without an error.
	 */
	SKIP

}
