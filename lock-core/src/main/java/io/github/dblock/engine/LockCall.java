package io.github.dblock.engine;

import java.time.Duration;

import io.github.dblock.LockMode;
import io.github.dblock.LockTemplate;
import io.github.dblock.LockType;
import io.github.dblock.spi.LockProvider;
import io.github.dblock.spi.LockRequest;

/**
 * One lock call with its options resolved against the template's defaults and checked ({@code LockTemplate.request}):
 * what the engine works from. Immutable.
 * @param resource the validated resource name
 * @param provider the provider of the mode
 * @param mode the mode
 * @param type exclusive, or a side of a read/write lock (LEASE only)
 * @param waitTime how long to wait; zero for one attempt
 * @param leaseTime the lease time
 * @param renew whether the lease is renewed while held (no lease time of the call's own)
 * @param minHoldTime the minimum hold time, zero when none
 */
public record LockCall(String resource, LockProvider provider, LockMode mode, LockType type, Duration waitTime,
		Duration leaseTime, boolean renew, Duration minHoldTime) {

	/** The same call with another wait time (the rest of the first one's, for a later attempt). */
	LockCall withWaitTime(Duration waitTime) {
		return new LockCall(this.resource, this.provider, this.mode, this.type, waitTime, this.leaseTime, this.renew,
				this.minHoldTime);
	}

	/** The {@link System#nanoTime()} at which a wait that starts now ends. */
	long deadlineNanos() {
		return System.nanoTime() + saturatedNanos(this.waitTime);
	}

	/** The provider's request for this call with the given deadline and holder description. */
	LockRequest toLockRequest(long deadlineNanos, String holder) {
		return new LockRequest(this.resource, this.leaseTime, this.renew, this.minHoldTime, deadlineNanos, holder);
	}

	/** A duration in nanoseconds, or about 146 years for one too long to count so. */
	static long saturatedNanos(Duration duration) {
		try {
			return duration.toNanos();
		}
		catch (ArithmeticException ex) {
			return Long.MAX_VALUE / 2;
		}
	}

}
