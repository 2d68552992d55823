package io.github.dblock.jdbc.sql;


/**
 * The statements of the clean-up of expired rows ({@code LockTableCleaner}); {@code {keys}} is filled in by
 * {@link LockStatements#withKeys}.
 * The text as {@link LockStatements} says: bind parameters only, the validated table names spliced in once, the server's
 * UTC clock. Built once per table; immutable and thread-safe.
 * <p>
 * Internal machinery of the JDBC engine, public only so that the other {@code io.github.dblock.jdbc} packages
 * can use it: not API, may change in any release.
 */
public final class CleanupStatements extends LockTableSql {

	/**
	 * Expired lock rows, beyond the retention, whose fencing token the server clock (in µs) has passed by the retention
	 * too: a row re-created later starts its token at the clock, so it must never be deleted while its counter is
	 * ahead. Parameters (each statement): retention µs twice (after the keys, if any); the candidates then the batch
	 * size.
	 */
	public final Cleanup lockCleanup = new Cleanup(
			sql("""
					SELECT resource FROM {lock} WHERE expires_at < UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND
					AND fencing_token < TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) - ?
					ORDER BY expires_at LIMIT ?"""),
			sql("""
					SELECT resource FROM {lock} FORCE INDEX (PRIMARY) WHERE resource IN ({keys})
					AND expires_at < UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND
					AND fencing_token < TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) - ?
					FOR UPDATE SKIP LOCKED"""),
			sql("""
					DELETE {lock} FROM {lock} FORCE INDEX (PRIMARY) WHERE resource IN ({keys})
					AND expires_at < UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND
					AND fencing_token < TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) - ?"""));

	/**
	 * Idempotency records whose retention ended, unless running, and whose fencing token the server clock has passed
	 * (by the cleaner's retention parameter, 0 here): a claim of the key after the delete starts its token at the
	 * clock. Parameters as {@link #lockCleanup}.
	 */
	public final Cleanup idempotencyCleanup = new Cleanup(
			sql("""
					SELECT idem_key FROM {idem} WHERE retain_until < UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND
					AND fencing_token < TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) - ?
					AND (status <> 'RUNNING' OR expires_at < UTC_TIMESTAMP(6)) ORDER BY retain_until LIMIT ?"""),
			sql("""
					SELECT idem_key FROM {idem} FORCE INDEX (PRIMARY) WHERE idem_key IN ({keys})
					AND retain_until < UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND
					AND fencing_token < TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) - ?
					AND (status <> 'RUNNING' OR expires_at < UTC_TIMESTAMP(6)) FOR UPDATE SKIP LOCKED"""),
			sql("""
					DELETE {idem} FROM {idem} FORCE INDEX (PRIMARY) WHERE idem_key IN ({keys})
					AND retain_until < UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND
					AND fencing_token < TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) - ?
					AND (status <> 'RUNNING' OR expires_at < UTC_TIMESTAMP(6))"""));

	/** Expired read/write holder rows, and the delete of one (parameters: resource, owner). */
	public final String cleanRwHolds = sql("""
			SELECT resource, owner_token FROM {rw_hold} WHERE expires_at < UTC_TIMESTAMP(6)
			ORDER BY expires_at LIMIT ?""");

	public final String cleanRwHold = sql("""
			DELETE FROM {rw_hold} WHERE resource = ? AND owner_token = ? AND expires_at < UTC_TIMESTAMP(6)""");

	/** Expired permits, and the delete of one (parameters: name, owner). */
	public final String cleanSemHolds = sql("""
			SELECT name, owner_token FROM {sem_hold} WHERE expires_at < UTC_TIMESTAMP(6)
			ORDER BY expires_at LIMIT ?""");

	public final String cleanSemHold = sql("""
			DELETE FROM {sem_hold} WHERE name = ? AND owner_token = ? AND expires_at < UTC_TIMESTAMP(6)""");

	CleanupStatements(LockTable table) {
		super(table);
	}


	/** The statements of one target of clean-up: candidates, then locking and deleting those still expired. */
	public record Cleanup(String candidates, String lockStillExpired, String delete) {
	}

}
