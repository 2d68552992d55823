package io.github.dblock.autoconfigure;

import java.time.Duration;
import java.util.Objects;

import org.jspecify.annotations.Nullable;
import org.springframework.core.Ordered;

/**
 * Idempotency keys ({@code @Idempotent} and the {@code IdempotencyTemplate}), under
 * {@code distributed-lock.idempotency.*}.
 * <p>
 * A group of {@link DistributedLockProperties}; not thread-safe (bound once at start-up, then only read).
 */
public class DistributedLockIdempotencyProperties {

	/**
	 * How long a completed idempotency record answers duplicates (from its completion, on the database server's
	 * clock) when a call gives no retention; then the key runs again and the cleanup job deletes the record.
	 */
	private Duration retention = Duration.ofHours(24);

	/** What a duplicate call gets once the key's work has succeeded: its recorded outcome, or an exception. */
	private io.github.dblock.idempotency.OnDuplicate onDuplicate = io.github.dblock.idempotency.OnDuplicate.RETURN_OUTCOME;

	/**
	 * The running lease of an idempotency claim, renewed every third of it while the work runs; after a crash,
	 * duplicates take the key over once it ends. Unset: distributed-lock.lease-time.
	 */
	@Nullable
	private Duration leaseTime;

	/**
	 * Order of the @Idempotent advisor. The default equals the transaction advisor's, and the advisor is
	 * registered after it, so it runs inside the method's transaction.
	 */
	private int order = Ordered.LOWEST_PRECEDENCE;

	public Duration getRetention() {
		return this.retention;
	}

	public void setRetention(Duration retention) {
		this.retention = retention;
	}

	public io.github.dblock.idempotency.OnDuplicate getOnDuplicate() {
		return this.onDuplicate;
	}

	public void setOnDuplicate(io.github.dblock.idempotency.OnDuplicate onDuplicate) {
		this.onDuplicate = onDuplicate;
	}

	@Nullable
	public Duration getLeaseTime() {
		return this.leaseTime;
	}

	public void setLeaseTime(@Nullable Duration leaseTime) {
		this.leaseTime = leaseTime;
	}

	public int getOrder() {
		return this.order;
	}

	public void setOrder(int order) {
		this.order = order;
	}

	/** Checks the values at start-up, for {@link DistributedLockProperties#afterPropertiesSet()}. */
	void check() {
		try {
			io.github.dblock.idempotency.IdempotencyOptions.checkRetention("retention", this.retention);
		}
		catch (IllegalArgumentException ex) {
			throw InvalidProperty.invalid("idempotency.retention", this.retention,
					Objects.requireNonNullElse(ex.getMessage(), ex.toString()));
		}
		if (this.onDuplicate == null) {
			throw InvalidProperty.invalid("idempotency.on-duplicate", null, "must be set");
		}
		Duration lease = this.leaseTime;
		if (lease != null) {
			try {
				io.github.dblock.idempotency.IdempotencyOptions.checkLeaseTime("lease time", lease);
			}
			catch (IllegalArgumentException ex) {
				throw InvalidProperty.invalid("idempotency.lease-time", lease,
						Objects.requireNonNullElse(ex.getMessage(), ex.toString()));
			}
		}
	}

}
