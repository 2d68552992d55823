package io.github.dblock.autoconfigure;

import java.time.Duration;

/**
 * Pauses between acquisition attempts while waiting for a lease held elsewhere, under
 * {@code distributed-lock.retry.*}.
 * <p>
 * A group of {@link DistributedLockProperties}; not thread-safe (bound once at start-up, then only read).
 */
public class DistributedLockRetryProperties {

	/**
	 * First pause between attempts; each further pause doubles, with random jitter, up to max-backoff.
	 */
	private Duration initialBackoff = Duration.ofMillis(10);

	/**
	 * Longest pause between attempts.
	 */
	private Duration maxBackoff = Duration.ofMillis(200);

	public Duration getInitialBackoff() {
		return this.initialBackoff;
	}

	public void setInitialBackoff(Duration initialBackoff) {
		this.initialBackoff = initialBackoff;
	}

	public Duration getMaxBackoff() {
		return this.maxBackoff;
	}

	public void setMaxBackoff(Duration maxBackoff) {
		this.maxBackoff = maxBackoff;
	}

	/** Checks the values at start-up, for {@link DistributedLockProperties#afterPropertiesSet()}. */
	void check() {
		Duration initial = this.initialBackoff;
		if (initial == null || initial.isNegative() || initial.isZero()) {
			throw InvalidProperty.invalid("retry.initial-backoff", initial, "must be positive");
		}
		if (getMaxBackoff() == null || getMaxBackoff().compareTo(initial) < 0) {
			throw InvalidProperty.invalid("retry.max-backoff", getMaxBackoff(),
					"must be at least retry.initial-backoff (" + initial + ")");
		}
	}

}
