package io.github.dblock.jdbc.sql;


/**
 * The statements of read/write leases ({@code ReadWriteLeases}, {@code HeldReadWriteLeases}) on the resource
 * table and its holder table.
 * The text as {@link LockStatements} says: bind parameters only, the validated table names spliced in once, the server's
 * UTC clock. Built once per table; immutable and thread-safe.
 * <p>
 * Internal machinery of the JDBC engine, public only so that the other {@code io.github.dblock.jdbc} packages
 * can use it: not API, may change in any release.
 */
public final class ReadWriteStatements extends LockTableSql {

	public final String rwLockRow = sql("""
			SELECT fencing_token, intent_owner, intent_expires_at > UTC_TIMESTAMP(6), intent_holder FROM {rw}
			WHERE resource = ? FOR UPDATE""");

	public final String rwCreateRow = sql("""
			INSERT INTO {rw} (resource, fencing_token)
			VALUES (?, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))""");

	/** The strongest other live holder of at least the given kind. Parameters: resource, owner, kind. */
	public final String rwHolders = sql("""
			SELECT kind, holder, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) FROM {rw_hold}
			WHERE resource = ? AND owner_token <> ? AND expires_at > UTC_TIMESTAMP(6) AND kind >= ?
			ORDER BY kind DESC LIMIT 1 LOCK IN SHARE MODE""");

	public final String rwGrant = sql("UPDATE {rw} SET fencing_token = ? WHERE resource = ?");

	public final String rwGrantClearingIntent = sql("""
			UPDATE {rw} SET fencing_token = ?, intent_owner = NULL, intent_expires_at = NULL, intent_holder = NULL
			WHERE resource = ?""");

	/** Parameters: resource, owner, kind, holder, fencing token, lease µs. */
	public final String rwInsertHold = sql("""
			INSERT INTO {rw_hold} (resource, owner_token, kind, holder, fencing_token, acquired_at, expires_at)
			VALUES (?, ?, ?, ?, ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND)""");

	/** Parameters: owner, holder, intent µs, resource. */
	public final String rwIntent = sql("""
			UPDATE {rw} SET intent_owner = ?, intent_holder = ?, intent_expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
			WHERE resource = ?""");

	public final String rwClearIntent = sql("""
			UPDATE {rw} SET intent_owner = NULL, intent_expires_at = NULL, intent_holder = NULL
			WHERE resource = ? AND intent_owner = ?""");

	public final String rwOwnHold = sql("""
			SELECT fencing_token, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) FROM {rw_hold}
			WHERE resource = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6)""");

	public final String rwDropOwnExpired = sql("""
			DELETE FROM {rw_hold} WHERE resource = ? AND owner_token = ? AND expires_at <= UTC_TIMESTAMP(6)""");

	/**
	 * Renews a read or write lease, after {@link #rwLockResource} in the same short transaction: that locking read of
	 * the resource's row (which every acquisition and every write commit check locks first) does the waiting, so this
	 * statement starts, and reads the server's clock, once no acquisition can be granted beside it. Run on its own it
	 * could wait for the holder row (behind the holder's commit check) past the lease end and still compare with the
	 * time its statement started, extending a lease that ended after a competitor was granted. Parameters: lease µs,
	 * resource, owner.
	 */
	public final String rwRenew = sql("""
			UPDATE {rw_hold} SET expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
			WHERE resource = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6)""");

	public final String rwRelease = sql("""
			DELETE FROM {rw_hold} WHERE resource = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6)""");

	/** A release with a minimum hold. Parameters: minHold µs, resource, owner. */
	public final String rwReleaseKeeping = sql("""
			UPDATE {rw_hold} SET expires_at = GREATEST(UTC_TIMESTAMP(6), acquired_at + INTERVAL ? MICROSECOND)
			WHERE resource = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6)""");

	/** A plain (non-locking) read: it answers even while the holder row is locked. */
	public final String rwOwnRemaining = sql("""
			SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) FROM {rw_hold}
			WHERE resource = ? AND owner_token = ?""");

	/**
	 * Commit check of a write lock, first statement on one primary: a locking read of the resource's row by primary
	 * key, the row every acquisition of the resource locks first (rwLockRow), so that no reader or writer can be
	 * granted before the checked transaction ends, whichever holder rows its holder query visits. Also the first
	 * statement of a renewal ({@link #rwRenew}). Parameter: resource.
	 */
	public final String rwLockResource = sql("SELECT fencing_token FROM {rw} WHERE resource = ? FOR UPDATE");

	/** Commit check of a write lock, then: a locking read of the holder row. Parameters: resource, owner. */
	public final String rwLockHold = sql("""
			SELECT fencing_token FROM {rw_hold}
			WHERE resource = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6) FOR UPDATE""");

	/**
	 * Commit check of a write lock on a multi-primary cluster, first statement: a write to the resource's row, which
	 * certification orders against a grant on another node (and which locks the row, as rwLockResource does).
	 * Parameter: resource.
	 */
	public final String rwTouchResource = sql("UPDATE {rw} SET fencing_token = fencing_token + 1 WHERE resource = ?");

	ReadWriteStatements(LockTable table) {
		super(table);
	}

}
