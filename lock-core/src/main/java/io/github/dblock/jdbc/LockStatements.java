package io.github.dblock.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;

import org.jspecify.annotations.Nullable;

/**
 * Every statement this library sends to the lock database: the SQL both server families share, as text blocks, here;
 * what differs between them (how a statement and a row-lock wait are bounded in time, how the replica status is read)
 * in one subclass per family, {@link MariaDbStatements} and {@link MySqlStatements}, each in its own file. So this file
 * and {@code MariaDbStatements.java} are everything sent to MariaDB, this file and {@code MySqlStatements.java}
 * everything sent to MySQL; {@link DetectingStatements} picks one of the two from the first connection. The split
 * keeps each file readable (this one is the shared text only); its base {@link LockTableSql} holds the few statements
 * that name no table (server, session and transaction control). Nothing else in the library writes SQL.
 * <p>
 * The only identifier spliced into the SQL is the validated lock table name ({@link LockTable}), and the tables named
 * after it: the placeholders {@code {lock}}, {@code {rw}}, {@code {rw_hold}}, {@code {sem}}, {@code {sem_hold}} and
 * {@code {idem}} are replaced once, when an instance is built for a table; every value is a bind parameter. A text
 * block is sent as one line (its line breaks and indentation become single spaces), so what the server logs reads like
 * the text here. All times are the server's UTC clock ({@code UTC_TIMESTAMP(6)}), never the session time zone's.
 * <p>
 * Built once per table and provider; immutable and thread-safe (a {@link #of(LockTable, LockDialect) detecting}
 * instance caches the dialect it found, which is the same for every connection of a data source).
 */
abstract sealed class LockStatements extends LockTableSql
		permits MariaDbStatements, MySqlStatements, DetectingStatements {

	// ---- exclusive leases (LeaseLockProvider, LockRows) ----

	/**
	 * Takes an expired lease, or one this owner already has (a take that committed before its connection broke):
	 * reserves a block of 1,024 fencing tokens (LeaseLockProvider.TOKEN_BLOCK) and takes the taker out of line.
	 * Parameters: owner, holder, lease µs, owner, owner, resource, owner.
	 */
	final String leaseTake = sql("""
			UPDATE {lock} SET owner_token = ?, holder = ?,
			fencing_token = LAST_INSERT_ID(GREATEST(fencing_token + 1024, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))),
			acquired_at = UTC_TIMESTAMP(6), expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND,
			waiting_until = IF(waiting_owner = ?, NULL, waiting_until),
			waiting_owner = IF(waiting_owner = ?, NULL, waiting_owner)
			WHERE resource = ? AND (expires_at <= UTC_TIMESTAMP(6) OR owner_token = ?)""");

	/** Inserts the row of a never-seen resource, taken. Parameters: resource, owner, holder, lease µs. */
	final String leaseInsert = sql("""
			INSERT INTO {lock} (resource, owner_token, holder, fencing_token, acquired_at, expires_at)
			VALUES (?, ?, ?, LAST_INSERT_ID(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))),
			UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND)""");

	/** The holder of a lease that a release handed over to the waiter next in line, until that waiter takes it. */
	static final String HANDED_OVER_HOLDER = "the next waiter in line (handed over at release)";

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
	final String leaseRelease = sql("""
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
	final String leaseLockForRenewal = sql("SELECT fencing_token FROM {lock} WHERE resource = ? FOR UPDATE");

	/**
	 * Renews (or extends) a lease of this owner that has not ended, after {@link #leaseLockForRenewal}. Parameters:
	 * lease µs, resource, owner.
	 */
	final String leaseRenew = sql("""
			UPDATE {lock} SET expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
			WHERE resource = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6)""");

	/** Commit check on one primary: a locking read of the row. Parameters: resource, owner. */
	final String leaseLockRow = sql("""
			SELECT fencing_token FROM {lock}
			WHERE resource = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6) FOR UPDATE""");

	/**
	 * Commit check on a multi-primary cluster: a write (the lease one microsecond longer), since only writes are
	 * certified. Parameters: resource, owner.
	 */
	final String leaseTouchRow = sql("""
			UPDATE {lock} SET expires_at = expires_at + INTERVAL 1 MICROSECOND
			WHERE resource = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6)""");

	/** Holder, lease left, held for, waiter next in line and its announcement left (µs). Parameter: resource. */
	final String rowPeek = sql("""
			SELECT holder, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at),
			TIMESTAMPDIFF(MICROSECOND, acquired_at, UTC_TIMESTAMP(6)), waiting_owner,
			TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), waiting_until) FROM {lock} WHERE resource = ?""");

	/** Inserts a free row (for the PESSIMISTIC mode's row lock). Parameter: resource. */
	final String rowInsertFree = sql("""
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

	// ---- read/write leases (ReadWriteLeases) ----

	final String rwLockRow = sql("""
			SELECT fencing_token, intent_owner, intent_expires_at > UTC_TIMESTAMP(6), intent_holder FROM {rw}
			WHERE resource = ? FOR UPDATE""");

	final String rwCreateRow = sql("""
			INSERT INTO {rw} (resource, fencing_token)
			VALUES (?, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))""");

	/** The strongest other live holder of at least the given kind. Parameters: resource, owner, kind. */
	final String rwHolders = sql("""
			SELECT kind, holder, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) FROM {rw_hold}
			WHERE resource = ? AND owner_token <> ? AND expires_at > UTC_TIMESTAMP(6) AND kind >= ?
			ORDER BY kind DESC LIMIT 1 LOCK IN SHARE MODE""");

	final String rwGrant = sql("UPDATE {rw} SET fencing_token = ? WHERE resource = ?");

	final String rwGrantClearingIntent = sql("""
			UPDATE {rw} SET fencing_token = ?, intent_owner = NULL, intent_expires_at = NULL, intent_holder = NULL
			WHERE resource = ?""");

	/** Parameters: resource, owner, kind, holder, fencing token, lease µs. */
	final String rwInsertHold = sql("""
			INSERT INTO {rw_hold} (resource, owner_token, kind, holder, fencing_token, acquired_at, expires_at)
			VALUES (?, ?, ?, ?, ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND)""");

	/** Parameters: owner, holder, intent µs, resource. */
	final String rwIntent = sql("""
			UPDATE {rw} SET intent_owner = ?, intent_holder = ?, intent_expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
			WHERE resource = ?""");

	final String rwClearIntent = sql("""
			UPDATE {rw} SET intent_owner = NULL, intent_expires_at = NULL, intent_holder = NULL
			WHERE resource = ? AND intent_owner = ?""");

	final String rwOwnHold = sql("""
			SELECT fencing_token, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) FROM {rw_hold}
			WHERE resource = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6)""");

	final String rwDropOwnExpired = sql("""
			DELETE FROM {rw_hold} WHERE resource = ? AND owner_token = ? AND expires_at <= UTC_TIMESTAMP(6)""");

	/**
	 * Renews a read or write lease, after {@link #rwLockResource} in the same short transaction: that locking read of
	 * the resource's row (which every acquisition and every write commit check locks first) does the waiting, so this
	 * statement starts, and reads the server's clock, once no acquisition can be granted beside it. Run on its own it
	 * could wait for the holder row (behind the holder's commit check) past the lease end and still compare with the
	 * time its statement started, extending a lease that ended after a competitor was granted. Parameters: lease µs,
	 * resource, owner.
	 */
	final String rwRenew = sql("""
			UPDATE {rw_hold} SET expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
			WHERE resource = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6)""");

	final String rwRelease = sql("""
			DELETE FROM {rw_hold} WHERE resource = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6)""");

	/** A release with a minimum hold. Parameters: minHold µs, resource, owner. */
	final String rwReleaseKeeping = sql("""
			UPDATE {rw_hold} SET expires_at = GREATEST(UTC_TIMESTAMP(6), acquired_at + INTERVAL ? MICROSECOND)
			WHERE resource = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6)""");

	/** A plain (non-locking) read: it answers even while the holder row is locked. */
	final String rwOwnRemaining = sql("""
			SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) FROM {rw_hold}
			WHERE resource = ? AND owner_token = ?""");

	/**
	 * Commit check of a write lock, first statement on one primary: a locking read of the resource's row by primary
	 * key, the row every acquisition of the resource locks first (rwLockRow), so that no reader or writer can be
	 * granted before the checked transaction ends, whichever holder rows its holder query visits. Also the first
	 * statement of a renewal ({@link #rwRenew}). Parameter: resource.
	 */
	final String rwLockResource = sql("SELECT fencing_token FROM {rw} WHERE resource = ? FOR UPDATE");

	/** Commit check of a write lock, then: a locking read of the holder row. Parameters: resource, owner. */
	final String rwLockHold = sql("""
			SELECT fencing_token FROM {rw_hold}
			WHERE resource = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6) FOR UPDATE""");

	/**
	 * Commit check of a write lock on a multi-primary cluster, first statement: a write to the resource's row, which
	 * certification orders against a grant on another node (and which locks the row, as rwLockResource does).
	 * Parameter: resource.
	 */
	final String rwTouchResource = sql("UPDATE {rw} SET fencing_token = fencing_token + 1 WHERE resource = ?");

	// ---- semaphores (JdbcSemaphoreProvider) ----

	/**
	 * Locks the pool row: the first statement of an acquisition attempt, and of a renewal ({@link #semRenew}).
	 * Parameter: name.
	 */
	final String semLockPool = sql("SELECT permits FROM {sem} WHERE name = ? FOR UPDATE");

	/** Holders, expired holders, and whether this owner holds one, with the holders locked. Parameters: owner, name. */
	final String semCount = sql("""
			SELECT COUNT(*), COALESCE(SUM(expires_at <= UTC_TIMESTAMP(6)), 0),
			COALESCE(MAX(owner_token = ? AND expires_at > UTC_TIMESTAMP(6)), 0) FROM {sem_hold}
			WHERE name = ? FOR UPDATE""");

	final String semOwnPermit = sql("""
			SELECT fencing_token, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) FROM {sem_hold}
			WHERE name = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6)""");

	final String semDeleteExpired = sql("DELETE FROM {sem_hold} WHERE name = ? AND expires_at <= UTC_TIMESTAMP(6)");

	final String semNextToken = sql("""
			UPDATE {sem} SET fencing_token = LAST_INSERT_ID(GREATEST(fencing_token + 1,
			TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))) WHERE name = ?""");

	final String semToken = sql("SELECT fencing_token FROM {sem} WHERE name = ?");

	/** Parameters: name, owner, holder, fencing token, lease µs. */
	final String semInsertHold = sql("""
			INSERT INTO {sem_hold} (name, owner_token, holder, fencing_token, acquired_at, expires_at)
			VALUES (?, ?, ?, ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND)""");

	/** Parameters: name, permits. */
	final String semInsertPool = sql("""
			INSERT INTO {sem} (name, permits, fencing_token)
			VALUES (?, ?, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))""");

	final String semUpdatePermits = sql("UPDATE {sem} SET permits = ? WHERE name = ?");

	final String semPermits = sql("SELECT permits FROM {sem} WHERE name = ?");

	final String semAvailable = sql("""
			SELECT s.permits - (SELECT COUNT(*) FROM {sem_hold} h WHERE h.name = s.name AND h.expires_at > UTC_TIMESTAMP(6))
			FROM {sem} s WHERE s.name = ?""");

	final String semRelease = sql("""
			DELETE FROM {sem_hold} WHERE name = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6)""");

	/**
	 * Renews a permit, after {@link #semLockPool} in the same short transaction: that locking read of the pool row
	 * (which every acquisition attempt locks before the holder rows, so in the same lock order) does the waiting, so
	 * this statement starts, and reads the server's clock, once no acquisition can admit a holder beside it. Run on
	 * its own it could wait for the holder row (behind an attempt that locked every holder row) past the lease end
	 * and still compare with the time its statement started, extending a lease that ended after another holder was
	 * admitted. Parameters: lease µs, name, owner.
	 */
	final String semRenew = sql("""
			UPDATE {sem_hold} SET expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
			WHERE name = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6)""");

	/** A plain (non-locking) read: it answers even while the holder row is locked. */
	final String semOwnRemaining = sql("""
			SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) FROM {sem_hold}
			WHERE name = ? AND owner_token = ?""");

	// ---- idempotency records (IdempotencyStore) ----

	/** Parameters: key, owner, holder, lease µs, retention µs. */
	final String idemInsert = sql("""
			INSERT INTO {idem} (idem_key, status, owner_token, holder, fencing_token, attempts, started_at, expires_at, retain_until)
			VALUES (?, 'RUNNING', ?, ?, LAST_INSERT_ID(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))), 1,
			UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND)""");

	/**
	 * Takes over a failed, expired or retained-too-long record, or one this owner runs; attempts is assigned before
	 * status, so that it reads the old status under either assignment order. Parameters: owner, holder, lease µs,
	 * retention µs, key, owner.
	 */
	final String idemTakeOver = sql("""
			UPDATE {idem} SET attempts = IF(status = 'SUCCEEDED', 1, attempts + 1), status = 'RUNNING',
			owner_token = ?, holder = ?,
			fencing_token = LAST_INSERT_ID(GREATEST(fencing_token + 1, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))),
			started_at = UTC_TIMESTAMP(6), expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, completed_at = NULL,
			retain_until = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, outcome = NULL, outcome_type = NULL, error = NULL
			WHERE idem_key = ? AND (status = 'FAILED' OR (status = 'RUNNING' AND expires_at <= UTC_TIMESTAMP(6))
			OR (status = 'SUCCEEDED' AND retain_until <= UTC_TIMESTAMP(6)) OR (status = 'RUNNING' AND owner_token = ?))""");

	final String idemSelect = sql("""
			SELECT status, holder, owner_token, fencing_token, attempts, started_at, expires_at, completed_at,
			retain_until, outcome, outcome_type, error, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at),
			retain_until <= UTC_TIMESTAMP(6) FROM {idem} WHERE idem_key = ?""");

	final String idemToken = sql("SELECT fencing_token FROM {idem} WHERE idem_key = ? AND owner_token = ?");

	/**
	 * First statement of a claim's renewal, in a short transaction: locks the record by primary key (the row every
	 * claim, take-over and completion of the key locks), so that the {@link #idemRenew} that follows starts, and reads
	 * the server's clock, only once the record is this transaction's. Run on its own, the renewal could wait behind
	 * another caller's uncommitted completion past the lease end and still judge the lease by the time its statement
	 * started. Parameter: key.
	 */
	final String idemLockForRenewal = sql("SELECT status FROM {idem} WHERE idem_key = ? FOR UPDATE");

	/** Renews a running claim of this owner, after {@link #idemLockForRenewal}. Parameters: lease µs, key, owner. */
	final String idemRenew = sql("""
			UPDATE {idem} SET expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
			WHERE idem_key = ? AND owner_token = ? AND status = 'RUNNING' AND expires_at > UTC_TIMESTAMP(6)""");

	/** Parameters: retention µs, outcome, outcome type, error, key, owner. */
	final String idemSucceed = sql("""
			UPDATE {idem} SET status = 'SUCCEEDED', expires_at = UTC_TIMESTAMP(6), completed_at = UTC_TIMESTAMP(6),
			retain_until = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, outcome = ?, outcome_type = ?, error = ?
			WHERE idem_key = ? AND owner_token = ? AND status = 'RUNNING'""");

	/** Parameters as #idemSucceed. */
	final String idemFail = sql("""
			UPDATE {idem} SET status = 'FAILED', expires_at = UTC_TIMESTAMP(6), completed_at = UTC_TIMESTAMP(6),
			retain_until = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, outcome = ?, outcome_type = ?, error = ?
			WHERE idem_key = ? AND owner_token = ? AND status = 'RUNNING'""");

	final String idemDelete = sql("DELETE FROM {idem} WHERE idem_key = ?");

	// ---- PESSIMISTIC row locks (PessimisticLockProvider, PessimisticFencing); bounded with runWithLockWait ----

	/**
	 * The waiting locking read: stored token, whether free and the server clock in µs, both as of the statement's
	 * start; then the µs from the statement's start to the evaluation of the row ({@code SYSDATE(6) - NOW(6)}) and
	 * {@code expires_at} in µs, from which {@code PessimisticFencing.Read#clockAfterGrant} derives a clock read after
	 * the grant. Parameter: resource.
	 */
	final String pessimisticClockRead = sql("""
			SELECT fencing_token, expires_at <= UTC_TIMESTAMP(6), TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)),
			TIMESTAMPDIFF(MICROSECOND, NOW(6), SYSDATE(6)), TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', expires_at)
			FROM {lock} WHERE resource = ? FOR UPDATE""");

	/**
	 * The durable write, once the row is ours: records the owner and sets the token to the server clock when that
	 * exceeds the stored token. Parameters: owner, holder, minHold µs, resource.
	 */
	final String pessimisticLock = sql("""
			UPDATE {lock} SET owner_token = ?, holder = ?,
			fencing_token = LAST_INSERT_ID(GREATEST(fencing_token, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))),
			acquired_at = UTC_TIMESTAMP(6), expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
			WHERE resource = ? AND expires_at <= UTC_TIMESTAMP(6)""");

	/** Sets a held row's token to {@code GREATEST(fencing_token + ?, <server µs>)}. Parameters: increment, resource. */
	final String pessimisticRetoken = sql("""
			UPDATE {lock} SET fencing_token = LAST_INSERT_ID(GREATEST(fencing_token + ?,
			TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))) WHERE resource = ?""");

	// ---- OPTIMISTIC (OptimisticLockProvider) ----

	final String optimisticRead = sql("SELECT fencing_token FROM {lock} WHERE resource = ?");

	/** Compare-and-set of a free row's version. Parameters: owner, holder, resource, version. */
	final String optimisticTake = sql("""
			UPDATE {lock} SET owner_token = ?, holder = ?,
			fencing_token = LAST_INSERT_ID(GREATEST(fencing_token + 1, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))),
			acquired_at = UTC_TIMESTAMP(6), expires_at = UTC_TIMESTAMP(6)
			WHERE resource = ? AND fencing_token = ? AND expires_at <= UTC_TIMESTAMP(6)""");

	// ---- the Actuator view (LockTableAdmin) ----

	final String adminList = sql("""
			SELECT resource, holder, fencing_token, acquired_at, expires_at, (owner_token IS NOT NULL AND expires_at > UTC_TIMESTAMP(6))
			FROM {lock} WHERE owner_token IS NOT NULL AND expires_at > UTC_TIMESTAMP(6)
			ORDER BY expires_at, resource LIMIT ?""");

	final String adminFind = sql("""
			SELECT resource, holder, fencing_token, acquired_at, expires_at, (owner_token IS NOT NULL AND expires_at > UTC_TIMESTAMP(6))
			FROM {lock} WHERE resource = ?""");

	final String adminLockRow = sql("""
			SELECT resource, holder, fencing_token, acquired_at, expires_at, (owner_token IS NOT NULL AND expires_at > UTC_TIMESTAMP(6))
			FROM {lock} WHERE resource = ? FOR UPDATE""");

	final String adminForceRelease = sql("""
			UPDATE {lock} SET owner_token = NULL, expires_at = UTC_TIMESTAMP(6),
			fencing_token = LAST_INSERT_ID(GREATEST(fencing_token + 1, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))))
			WHERE resource = ?""");

	final String adminToken = sql("SELECT fencing_token FROM {lock} WHERE resource = ?");

	final String adminProbe = sql("SELECT 1 FROM {lock} LIMIT 1");

	final String adminLocked = sql("SELECT expires_at > UTC_TIMESTAMP(6) FROM {lock} WHERE resource = ?");

	// ---- clean-up (LockTableCleaner) ----

	/**
	 * Expired lock rows, beyond the retention, whose fencing token the server clock (in µs) has passed by the retention
	 * too: a row re-created later starts its token at the clock, so it must never be deleted while its counter is
	 * ahead. Parameters (each statement): retention µs twice (after the keys, if any); the candidates then the batch
	 * size.
	 */
	final Cleanup lockCleanup = new Cleanup(
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
	final Cleanup idempotencyCleanup = new Cleanup(
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
	final String cleanRwHolds = sql("""
			SELECT resource, owner_token FROM {rw_hold} WHERE expires_at < UTC_TIMESTAMP(6)
			ORDER BY expires_at LIMIT ?""");

	final String cleanRwHold = sql("""
			DELETE FROM {rw_hold} WHERE resource = ? AND owner_token = ? AND expires_at < UTC_TIMESTAMP(6)""");

	/** Expired permits, and the delete of one (parameters: name, owner). */
	final String cleanSemHolds = sql("""
			SELECT name, owner_token FROM {sem_hold} WHERE expires_at < UTC_TIMESTAMP(6)
			ORDER BY expires_at LIMIT ?""");

	final String cleanSemHold = sql("""
			DELETE FROM {sem_hold} WHERE name = ? AND owner_token = ? AND expires_at < UTC_TIMESTAMP(6)""");

	LockStatements(LockTable table) {
		super(table);
	}

	/**
	 * The statements of a lock table for a server family.
	 * @param dialect the configured or detected family; {@code null} to detect it from the first connection's
	 * metadata that bounds a statement ({@link #prepareBounded})
	 */
	static LockStatements of(LockTable table, @Nullable LockDialect dialect) {
		if (dialect == null) {
			return new DetectingStatements(table);
		}
		return (dialect == LockDialect.MARIADB) ? new MariaDbStatements(table) : new MySqlStatements(table);
	}

	/**
	 * The dialect these statements were built for, or the one detected so far; {@code null} while a detecting instance
	 * has seen no connection.
	 */
	abstract @Nullable LockDialect dialect();

	/**
	 * Prepares a statement bounded to {@code timeoutSeconds} (at least 1): on MariaDB by the server ({@code SET
	 * STATEMENT max_statement_time = n FOR ...}, error 1969 when it ends the statement), on MySQL by the driver's query
	 * timeout. The server's bound is the cheaper one: Connector/J cancels with {@code KILL QUERY} over a new connection,
	 * and schedules a cancel task on a timer thread for every statement. Either way a reply that never comes is bounded
	 * by the network timeout ({@link JdbcLockSupport#boundReads}). Run a query prepared here with
	 * {@link JdbcLockSupport#query}.
	 * @param generatedKeys whether the driver should return {@code LAST_INSERT_ID} ({@code RETURN_GENERATED_KEYS})
	 */
	abstract PreparedStatement prepareBounded(Connection connection, String sql, int timeoutSeconds,
			boolean generatedKeys) throws SQLException;

	/** The statement that lists the replication sources of a server, by its own family and version. */
	static String replicaStatus(DatabaseServer server) {
		return (server.product() == DatabaseServer.Product.MARIADB) ? MariaDbStatements.REPLICA_STATUS
				: MySqlStatements.replicaStatus(server);
	}

	/** A statement of {@code count} bind parameters in place of {@code {keys}} (clean-up batches). */
	static String withKeys(String sql, int count) {
		StringBuilder keys = new StringBuilder(count * 3);
		for (int i = 0; i < count; i++) {
			keys.append((i == 0) ? "?" : ", ?");
		}
		return sql.replace("{keys}", keys);
	}

	/** The statements of one target of clean-up: candidates, then locking and deleting those still expired. */
	record Cleanup(String candidates, String lockStillExpired, String delete) {
	}

	/**
	 * Prepares a statement that may run in a transaction that read before it: the application's transaction (commit
	 * checks, a PESSIMISTIC lock that joins it, the record of an idempotent call's outcome) or OPTIMISTIC's work
	 * transaction. Bounded as {@link #prepareBounded}; on a MariaDB server that has {@code innodb_snapshot_isolation}
	 * (from 10.6.18 and the releases of later series since; ON by default from 11.6.2) the statement runs with it OFF ({@code SET STATEMENT ...,
	 * innodb_snapshot_isolation=OFF FOR}), so that it locks and reads the latest committed row, as on MySQL, instead of
	 * failing with error 1020 (the whole transaction rolled back) because the row changed after the transaction's read
	 * view was created. The application's own statements keep the session's setting. See docs/DESIGN.md, "Snapshot
	 * isolation".
	 */
	abstract PreparedStatement prepareInTransaction(Connection connection, String sql, int timeoutSeconds,
			boolean generatedKeys) throws SQLException;

	/**
	 * Runs one statement that may wait for a row lock, with the server's lock wait ({@code innodb_lock_wait_timeout})
	 * limited to {@code waitSeconds}: MariaDB's {@code SET STATEMENT ... FOR} prefix; on MySQL the session variable set
	 * before and reset after, or {@code NOWAIT} for a zero wait where {@code noWait} allows. The statement is registered
	 * with {@link InterruptibleWaits} so that an interrupt cancels the wait. It may run in the application's
	 * transaction (PESSIMISTIC), so on MariaDB it runs without snapshot isolation as {@link #prepareInTransaction}
	 * says. Failures with the lock unavailable: {@link SqlErrors#isLockUnavailable}.
	 * @param waitSeconds the wait in whole seconds, 0 for none
	 * @param noWait whether the statement is a locking read that takes {@code NOWAIT}
	 */
	abstract <T extends @Nullable Object> T runWithLockWait(Connection connection, int waitSeconds, String sql,
			boolean noWait, boolean generatedKeys, BoundedStatement<T> action) throws SQLException;

}
