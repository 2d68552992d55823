package io.github.dblock.semaphore;

import java.time.Duration;

import io.github.dblock.LockOptions;
import org.jspecify.annotations.Nullable;

/**
 * Per-call options of {@link SemaphoreTemplate}: the wait time and the lease time, each unset by default (the
 * configured default applies). A permit is always a lease: there is no mode, lock type or minimum hold time to
 * choose. Immutable; every {@code with...} method returns a new instance. The rules and messages are those of the
 * same options of a lock ({@link LockOptions}).
 */
public final class SemaphoreOptions {

	private static final SemaphoreOptions DEFAULTS = new SemaphoreOptions(LockOptions.defaults());

	private final LockOptions timing;

	private SemaphoreOptions(LockOptions timing) {
		this.timing = timing;
	}

	/** Options with nothing set: the configured wait time and a renewed default lease. */
	public static SemaphoreOptions defaults() {
		return DEFAULTS;
	}

	/**
	 * How long to wait while every permit is held. {@link Duration#ZERO} means a single attempt.
	 * @param waitTime the maximum wait, zero or positive
	 * @throws IllegalArgumentException if {@code waitTime} is null or negative
	 */
	public SemaphoreOptions withWaitTime(Duration waitTime) {
		return new SemaphoreOptions(this.timing.withWaitTime(waitTime));
	}

	/**
	 * How long the permit stays valid after it is taken, on the database server's clock, if it is not given back
	 * first. Giving a lease time switches renewal off: without one, the configured default lease is used and renewed
	 * in the background while the permit is held.
	 * @param leaseTime the lease, at least {@link LockOptions#MIN_LEASE_TIME} (10 ms) and at most
	 * {@link LockOptions#MAX_LEASE_TIME}
	 * @throws IllegalArgumentException if {@code leaseTime} is null or out of that range
	 */
	public SemaphoreOptions withLeaseTime(Duration leaseTime) {
		return new SemaphoreOptions(this.timing.withLeaseTime(leaseTime));
	}

	/** The wait time, or {@code null} for the configured default. */
	public @Nullable Duration getWaitTime() {
		return this.timing.getWaitTime();
	}

	/** The lease time, or {@code null} for the renewed default lease. */
	public @Nullable Duration getLeaseTime() {
		return this.timing.getLeaseTime();
	}

	@Override
	public boolean equals(@Nullable Object other) {
		return other instanceof SemaphoreOptions options && this.timing.equals(options.timing);
	}

	@Override
	public int hashCode() {
		return this.timing.hashCode();
	}

	@Override
	public String toString() {
		return "SemaphoreOptions[waitTime=" + getWaitTime() + ", leaseTime=" + getLeaseTime() + "]";
	}

}
