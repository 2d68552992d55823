package io.github.dblock.autoconfigure;

/**
 * Settings of OPTIMISTIC mode, under {@code distributed-lock.optimistic.*}.
 * <p>
 * A group of {@link DistributedLockProperties}; not thread-safe (bound once at start-up, then only read).
 */
public class DistributedLockOptimisticProperties {

	/**
	 * How many times the work may run before a conflict is reported as LockNotAcquiredException.
	 */
	private int maxAttempts = 5;

	public int getMaxAttempts() {
		return this.maxAttempts;
	}

	public void setMaxAttempts(int maxAttempts) {
		this.maxAttempts = maxAttempts;
	}

	/** Checks the values at start-up, for {@link DistributedLockProperties#afterPropertiesSet()}. */
	void check() {
		if (this.maxAttempts < 1) {
			throw InvalidProperty.invalid("optimistic.max-attempts", this.maxAttempts, "must be at least 1");
		}
	}

}
