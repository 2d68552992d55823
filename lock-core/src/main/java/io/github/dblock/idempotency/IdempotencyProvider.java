package io.github.dblock.idempotency;

import java.time.Duration;
import java.util.Optional;

import io.github.dblock.spi.HeldLock;
import org.jspecify.annotations.Nullable;

/**
 * The database side of idempotency keys, used by {@link IdempotencyTemplate}: claims a key for one
 * run of the work, records how the run ended, and answers duplicates from the record. Implementations must be
 * thread-safe.
 * <p>
 * Lives with the feature it serves (it speaks in {@link IdempotencyRecord}), beside the lock SPI
 * ({@link io.github.dblock.spi}) whose {@link HeldLock} a claim is.
 */
public interface IdempotencyProvider {

	/**
	 * Fails at once when the current thread runs a read-only transaction on the provider's data source, where the
	 * record of a run could not be written.
	 * @param key the key, for the message
	 * @throws IllegalStateException in a read-only transaction
	 */
	void requireWritableTransaction(String key);

	/**
	 * Claims a key for a run: a new key, a failed record, or one whose running lease has ended; else waits until
	 * the deadline for the running one to end.
	 * @param key the key
	 * @param holder describes the caller for the record
	 * @param lease the running lease, renewed while the claim is held
	 * @param retention how long a completed record answers duplicates
	 * @param deadlineNanos the {@link System#nanoTime()} until which to wait for a running claim
	 * @return the claim, or the record that answers the call
	 * @throws InterruptedException if interrupted while waiting; nothing is claimed then
	 * @throws org.springframework.dao.DataAccessException on a database failure
	 */
	Claimed claim(String key, String holder, Duration lease, Duration retention, long deadlineNanos)
			throws InterruptedException;

	/**
	 * The record of a key, if there is one.
	 * @throws org.springframework.dao.DataAccessException on a database failure
	 */
	Optional<IdempotencyRecord> find(String key);

	/**
	 * Deletes the record of a key that is not running, so that the next call runs the work again.
	 * @return whether a record was deleted
	 * @throws org.springframework.dao.DataAccessException on a database failure
	 */
	boolean forget(String key);

	/**
	 * The answer of {@link #claim}: exactly one of the two is set.
	 * @param claim the claim when this call is to run the work
	 * @param record the record that answers the call when it is not: succeeded, or still running
	 */
	record Claimed(@Nullable HeldClaim claim, @Nullable IdempotencyRecord record) {
	}

	/** A key claimed for one run: a lease that is renewed while the work runs, and the record's end. */
	interface HeldClaim extends HeldLock {

		/** The claimed key. */
		String key();

		/**
		 * Records the run's success with its outcome (in the caller's transaction on the data source, if any).
		 * @param outcome the outcome as JSON, or {@code null}
		 * @param outcomeType the outcome's class name, or {@code null}
		 * @param note an error text kept with the success, or {@code null}
		 * @throws io.github.dblock.LockLostException if the record no longer belongs to this claim
		 */
		void succeed(@Nullable String outcome, @Nullable String outcomeType, @Nullable String note);

		/**
		 * Records the run's failure, so that the next call runs the work again.
		 * @param error what went wrong
		 * @return whether the record still belonged to this claim
		 */
		boolean failed(String error);

	}

}
