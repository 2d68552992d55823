package io.github.dblock.idempotency;

import org.jspecify.annotations.Nullable;

/**
 * Work to run at most once per idempotency key, for {@link IdempotencyTemplate#execute}.
 * @param <T> the result type; the result is recorded as JSON and given to duplicate calls
 */
@FunctionalInterface
public interface IdempotentCallback<T> {

	/**
	 * Runs the work while this call holds the key's claim.
	 * @param claim the claim of the key: its {@linkplain IdempotencyClaim#fencingToken() fencing token} increases
	 * with every claim of the key (pass it to the data you protect), {@link IdempotencyClaim#isHeld()} turns
	 * {@code false} and {@link IdempotencyClaim#onLost} listeners run if the running lease is found lost. The
	 * template completes the record.
	 * @return the result, possibly {@code null}
	 */
	@Nullable
	T doOnce(IdempotencyClaim claim);

}
