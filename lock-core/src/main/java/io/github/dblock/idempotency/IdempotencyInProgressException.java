package io.github.dblock.idempotency;

import java.time.Duration;

import io.github.dblock.DistributedLockException;
import org.jspecify.annotations.Nullable;

/**
 * Thrown to a duplicate call of an idempotency key whose first run was still {@link IdempotencyStatus#RUNNING}
 * (holding a valid running lease) for the duplicate's whole wait time. The work did not run for this call and its
 * outcome is unknown yet: call again later, or look at {@link IdempotencyTemplate#find(String)}. This is
 * contention, not a database failure.
 */
public class IdempotencyInProgressException extends DistributedLockException {

	private final Duration waitTime;

	@Nullable
	private final String holder;

	/**
	 * @param key the idempotency key
	 * @param waitTime how long the duplicate waited
	 * @param holder node and thread of the running claim, with its remaining lease, if known
	 */
	public IdempotencyInProgressException(String key, Duration waitTime, @Nullable String holder) {
		super(key, "Idempotency key '" + key + "' is still being processed after waiting " + waitTime + "; "
				+ ((holder != null) ? "running on " + holder : "runner unknown"), null);
		this.waitTime = waitTime;
		this.holder = holder;
	}

	/** The idempotency key (the same as {@link #getResource()}). */
	public String getKey() {
		return getResource();
	}

	/** How long the duplicate waited. */
	public Duration getWaitTime() {
		return this.waitTime;
	}

	/** Node and thread of the running claim, with its remaining lease, if known. */
	@Nullable
	public String getHolder() {
		return this.holder;
	}

}
