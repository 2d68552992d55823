package io.github.dblock.idempotency;

import java.time.Duration;
import java.util.Objects;

import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import org.jspecify.annotations.Nullable;

/**
 * Per-call settings of an idempotent execution ({@link IdempotencyTemplate}). Immutable and thread-safe; every
 * {@code with…} method returns a new instance. A setting left unset ({@code null}) takes the configured default:
 * {@code distributed-lock.idempotency.retention}, {@code distributed-lock.wait-time},
 * {@code distributed-lock.idempotency.lease-time} and {@code distributed-lock.idempotency.on-duplicate}.
 */
public final class IdempotencyOptions {

	/** The longest retention: {@link LockOptions#MAX_LEASE_TIME} (36,500 days). */
	public static final Duration MAX_RETENTION = LockOptions.MAX_LEASE_TIME;

	private static final IdempotencyOptions DEFAULTS = new IdempotencyOptions(null, null, null, null);

	@Nullable
	private final Duration retention;

	@Nullable
	private final Duration waitTime;

	@Nullable
	private final Duration leaseTime;

	@Nullable
	private final OnDuplicate onDuplicate;

	private IdempotencyOptions(@Nullable Duration retention, @Nullable Duration waitTime, @Nullable Duration leaseTime,
			@Nullable OnDuplicate onDuplicate) {
		this.retention = retention;
		this.waitTime = waitTime;
		this.leaseTime = leaseTime;
		this.onDuplicate = onDuplicate;
	}

	/** Options that take every setting from configuration. */
	public static IdempotencyOptions defaults() {
		return DEFAULTS;
	}

	/**
	 * How long a completed record answers duplicates, from its completion on the database server's clock; after
	 * that the key runs again and the cleanup job deletes the record. Resolution: one microsecond.
	 * @param retention positive, at most {@link #MAX_RETENTION}
	 * @throws IllegalArgumentException if {@code retention} is null, zero, negative or too long
	 */
	public IdempotencyOptions withRetention(Duration retention) {
		checkRetention("retention", retention);
		return new IdempotencyOptions(retention, this.waitTime, this.leaseTime, this.onDuplicate);
	}

	/**
	 * How long a duplicate waits for a running first call to complete; {@link Duration#ZERO} for no wait.
	 * @param waitTime zero or positive
	 * @throws IllegalArgumentException if {@code waitTime} is null or negative
	 */
	public IdempotencyOptions withWaitTime(Duration waitTime) {
		if (waitTime == null || waitTime.isNegative()) {
			throw new IllegalArgumentException("waitTime must be zero (no wait) or positive, was " + waitTime);
		}
		return new IdempotencyOptions(this.retention, waitTime, this.leaseTime, this.onDuplicate);
	}

	/**
	 * The running lease: how long, on the database server's clock, a claim stays valid if its runner stops renewing
	 * it (it is renewed every third of it while the work runs). After a crash, duplicates wait this long before
	 * one of them takes the key over and runs the work again.
	 * @param leaseTime at least {@link LockTemplate#MIN_DEFAULT_LEASE_TIME} (1 s), at most
	 * {@link LockOptions#MAX_LEASE_TIME}
	 * @throws IllegalArgumentException if {@code leaseTime} is null or out of range
	 */
	public IdempotencyOptions withLeaseTime(Duration leaseTime) {
		checkLeaseTime("leaseTime", leaseTime);
		return new IdempotencyOptions(this.retention, this.waitTime, leaseTime, this.onDuplicate);
	}

	/**
	 * What a duplicate gets once the work has succeeded.
	 * @throws IllegalArgumentException if {@code onDuplicate} is null
	 */
	public IdempotencyOptions withOnDuplicate(OnDuplicate onDuplicate) {
		if (onDuplicate == null) {
			throw new IllegalArgumentException("onDuplicate must not be null; use RETURN_OUTCOME or THROW");
		}
		return new IdempotencyOptions(this.retention, this.waitTime, this.leaseTime, onDuplicate);
	}

	/** The retention, or {@code null} for the configured one. */
	@Nullable
	public Duration getRetention() {
		return this.retention;
	}

	/** The wait time, or {@code null} for the configured one. */
	@Nullable
	public Duration getWaitTime() {
		return this.waitTime;
	}

	/** The running lease, or {@code null} for the configured one. */
	@Nullable
	public Duration getLeaseTime() {
		return this.leaseTime;
	}

	/** The duplicate policy, or {@code null} for the configured one. */
	@Nullable
	public OnDuplicate getOnDuplicate() {
		return this.onDuplicate;
	}

	/**
	 * Checks a retention: positive and at most {@link #MAX_RETENTION}.
	 * @param what names the value in the message (a property or attribute name)
	 * @throws IllegalArgumentException otherwise
	 */
	public static void checkRetention(String what, @Nullable Duration retention) {
		if (retention == null || retention.isNegative() || retention.isZero()) {
			throw new IllegalArgumentException(what + " must be positive, was " + retention);
		}
		if (retention.compareTo(MAX_RETENTION) > 0) {
			throw new IllegalArgumentException(what + " must be at most " + MAX_RETENTION.toDays()
					+ "d (about 100 years), was " + retention);
		}
	}

	/**
	 * Checks a running lease: at least 1 s (it is renewed every third of it), at most
	 * {@link LockOptions#MAX_LEASE_TIME}.
	 * @param what names the value in the message
	 * @throws IllegalArgumentException otherwise
	 */
	public static void checkLeaseTime(String what, @Nullable Duration leaseTime) {
		if (leaseTime == null || leaseTime.compareTo(LockTemplate.MIN_DEFAULT_LEASE_TIME) < 0) {
			throw new IllegalArgumentException(what + " must be at least "
					+ LockTemplate.MIN_DEFAULT_LEASE_TIME.toSeconds() + "s (it is renewed every third of it while the work "
					+ "runs), was " + leaseTime);
		}
		if (leaseTime.compareTo(LockOptions.MAX_LEASE_TIME) > 0) {
			throw new IllegalArgumentException(what + " must be at most " + LockOptions.MAX_LEASE_TIME.toDays()
					+ "d (about 100 years), was " + leaseTime);
		}
	}

	@Override
	public boolean equals(Object other) {
		return other instanceof IdempotencyOptions o && Objects.equals(this.retention, o.retention)
				&& Objects.equals(this.waitTime, o.waitTime) && Objects.equals(this.leaseTime, o.leaseTime)
				&& this.onDuplicate == o.onDuplicate;
	}

	@Override
	public int hashCode() {
		return Objects.hash(this.retention, this.waitTime, this.leaseTime, this.onDuplicate);
	}

	@Override
	public String toString() {
		return "IdempotencyOptions[retention=" + this.retention + ", waitTime=" + this.waitTime + ", leaseTime="
				+ this.leaseTime + ", onDuplicate=" + this.onDuplicate + "]";
	}

}
