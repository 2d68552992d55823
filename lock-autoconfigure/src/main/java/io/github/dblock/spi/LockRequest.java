package io.github.dblock.spi;

import java.time.Duration;

/**
 * One acquisition request handed to a {@link LockProvider}.
 *
 * @param resource the validated resource name (1 to 255 characters)
 * @param leaseTime how long the lock stays valid on the database server's clock, positive
 * @param deadlineNanos the {@link System#nanoTime()} value after which the provider stops trying; a deadline
 * already in the past still allows one attempt
 * @param holder human-readable description of the requesting owner (node and thread), stored for diagnostics
 */
public record LockRequest(String resource, Duration leaseTime, long deadlineNanos, String holder) {

	/** Nanoseconds left until the deadline, never negative. */
	public long remainingNanos() {
		return Math.max(0, this.deadlineNanos - System.nanoTime());
	}

}
