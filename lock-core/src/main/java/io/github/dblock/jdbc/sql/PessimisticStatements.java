package io.github.dblock.jdbc.sql;


/**
 * The statements of PESSIMISTIC row locks ({@code PessimisticLockProvider}, {@code PessimisticFencing}), each run
 * with its row-lock wait bounded ({@link LockStatements#runWithLockWait}).
 * The text as {@link LockStatements} says: bind parameters only, the validated table names spliced in once, the server's
 * UTC clock. Built once per table; immutable and thread-safe.
 * <p>
 * Internal machinery of the JDBC engine, public only so that the other {@code io.github.dblock.jdbc} packages
 * can use it: not API, may change in any release.
 */
public final class PessimisticStatements extends LockTableSql {

	/**
	 * The waiting locking read: stored token, whether free and the server clock in µs, both as of the statement's
	 * start; then the µs from the statement's start to the evaluation of the row ({@code SYSDATE(6) - NOW(6)}) and
	 * {@code expires_at} in µs, from which {@code PessimisticFencing.Read#clockAfterGrant} derives a clock read after
	 * the grant. Parameter: resource.
	 */
	public final String pessimisticClockRead = sql("""
			SELECT fencing_token, expires_at <= UTC_TIMESTAMP(6), TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)),
			TIMESTAMPDIFF(MICROSECOND, NOW(6), SYSDATE(6)), TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', expires_at)
			FROM {lock} WHERE resource = ? FOR UPDATE""");

	/**
	 * The durable write, once the row is ours: records the owner and sets the token to the server clock when that
	 * exceeds the stored token. Parameters: owner, holder, minHold µs, resource.
	 */
	public final String pessimisticLock = sql("""
			UPDATE {lock} SET owner_token = ?, holder = ?,
			fencing_token = LAST_INSERT_ID(GREATEST(fencing_token, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))),
			acquired_at = UTC_TIMESTAMP(6), expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
			WHERE resource = ? AND expires_at <= UTC_TIMESTAMP(6)""");

	/** Sets a held row's token to {@code GREATEST(fencing_token + ?, <server µs>)}. Parameters: increment, resource. */
	public final String pessimisticRetoken = sql("""
			UPDATE {lock} SET fencing_token = LAST_INSERT_ID(GREATEST(fencing_token + ?,
			TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))) WHERE resource = ?""");

	PessimisticStatements(LockTable table) {
		super(table);
	}

}
