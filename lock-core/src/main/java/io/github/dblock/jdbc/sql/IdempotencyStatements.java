package io.github.dblock.jdbc.sql;


/**
 * The statements of idempotency records ({@code IdempotencyStore}).
 * The text as {@link LockStatements} says: bind parameters only, the validated table names spliced in once, the server's
 * UTC clock. Built once per table; immutable and thread-safe.
 * <p>
 * Internal machinery of the JDBC engine, public only so that the other {@code io.github.dblock.jdbc} packages
 * can use it: not API, may change in any release.
 */
public final class IdempotencyStatements extends LockTableSql {

	/** Parameters: key, owner, holder, lease µs, retention µs. */
	public final String idemInsert = sql("""
			INSERT INTO {idem} (idem_key, status, owner_token, holder, fencing_token, attempts, started_at, expires_at, retain_until)
			VALUES (?, 'RUNNING', ?, ?, LAST_INSERT_ID(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))), 1,
			UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND)""");

	/**
	 * Takes over a failed, expired or retained-too-long record, or one this owner runs; attempts is assigned before
	 * status, so that it reads the old status under either assignment order. Parameters: owner, holder, lease µs,
	 * retention µs, key, owner.
	 */
	public final String idemTakeOver = sql("""
			UPDATE {idem} SET attempts = IF(status = 'SUCCEEDED', 1, attempts + 1), status = 'RUNNING',
			owner_token = ?, holder = ?,
			fencing_token = LAST_INSERT_ID(GREATEST(fencing_token + 1, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))),
			started_at = UTC_TIMESTAMP(6), expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, completed_at = NULL,
			retain_until = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, outcome = NULL, outcome_type = NULL, error = NULL
			WHERE idem_key = ? AND (status = 'FAILED' OR (status = 'RUNNING' AND expires_at <= UTC_TIMESTAMP(6))
			OR (status = 'SUCCEEDED' AND retain_until <= UTC_TIMESTAMP(6)) OR (status = 'RUNNING' AND owner_token = ?))""");

	public final String idemSelect = sql("""
			SELECT status, holder, owner_token, fencing_token, attempts, started_at, expires_at, completed_at,
			retain_until, outcome, outcome_type, error, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at),
			retain_until <= UTC_TIMESTAMP(6) FROM {idem} WHERE idem_key = ?""");

	public final String idemToken = sql("SELECT fencing_token FROM {idem} WHERE idem_key = ? AND owner_token = ?");

	/**
	 * First statement of a claim's renewal, in a short transaction: locks the record by primary key (the row every
	 * claim, take-over and completion of the key locks), so that the {@link #idemRenew} that follows starts, and reads
	 * the server's clock, only once the record is this transaction's. Run on its own, the renewal could wait behind
	 * another caller's uncommitted completion past the lease end and still judge the lease by the time its statement
	 * started. Parameter: key.
	 */
	public final String idemLockForRenewal = sql("SELECT status FROM {idem} WHERE idem_key = ? FOR UPDATE");

	/** Renews a running claim of this owner, after {@link #idemLockForRenewal}. Parameters: lease µs, key, owner. */
	public final String idemRenew = sql("""
			UPDATE {idem} SET expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
			WHERE idem_key = ? AND owner_token = ? AND status = 'RUNNING' AND expires_at > UTC_TIMESTAMP(6)""");

	/** Parameters: retention µs, outcome, outcome type, error, key, owner. */
	public final String idemSucceed = sql("""
			UPDATE {idem} SET status = 'SUCCEEDED', expires_at = UTC_TIMESTAMP(6), completed_at = UTC_TIMESTAMP(6),
			retain_until = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, outcome = ?, outcome_type = ?, error = ?
			WHERE idem_key = ? AND owner_token = ? AND status = 'RUNNING'""");

	/** Parameters as #idemSucceed. */
	public final String idemFail = sql("""
			UPDATE {idem} SET status = 'FAILED', expires_at = UTC_TIMESTAMP(6), completed_at = UTC_TIMESTAMP(6),
			retain_until = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, outcome = ?, outcome_type = ?, error = ?
			WHERE idem_key = ? AND owner_token = ? AND status = 'RUNNING'""");

	public final String idemDelete = sql("DELETE FROM {idem} WHERE idem_key = ?");

	IdempotencyStatements(LockTable table) {
		super(table);
	}

}
