package io.github.dblock.spi;

import java.time.Duration;

/**
 * One acquisition request handed to a {@link LockProvider}.
 *
 * @param resource the validated resource name (1 to 255 characters)
 * @param leaseTime how long the lock stays valid on the database server's clock, positive
 * @param renew whether the provider keeps renewing the lease while the lock is held (the caller gave no lease time
 * of its own); providers without leases ignore it
 * @param minHoldTime how long after acquisition the lock stays taken even if released earlier; zero for none
 * @param deadlineNanos the {@link System#nanoTime()} value after which the provider stops trying; a deadline
 * already in the past still allows one attempt
 * @param holder human-readable description of the requesting owner (node and thread), stored for diagnostics
 */
public record LockRequest(String resource, Duration leaseTime, boolean renew, Duration minHoldTime, long deadlineNanos,
		String holder) {

	/** Nanoseconds left until the deadline, never negative. */
	public long remainingNanos() {
		return Math.max(0, this.deadlineNanos - System.nanoTime());
	}

	/** The minimum hold time in microseconds, the unit of the lock table. */
	public long minHoldMicros() {
		return this.minHoldTime.toNanos() / 1000;
	}

}
