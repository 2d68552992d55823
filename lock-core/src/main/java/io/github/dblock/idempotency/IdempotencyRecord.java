package io.github.dblock.idempotency;

import java.time.Instant;

import org.jspecify.annotations.Nullable;

/**
 * The committed state of one idempotency key, as stored in the {@code <lock table>_idem} table; returned by
 * {@link IdempotencyTemplate#find(String)}. All instants are the database server's clock (UTC). Immutable.
 *
 * @param key the idempotency key
 * @param status the state
 * @param holder node and thread of the last claim
 * @param fencingToken the fencing token of the last claim: strictly increasing per key
 * @param attempts how many claims ran the work since the key was first run (or last re-run after its retention)
 * @param startedAt when the last claim was taken
 * @param leaseExpiresAt end of the running lease; meaningful for {@link IdempotencyStatus#RUNNING}
 * @param completedAt when the last claim ended, or {@code null} while it runs
 * @param retainUntil until when the record answers duplicates
 * @param outcomeJson the recorded result as JSON, or {@code null} for none ({@code void}, or not yet completed)
 * @param outcomeType the Java type name of the recorded result, or {@code null}
 * @param error exception type and message of a failed attempt, or {@code null}
 */
public record IdempotencyRecord(String key, IdempotencyStatus status, @Nullable String holder, long fencingToken,
		int attempts, Instant startedAt, Instant leaseExpiresAt, @Nullable Instant completedAt, Instant retainUntil,
		@Nullable String outcomeJson, @Nullable String outcomeType, @Nullable String error) {

}
