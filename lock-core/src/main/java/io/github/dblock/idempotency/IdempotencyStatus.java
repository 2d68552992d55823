package io.github.dblock.idempotency;

/**
 * The state of an idempotency record (see {@link IdempotencyTemplate}).
 */
public enum IdempotencyStatus {

	/** A claim holds the key's running lease and its work is running (or its runner died and the lease has not ended yet). */
	RUNNING,

	/** The work completed and its outcome is recorded; duplicates get it until the retention ends. */
	SUCCEEDED,

	/** The last attempt threw, or its transaction rolled back; the next call for the key runs the work again. */
	FAILED

}
