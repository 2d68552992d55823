package io.github.dblock.idempotency;

/**
 * What a duplicate call gets when the key's work has already succeeded (see {@link Idempotent} and
 * {@link IdempotencyTemplate}).
 */
public enum OnDuplicate {

	/** Return the recorded outcome of the first run (for a {@code void} method: just return). */
	RETURN_OUTCOME,

	/** Throw {@link AlreadyProcessedException}, naming the key and when it completed. */
	THROW

}
