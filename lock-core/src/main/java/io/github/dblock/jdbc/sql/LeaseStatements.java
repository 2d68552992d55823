package io.github.dblock.jdbc.sql;


/**
 * The statements of exclusive leases on the lock table ({@code LeaseLockProvider}, {@link LockRows}): take,
 * release with hand-off, renewal, commit checks, and the waiter's line.
 * The text as {@link LockStatements} says: bind parameters only, the validated table names spliced in once, the server's
 * UTC clock. Built once per table; immutable and thread-safe.
 * <p>
 * Internal machinery of the JDBC engine, public only so that the other {@code io.github.dblock.jdbc} packages
 * can use it: not API, may change in any release.
 */
public final class LeaseStatements extends LockTableSql {

	/**
	 * Takes an expired lease, or one this owner already has (a take that committed before its connection broke):
	 * reserves a block of 1,024 fencing tokens (ExclusiveLease.TOKEN_BLOCK) and takes the taker out of line.
	 * Parameters: owner, holder, lease µs, owner, owner, resource, owner.
	 */
	public final String leaseTake = sql("""
			UPDATE {lock} SET owner_token = ?, holder = ?,
			fencing_token = LAST_INSERT_ID(GREATEST(fencing_token + 1024, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))),
			acquired_at = UTC_TIMESTAMP(6), expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND,
			waiting_until = IF(waiting_owner = ?, NULL, waiting_until),
			waiting_owner = IF(waiting_owner = ?, NULL, waiting_owner)
			WHERE resource = ? AND (expires_at <= UTC_TIMESTAMP(6) OR owner_token = ?)""");

	/** Inserts the row of a never-seen resource, taken. Parameters: resource, owner, holder, lease µs. */
	public final String leaseInsert = sql("""
			INSERT INTO {lock} (resource, owner_token, holder, fencing_token, acquired_at, expires_at)
			VALUES (?, ?, ?, LAST_INSERT_ID(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))),
			UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND)""");

	/** The holder of a lease that a release handed over to the waiter next in line, until that waiter takes it. */
	public static final String HANDED_OVER_HOLDER = "the next waiter in line (handed over at release)";

	/**
	 * Releases a lease of this owner. With a live waiter next in line (waiting_owner set, its announcement
	 * waiting_until not run out, the minimum hold time passed) the lease goes straight to it: its owner token
	 * becomes the row's, with a lease until its announcement runs out plus a second, and its next attempt takes the
	 * row as its own, so nobody else can take the lock in between. Otherwise the row is freed (expires_at = now, or
	 * the end of the minimum hold time). Either way the announcement is cleared, and the client learns in the same
	 * round trip, through LAST_INSERT_ID(expr) (LockRows.announcedWaitNanos): 1 for a hand-over, else the
	 * microseconds until the attempt a waiter announced (at least 2), or 0 if none did. Assignments run left to
	 * right and later ones see earlier results (MySQL, and MariaDB without SIMULTANEOUS_ASSIGNMENT; with it every
	 * one reads the old row, which gives the same result): each column is read only by assignments before its own.
	 * The fencing token goes back from the end of the block the take reserved to the last token this lease handed out
	 * (LEAST: never up), so that a counter taken faster than once per 1,024 µs does not run ahead of the server clock
	 * (ExclusiveLease#lastHandedOut). A hand-over sets the holder to {@link #HANDED_OVER_HOLDER} until the waiter's
	 * take writes its own, so that no view names the releaser as the holder. Parameters: last token handed out,
	 * minHold µs, {@link #HANDED_OVER_HOLDER}, minHold µs (four times), resource, owner.
	 */
	public final String leaseRelease = sql("""
			UPDATE {lock} SET fencing_token = LEAST(fencing_token, ?),
			holder = IF((waiting_owner IS NOT NULL AND waiting_until > UTC_TIMESTAMP(6) AND acquired_at + INTERVAL ? MICROSECOND <= UTC_TIMESTAMP(6)),
			?, holder),
			expires_at = IF((waiting_owner IS NOT NULL AND waiting_until > UTC_TIMESTAMP(6) AND acquired_at + INTERVAL ? MICROSECOND <= UTC_TIMESTAMP(6)),
			waiting_until + INTERVAL 1 SECOND, GREATEST(UTC_TIMESTAMP(6), acquired_at + INTERVAL ? MICROSECOND)),
			owner_token = IF((waiting_owner IS NOT NULL AND waiting_until > UTC_TIMESTAMP(6) AND acquired_at + INTERVAL ? MICROSECOND <= UTC_TIMESTAMP(6)),
			waiting_owner, NULL),
			waiting_until = IF(LAST_INSERT_ID(IF((waiting_owner IS NOT NULL AND waiting_until > UTC_TIMESTAMP(6) AND acquired_at + INTERVAL ? MICROSECOND <= UTC_TIMESTAMP(6)),
			1, IF(waiting_until > UTC_TIMESTAMP(6), GREATEST(2, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), waiting_until)), 0))) > 0, NULL, NULL),
			waiting_owner = NULL
			WHERE resource = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6)""");

	/**
	 * First statement of a renewal (or extension), in a short transaction: locks the row by primary key, so that the
	 * {@link #leaseRenew} that follows starts, and reads the server's clock, only once the row is this transaction's.
	 * The server fixes {@code UTC_TIMESTAMP()} when a statement starts: a renewal that waited for the row lock in its
	 * own statement (behind a commit check or a PESSIMISTIC holder of the resource) would judge the lease by a time
	 * before it waited, and extend a lease that ended meanwhile. Parameter: resource.
	 */
	public final String leaseLockForRenewal = sql("SELECT fencing_token FROM {lock} WHERE resource = ? FOR UPDATE");

	/**
	 * Renews (or extends) a lease of this owner that has not ended, after {@link #leaseLockForRenewal}. Parameters:
	 * lease µs, resource, owner.
	 */
	public final String leaseRenew = sql("""
			UPDATE {lock} SET expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
			WHERE resource = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6)""");

	/** Commit check on one primary: a locking read of the row. Parameters: resource, owner. */
	public final String leaseLockRow = sql("""
			SELECT fencing_token FROM {lock}
			WHERE resource = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6) FOR UPDATE""");

	/**
	 * Commit check on a multi-primary cluster: a write (the lease one microsecond longer), since only writes are
	 * certified. Parameters: resource, owner.
	 */
	public final String leaseTouchRow = sql("""
			UPDATE {lock} SET expires_at = expires_at + INTERVAL 1 MICROSECOND
			WHERE resource = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6)""");

	/** Holder, lease left, held for, waiter next in line and its announcement left (µs). Parameter: resource. */
	final String rowPeek = sql("""
			SELECT holder, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at),
			TIMESTAMPDIFF(MICROSECOND, acquired_at, UTC_TIMESTAMP(6)), waiting_owner,
			TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), waiting_until) FROM {lock} WHERE resource = ?""");

	/** Inserts a free row (for the PESSIMISTIC mode's row lock). Parameter: resource. */
	public final String rowInsertFree = sql("""
			INSERT INTO {lock} (resource, owner_token, holder, fencing_token, acquired_at, expires_at)
			VALUES (?, NULL, NULL, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)),
			UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))""");

	/** The fencing token of a lease this owner just took, where the driver did not return it. */
	final String rowToken = sql("SELECT fencing_token FROM {lock} WHERE resource = ? AND owner_token = ?");

	/** Extends the announcement of a waiter. Parameters: µs, resource. */
	final String rowAnnounce = sql("""
			UPDATE {lock} SET waiting_until = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
			WHERE resource = ? AND expires_at > UTC_TIMESTAMP(6)""");

	/**
	 * Makes this waiter the next in line unless another live waiter is. Parameters: owner, µs, resource, owner,
	 * owner.
	 */
	final String rowSuccessor = sql("""
			UPDATE {lock} SET waiting_owner = ?, waiting_until = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
			WHERE resource = ? AND expires_at > UTC_TIMESTAMP(6) AND (owner_token IS NULL OR owner_token <> ?)
			AND (waiting_owner IS NULL OR waiting_owner = ? OR waiting_until IS NULL OR waiting_until <= UTC_TIMESTAMP(6))""");

	/**
	 * A waiter gives up: frees a lease handed to it and takes itself out of line. Assignments run left to right and
	 * later ones see earlier results (MySQL and MariaDB without SIMULTANEOUS_ASSIGNMENT): expires_at and
	 * owner_token are only read before they change. Parameters: owner (four times), resource, owner, owner.
	 */
	final String rowWithdraw = sql("""
			UPDATE {lock} SET expires_at = IF(owner_token = ?, UTC_TIMESTAMP(6), expires_at),
			owner_token = IF(owner_token = ?, NULL, owner_token),
			waiting_until = IF(waiting_owner = ?, NULL, waiting_until),
			waiting_owner = IF(waiting_owner = ?, NULL, waiting_owner)
			WHERE resource = ? AND (owner_token = ? OR waiting_owner = ?)""");

	LeaseStatements(LockTable table) {
		super(table);
	}

}
