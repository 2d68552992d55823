package io.github.dblock.idempotency;

import java.util.function.Consumer;

/**
 * The claim a call of {@link IdempotencyTemplate} holds on a key while it runs the work: a running lease on the
 * database server's clock, renewed every third of the lease time, with a fencing token. Given to the work
 * ({@link IdempotentCallback#doOnce}) and, for code that is not handed it (an {@link Idempotent} method), available
 * as {@link IdempotencyTemplate#currentClaim()} on the running thread. The template completes the record when the
 * work returns: there is nothing to close. Thread-safe.
 */
public interface IdempotencyClaim {

	/** The claimed idempotency key. */
	String key();

	/**
	 * The fencing token of this claim: strictly increasing over the claims of the key (a run taken over after its
	 * runner died has a higher one). Pass it to the data you protect.
	 */
	long fencingToken();

	/**
	 * Whether the claim still holds the key as far as this node knows: its running lease not found lost by a
	 * renewal and not over on this JVM's clock.
	 */
	boolean isHeld();

	/**
	 * Registers a listener that runs once, on a renewal thread, when a renewal finds the running lease lost (the key
	 * was taken over or forgotten); runs at once if the claim is already known lost.
	 * @param listener receives this claim; must not block for long
	 */
	void onLost(Consumer<? super IdempotencyClaim> listener);

}
