package io.github.dblock.idempotency;

import java.time.Instant;

import io.github.dblock.DistributedLockException;
import org.jspecify.annotations.Nullable;

/**
 * Thrown to a duplicate call of an idempotency key whose work has already succeeded, when the duplicate policy is
 * {@link OnDuplicate#THROW} (or when the first run's outcome could not be recorded). The work did not run again.
 */
public class AlreadyProcessedException extends DistributedLockException {

	private final Instant completedAt;

	@Nullable
	private final String holder;

	/**
	 * @param key the idempotency key
	 * @param completedAt when the first run completed, on the database server's clock
	 * @param holder node and thread that ran it, if known
	 * @param detail why no outcome is returned, appended to the message; may be {@code null}
	 */
	public AlreadyProcessedException(String key, Instant completedAt, @Nullable String holder, @Nullable String detail) {
		super(key, "Idempotency key '" + key + "' was already processed at " + completedAt
				+ ((holder != null) ? " by " + holder : "") + ((detail != null) ? "; " + detail : ""), null);
		this.completedAt = completedAt;
		this.holder = holder;
	}

	/** The idempotency key (the same as {@link #getResource()}). */
	public String getKey() {
		return getResource();
	}

	/** When the first run completed, on the database server's clock (UTC). */
	public Instant getCompletedAt() {
		return this.completedAt;
	}

	/** Node and thread of the run that completed, if known. */
	@Nullable
	public String getHolder() {
		return this.holder;
	}

}
