package io.github.dblock.wait;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * Pauses between attempts: exponential from {@code initial} up to {@code max}, each drawn uniformly from 50 % to
 * 100 % of its step (jitter, so that competing nodes do not retry in lockstep), and cut short where a known lease
 * ends or the caller's deadline falls. Immutable and thread-safe.
 *
 * @param initial the first step, positive
 * @param max the largest step, at least {@code initial}
 */
public record Backoff(Duration initial, Duration max) {

	/**
	 * @throws IllegalArgumentException unless {@code 0 < initial <= max}
	 */
	public Backoff {
		if (initial.isNegative() || initial.isZero() || max.compareTo(initial) < 0) {
			throw new IllegalArgumentException(
					"backoff must satisfy 0 < initial <= max, was " + initial + " and " + max);
		}
	}

	/**
	 * The pause before the next attempt, in nanoseconds.
	 * @param attempt the number of attempts already made, from 0
	 * @param leaseRemainingNanos when the holder's lease ends, if known (else 0)
	 * @param waitRemainingNanos time left until the caller's deadline
	 */
	public long pauseNanos(int attempt, long leaseRemainingNanos, long waitRemainingNanos) {
		long base = this.initial.toNanos() << Math.min(attempt, 20);
		long ceiling = Math.min(Math.max(base, 0), this.max.toNanos());
		long pause = ceiling / 2 + ThreadLocalRandom.current().nextLong(ceiling / 2 + 1);
		if (leaseRemainingNanos > 0) {
			pause = Math.min(pause, leaseRemainingNanos + TimeUnit.MILLISECONDS.toNanos(1));
		}
		return Math.max(0, Math.min(pause, waitRemainingNanos));
	}

}
