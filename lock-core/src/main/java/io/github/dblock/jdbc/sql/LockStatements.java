package io.github.dblock.jdbc.sql;

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
 * that name no table (server, session and transaction control). The shared text is grouped by mechanism, one file
 * each: {@link LeaseStatements}, {@link ReadWriteStatements}, {@link SemaphoreStatements},
 * {@link IdempotencyStatements}, {@link PessimisticStatements}, {@link CleanupStatements}; OPTIMISTIC's two statements
 * and the Actuator view's are here. Nothing else in the library writes SQL.
 * <p>
 * The only identifier spliced into the SQL is the validated lock table name ({@link LockTable}), and the tables named
 * after it: the placeholders {@code {lock}}, {@code {rw}}, {@code {rw_hold}}, {@code {sem}}, {@code {sem_hold}} and
 * {@code {idem}} are replaced once, when an instance is built for a table; every value is a bind parameter. A text
 * block is sent as one line (its line breaks and indentation become single spaces), so what the server logs reads like
 * the text here. All times are the server's UTC clock ({@code UTC_TIMESTAMP(6)}), never the session time zone's.
 * <p>
 * Built once per table and provider; immutable and thread-safe (a {@link #of(LockTable, LockDialect) detecting}
 * instance caches the dialect it found, which is the same for every connection of a data source).
 * <p>
 * Internal machinery of the JDBC engine, public only so that the other {@code io.github.dblock.jdbc} packages
 * can use it: not API, may change in any release.
 */
public abstract sealed class LockStatements extends LockTableSql
		permits MariaDbStatements, MySqlStatements, DetectingStatements {

	/** Exclusive leases. */
	public final LeaseStatements lease = new LeaseStatements(table());

	/** Read/write leases. */
	public final ReadWriteStatements readWrite = new ReadWriteStatements(table());

	/** Semaphore permits. */
	public final SemaphoreStatements semaphore = new SemaphoreStatements(table());

	/** Idempotency records. */
	public final IdempotencyStatements idempotency = new IdempotencyStatements(table());

	/** PESSIMISTIC row locks. */
	public final PessimisticStatements pessimistic = new PessimisticStatements(table());

	/** Clean-up of expired rows. */
	public final CleanupStatements cleanup = new CleanupStatements(table());

	// ---- OPTIMISTIC (OptimisticLockProvider) ----

	public final String optimisticRead = sql("SELECT fencing_token FROM {lock} WHERE resource = ?");

	/** Compare-and-set of a free row's version. Parameters: owner, holder, resource, version. */
	public final String optimisticTake = sql("""
			UPDATE {lock} SET owner_token = ?, holder = ?,
			fencing_token = LAST_INSERT_ID(GREATEST(fencing_token + 1, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))),
			acquired_at = UTC_TIMESTAMP(6), expires_at = UTC_TIMESTAMP(6)
			WHERE resource = ? AND fencing_token = ? AND expires_at <= UTC_TIMESTAMP(6)""");

	// ---- the Actuator view (LockTableAdmin) ----

	public final String adminList = sql("""
			SELECT resource, holder, fencing_token, acquired_at, expires_at, (owner_token IS NOT NULL AND expires_at > UTC_TIMESTAMP(6))
			FROM {lock} WHERE owner_token IS NOT NULL AND expires_at > UTC_TIMESTAMP(6)
			ORDER BY expires_at, resource LIMIT ?""");

	public final String adminFind = sql("""
			SELECT resource, holder, fencing_token, acquired_at, expires_at, (owner_token IS NOT NULL AND expires_at > UTC_TIMESTAMP(6))
			FROM {lock} WHERE resource = ?""");

	public final String adminLockRow = sql("""
			SELECT resource, holder, fencing_token, acquired_at, expires_at, (owner_token IS NOT NULL AND expires_at > UTC_TIMESTAMP(6))
			FROM {lock} WHERE resource = ? FOR UPDATE""");

	public final String adminForceRelease = sql("""
			UPDATE {lock} SET owner_token = NULL, expires_at = UTC_TIMESTAMP(6),
			fencing_token = LAST_INSERT_ID(GREATEST(fencing_token + 1, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))))
			WHERE resource = ?""");

	public final String adminToken = sql("SELECT fencing_token FROM {lock} WHERE resource = ?");

	public final String adminProbe = sql("SELECT 1 FROM {lock} LIMIT 1");

	public final String adminLocked = sql("SELECT expires_at > UTC_TIMESTAMP(6) FROM {lock} WHERE resource = ?");

	LockStatements(LockTable table) {
		super(table);
	}

	/**
	 * The statements of a lock table for a server family.
	 * @param dialect the configured or detected family; {@code null} to detect it from the first connection's
	 * metadata that bounds a statement ({@link #prepareBounded})
	 */
	public static LockStatements of(LockTable table, @Nullable LockDialect dialect) {
		if (dialect == null) {
			return new DetectingStatements(table);
		}
		return (dialect == LockDialect.MARIADB) ? new MariaDbStatements(table) : new MySqlStatements(table);
	}

	/**
	 * The dialect these statements were built for, or the one detected so far; {@code null} while a detecting instance
	 * has seen no connection.
	 */
	public abstract @Nullable LockDialect dialect();

	/**
	 * Prepares a statement bounded to {@code timeoutSeconds} (at least 1): on MariaDB by the server ({@code SET
	 * STATEMENT max_statement_time = n FOR ...}, error 1969 when it ends the statement), on MySQL by the driver's query
	 * timeout. The server's bound is the cheaper one: Connector/J cancels with {@code KILL QUERY} over a new connection,
	 * and schedules a cancel task on a timer thread for every statement. Either way a reply that never comes is bounded
	 * by the network timeout ({@link JdbcLockSupport#boundReads}). Run a query prepared here with
	 * {@link JdbcLockSupport#query}.
	 * @param generatedKeys whether the driver should return {@code LAST_INSERT_ID} ({@code RETURN_GENERATED_KEYS})
	 */
	public abstract PreparedStatement prepareBounded(Connection connection, String sql, int timeoutSeconds,
			boolean generatedKeys) throws SQLException;

	/** The statement that lists the replication sources of a server, by its own family and version. */
	public static String replicaStatus(DatabaseServer server) {
		return (server.product() == DatabaseServer.Product.MARIADB) ? MariaDbStatements.REPLICA_STATUS
				: MySqlStatements.replicaStatus(server);
	}

	/** A statement of {@code count} bind parameters in place of {@code {keys}} (clean-up batches). */
	public static String withKeys(String sql, int count) {
		StringBuilder keys = new StringBuilder(count * 3);
		for (int i = 0; i < count; i++) {
			keys.append((i == 0) ? "?" : ", ?");
		}
		return sql.replace("{keys}", keys);
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
	public abstract PreparedStatement prepareInTransaction(Connection connection, String sql, int timeoutSeconds,
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
	public abstract <T extends @Nullable Object> T runWithLockWait(Connection connection, int waitSeconds, String sql,
			boolean noWait, boolean generatedKeys, BoundedStatement<T> action) throws SQLException;

}
