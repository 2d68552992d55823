package io.github.dblock.jdbc.sql;


/**
 * The statements of semaphore permits ({@code JdbcSemaphoreProvider}) on the pool table and its holder table.
 * The text as {@link LockStatements} says: bind parameters only, the validated table names spliced in once, the server's
 * UTC clock. Built once per table; immutable and thread-safe.
 * <p>
 * Internal machinery of the JDBC engine, public only so that the other {@code io.github.dblock.jdbc} packages
 * can use it: not API, may change in any release.
 */
public final class SemaphoreStatements extends LockTableSql {

	/**
	 * Locks the pool row: the first statement of an acquisition attempt, and of a renewal ({@link #semRenew}).
	 * Parameter: name.
	 */
	public final String semLockPool = sql("SELECT permits FROM {sem} WHERE name = ? FOR UPDATE");

	/** Holders, expired holders, and whether this owner holds one, with the holders locked. Parameters: owner, name. */
	public final String semCount = sql("""
			SELECT COUNT(*), COALESCE(SUM(expires_at <= UTC_TIMESTAMP(6)), 0),
			COALESCE(MAX(owner_token = ? AND expires_at > UTC_TIMESTAMP(6)), 0) FROM {sem_hold}
			WHERE name = ? FOR UPDATE""");

	public final String semOwnPermit = sql("""
			SELECT fencing_token, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) FROM {sem_hold}
			WHERE name = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6)""");

	public final String semDeleteExpired = sql("DELETE FROM {sem_hold} WHERE name = ? AND expires_at <= UTC_TIMESTAMP(6)");

	public final String semNextToken = sql("""
			UPDATE {sem} SET fencing_token = LAST_INSERT_ID(GREATEST(fencing_token + 1,
			TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))) WHERE name = ?""");

	public final String semToken = sql("SELECT fencing_token FROM {sem} WHERE name = ?");

	/** Parameters: name, owner, holder, fencing token, lease µs. */
	public final String semInsertHold = sql("""
			INSERT INTO {sem_hold} (name, owner_token, holder, fencing_token, acquired_at, expires_at)
			VALUES (?, ?, ?, ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND)""");

	/** Parameters: name, permits. */
	public final String semInsertPool = sql("""
			INSERT INTO {sem} (name, permits, fencing_token)
			VALUES (?, ?, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))""");

	public final String semUpdatePermits = sql("UPDATE {sem} SET permits = ? WHERE name = ?");

	public final String semPermits = sql("SELECT permits FROM {sem} WHERE name = ?");

	public final String semAvailable = sql("""
			SELECT s.permits - (SELECT COUNT(*) FROM {sem_hold} h WHERE h.name = s.name AND h.expires_at > UTC_TIMESTAMP(6))
			FROM {sem} s WHERE s.name = ?""");

	public final String semRelease = sql("""
			DELETE FROM {sem_hold} WHERE name = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6)""");

	/**
	 * Renews a permit, after {@link #semLockPool} in the same short transaction: that locking read of the pool row
	 * (which every acquisition attempt locks before the holder rows, so in the same lock order) does the waiting, so
	 * this statement starts, and reads the server's clock, once no acquisition can admit a holder beside it. Run on
	 * its own it could wait for the holder row (behind an attempt that locked every holder row) past the lease end
	 * and still compare with the time its statement started, extending a lease that ended after another holder was
	 * admitted. Parameters: lease µs, name, owner.
	 */
	public final String semRenew = sql("""
			UPDATE {sem_hold} SET expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
			WHERE name = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6)""");

	/** A plain (non-locking) read: it answers even while the holder row is locked. */
	public final String semOwnRemaining = sql("""
			SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) FROM {sem_hold}
			WHERE name = ? AND owner_token = ?""");

	SemaphoreStatements(LockTable table) {
		super(table);
	}

}
