package io.github.dblock;

import java.time.Duration;
import java.util.Objects;

import org.jspecify.annotations.Nullable;

/**
 * Per-call settings for acquiring a lock. Immutable and thread-safe; every {@code with…} method returns a new
 * instance. A setting left unset ({@code null}) takes the configured default ({@code distributed-lock.*}).
 *
 * <pre class="code">
 * LockOptions options = LockOptions.defaults()
 *         .withWaitTime(Duration.ofSeconds(2))
 *         .withLeaseTime(Duration.ofMinutes(1));
 * </pre>
 */
public final class LockOptions {

	/**
	 * The shortest lease time a call may give: 10 ms. A lease that ends before the statement taking it has
	 * returned is a lock nobody holds (a lease below one microsecond would even be stored as zero, already
	 * expired), and the acquiring round trip alone takes milliseconds on a busy server.
	 */
	public static final Duration MIN_LEASE_TIME = Duration.ofMillis(10);

	/**
	 * The longest lease time: 36,500 days (about 100 years), far inside what the JVM's nanosecond clock and the
	 * server's {@code DATETIME} can count. A lock that should last until it is released needs no huge lease: leave
	 * the lease time unset and the default lease is renewed while the lock is held.
	 */
	public static final Duration MAX_LEASE_TIME = Duration.ofDays(36_500);

	private static final LockOptions DEFAULTS = new LockOptions(null, null, null, null, LockType.EXCLUSIVE);

	@Nullable
	private final Duration waitTime;

	@Nullable
	private final Duration leaseTime;

	@Nullable
	private final LockMode mode;

	@Nullable
	private final Duration minHoldTime;

	private final LockType type;

	private LockOptions(@Nullable Duration waitTime, @Nullable Duration leaseTime, @Nullable LockMode mode,
			@Nullable Duration minHoldTime, LockType type) {
		this.waitTime = waitTime;
		this.leaseTime = leaseTime;
		this.mode = mode;
		this.minHoldTime = minHoldTime;
		this.type = type;
	}

	/** Options that take every setting from configuration. */
	public static LockOptions defaults() {
		return DEFAULTS;
	}

	/**
	 * How long to wait for a lock held by another owner. {@link Duration#ZERO} means a single attempt.
	 * @param waitTime the maximum wait, zero or positive
	 * @throws IllegalArgumentException if {@code waitTime} is null or negative
	 */
	public LockOptions withWaitTime(Duration waitTime) {
		requireNonNull(waitTime, "waitTime", "zero or positive");
		if (waitTime.isNegative()) {
			throw new IllegalArgumentException("waitTime must be zero (a single attempt) or positive, was " + waitTime);
		}
		return new LockOptions(waitTime, this.leaseTime, this.mode, this.minHoldTime, this.type);
	}

	/**
	 * How long the lock stays valid after it is taken, measured by the database server's clock, if it is not
	 * released first. Resolution is one microsecond. Giving a lease time switches renewal off: without one, the
	 * configured default lease is used and renewed in the background while the lock is held
	 * ({@link LockMode#LEASE}).
	 * @param leaseTime the lease, at least {@link #MIN_LEASE_TIME} (10 ms) and at most {@link #MAX_LEASE_TIME}
	 * @throws IllegalArgumentException if {@code leaseTime} is null, shorter than {@link #MIN_LEASE_TIME} or longer
	 * than {@link #MAX_LEASE_TIME}
	 */
	public LockOptions withLeaseTime(Duration leaseTime) {
		requireNonNull(leaseTime, "leaseTime", "at least " + MIN_LEASE_TIME.toMillis() + "ms");
		if (leaseTime.compareTo(MIN_LEASE_TIME) < 0) {
			throw new IllegalArgumentException("leaseTime must be at least " + MIN_LEASE_TIME.toMillis()
					+ "ms (a shorter lease ends before the statement taking it returns), was " + leaseTime);
		}
		checkNotTooLong("leaseTime", leaseTime);
		return new LockOptions(this.waitTime, leaseTime, this.mode, this.minHoldTime, this.type);
	}

	/**
	 * Keeps the lock taken until this long after acquisition even if it is released earlier (ShedLock's
	 * {@code lockAtLeastFor}): for scheduled jobs on nodes whose clocks or schedules drift, so that a fast run on one
	 * node does not let a late node run the same tick again. Measured on the database server's clock; must not
	 * exceed the lease time (checked at acquisition). Not used by {@link LockMode#OPTIMISTIC}.
	 * @param minHoldTime zero or positive
	 * @throws IllegalArgumentException if {@code minHoldTime} is null or negative
	 */
	public LockOptions withMinHoldTime(Duration minHoldTime) {
		requireNonNull(minHoldTime, "minHoldTime", "zero or positive");
		if (minHoldTime.isNegative()) {
			throw new IllegalArgumentException("minHoldTime must not be negative, was " + minHoldTime);
		}
		return new LockOptions(this.waitTime, this.leaseTime, this.mode, minHoldTime, this.type);
	}

	/**
	 * The lock mode for this call.
	 * @throws IllegalArgumentException if {@code mode} is null
	 */
	public LockOptions withMode(LockMode mode) {
		requireNonNull(mode, "mode", "one of " + java.util.Arrays.toString(LockMode.values()));
		return new LockOptions(this.waitTime, this.leaseTime, mode, this.minHoldTime, this.type);
	}

	/**
	 * The kind of lock: {@link LockType#EXCLUSIVE} (the default), or the {@link LockType#READ read} or
	 * {@link LockType#WRITE write} side of the resource's read/write lock, which is a different lock from its
	 * exclusive one. READ and WRITE need {@link LockMode#LEASE}; the template refuses them in the other modes with an
	 * {@link IllegalArgumentException} when called.
	 * @throws IllegalArgumentException if {@code type} is null
	 */
	public LockOptions withType(LockType type) {
		requireNonNull(type, "type", "one of " + java.util.Arrays.toString(LockType.values()));
		return new LockOptions(this.waitTime, this.leaseTime, this.mode, this.minHoldTime, type);
	}

	/**
	 * Checks a lease time against {@link #MAX_LEASE_TIME}.
	 * @throws IllegalArgumentException naming the setting if the lease is longer
	 */
	static void checkNotTooLong(String name, Duration leaseTime) {
		if (leaseTime.compareTo(MAX_LEASE_TIME) > 0) {
			throw new IllegalArgumentException(name + " must be at most " + MAX_LEASE_TIME.toDays() + " days (about 100 "
					+ "years), was " + leaseTime + "; for a lock held until released, leave the lease time unset: the "
					+ "default lease is renewed while the lock is held");
		}
	}

	private static void requireNonNull(@Nullable Object value, String name, String allowed) {
		if (value == null) {
			throw new IllegalArgumentException(name + " must not be null: leave it unset for the configured default, "
					+ "or give " + allowed);
		}
	}

	/** The wait time, or {@code null} for the configured default. */
	@Nullable
	public Duration getWaitTime() {
		return this.waitTime;
	}

	/** The lease time, or {@code null} for the configured default. */
	@Nullable
	public Duration getLeaseTime() {
		return this.leaseTime;
	}

	/** The minimum hold time, or {@code null} for none. */
	@Nullable
	public Duration getMinHoldTime() {
		return this.minHoldTime;
	}

	/** The kind of lock; {@link LockType#EXCLUSIVE} unless set. */
	public LockType getType() {
		return this.type;
	}

	/** The mode, or {@code null} for the configured default. */
	@Nullable
	public LockMode getMode() {
		return this.mode;
	}

	@Override
	public boolean equals(Object other) {
		return (other instanceof LockOptions that) && Objects.equals(this.waitTime, that.waitTime)
				&& Objects.equals(this.leaseTime, that.leaseTime) && this.mode == that.mode
				&& Objects.equals(this.minHoldTime, that.minHoldTime) && this.type == that.type;
	}

	@Override
	public int hashCode() {
		return Objects.hash(this.waitTime, this.leaseTime, this.mode, this.minHoldTime, this.type);
	}

	@Override
	public String toString() {
		return "LockOptions[waitTime=" + this.waitTime + ", leaseTime=" + this.leaseTime + ", mode=" + this.mode
				+ ", minHoldTime=" + this.minHoldTime + ", type=" + this.type + "]";
	}

}
