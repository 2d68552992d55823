package io.github.dblock.jdbc.sql;

import java.sql.SQLException;

import org.jspecify.annotations.Nullable;

/**
 * The one classification of the SQL errors the JDBC providers act on, and the only place their MySQL/MariaDB codes
 * are written. {@link #classify(SQLException)} names what one exception means; the predicates answer the questions the
 * providers ask, some over the whole cause chain (as the error usually arrives wrapped in a Spring
 * {@code DataAccessException}).
 * <p>
 * Stateless: the methods are static and thread-safe; no argument may be {@code null} unless marked.
 * <p>
 * Internal machinery of the JDBC engine, public only so that the other {@code io.github.dblock.jdbc} packages
 * can use it: not API, may change in any release.
 */
public final class SqlErrors {

	/** ER_LOCK_WAIT_TIMEOUT (MySQL and MariaDB, also MariaDB's {@code NOWAIT}): the statement was rolled back. */
	static final int LOCK_WAIT_TIMEOUT = 1205;

	/** MySQL's ER_LOCK_NOWAIT: a {@code FOR UPDATE NOWAIT} found the row locked. */
	static final int LOCK_NOWAIT = 3572;

	/** ER_LOCK_DEADLOCK: the server rolled the whole transaction back. */
	static final int DEADLOCK = 1213;

	/**
	 * ER_CHECKREAD, as MariaDB's snapshot isolation ({@code innodb_snapshot_isolation}, ON by default from 11.6.2)
	 * raises it: a locking read or write in a REPEATABLE READ or SERIALIZABLE transaction met a row changed after the
	 * transaction's read view was created; the server rolled the whole transaction back.
	 */
	static final int SNAPSHOT_CONFLICT = 1020;

	/** MariaDB's ER_STATEMENT_TIMEOUT: a statement ended by {@code max_statement_time} (SQLSTATE 70100). */
	static final int MARIADB_STATEMENT_TIMEOUT = 1969;

	/** MySQL's ER_QUERY_TIMEOUT: a {@code SELECT} ended by {@code max_execution_time}. */
	static final int MYSQL_EXECUTION_TIMEOUT = 3024;

	/** ER_DUP_ENTRY: a duplicate entry for a unique key. */
	static final int DUPLICATE_KEY = 1062;

	/** ER_NO_SUCH_TABLE. */
	static final int NO_SUCH_TABLE = 1146;

	/** ER_TABLEACCESS_DENIED_ERROR: no grant on the table (a runtime user granted only the lock table). */
	static final int TABLE_ACCESS_DENIED = 1142;

	/** SQLSTATE of a serialization failure (a deadlock, a cluster's certification conflict). */
	private static final String SERIALIZATION_FAILURE = "40001";

	private SqlErrors() {
	}

	/** What one SQL error means to a lock provider. */
	public enum Kind {

		/**
		 * Busy: the statement waited for a row lock held by another transaction until the server's lock wait timeout
		 * (1205); the statement was rolled back, the transaction goes on.
		 */
		LOCK_WAIT_TIMEOUT,

		/**
		 * Busy or slow: the statement was ended by its time bound (the driver's query timeout, MariaDB's
		 * {@code max_statement_time}, MySQL's {@code max_execution_time}), so its outcome may be unknown (a
		 * {@code COMMIT} whose reply came late).
		 */
		STATEMENT_TIMEOUT,

		/** A deadlock or serialization failure (1213, SQLSTATE 40001): the whole transaction was rolled back. */
		DEADLOCK,

		/**
		 * MariaDB's snapshot isolation found a row changed since the transaction's read view was created (1020): the
		 * whole transaction was rolled back, as after a deadlock; running it again reads the new row.
		 */
		SNAPSHOT_CONFLICT,

		/** A duplicate key (1062): another session inserted the row first. */
		DUPLICATE_KEY,

		/** The table does not exist (1146) or may not be read (1142). */
		NO_TABLE,

		/**
		 * The connection broke or could not be had; the outcome of the last statement is unknown (see
		 * {@link #isConnectionFailure(Throwable)}).
		 */
		CONNECTION_FAILURE,

		/** Anything else: a fault to report. */
		OTHER

	}

	/**
	 * What this one exception means, by its own type, error code and SQLSTATE (not its causes); the first kind that
	 * applies, in the order of {@link Kind}'s constants but with {@link Kind#STATEMENT_TIMEOUT} first (a timed-out
	 * statement's outcome may be unknown, whatever its code).
	 */
	public static Kind classify(SQLException ex) {
		if (isStatementTimeout(ex)) {
			return Kind.STATEMENT_TIMEOUT;
		}
		if (isLockWaitTimeout(ex)) {
			return Kind.LOCK_WAIT_TIMEOUT;
		}
		if (isDeadlock(ex)) {
			return Kind.DEADLOCK;
		}
		if (isSnapshotConflict(ex)) {
			return Kind.SNAPSHOT_CONFLICT;
		}
		if (isDuplicateKey(ex)) {
			return Kind.DUPLICATE_KEY;
		}
		if (ex.getErrorCode() == NO_SUCH_TABLE || ex.getErrorCode() == TABLE_ACCESS_DENIED) {
			return Kind.NO_TABLE;
		}
		return isConnectionFailure(ex) ? Kind.CONNECTION_FAILURE : Kind.OTHER;
	}

	/**
	 * Whether the statement found the row locked by another transaction for longer than it may wait: a lock wait
	 * timeout or the statement's time bound. The caller's answer is "busy", not a fault.
	 */
	public static boolean isBusy(SQLException ex) {
		return isStatementTimeout(ex) || isLockWaitTimeout(ex);
	}

	/**
	 * Whether a statement was ended by its time bound: the driver's query timeout ({@link java.sql.SQLTimeoutException}),
	 * MariaDB's {@code max_statement_time} (1969) or MySQL's {@code max_execution_time} (3024). Not a lock wait timeout
	 * (1205), which leaves no outcome unknown.
	 */
	public static boolean isStatementTimeout(SQLException ex) {
		return ex instanceof java.sql.SQLTimeoutException || ex.getErrorCode() == MARIADB_STATEMENT_TIMEOUT
				|| ex.getErrorCode() == MYSQL_EXECUTION_TIMEOUT;
	}

	/**
	 * Whether a statement that waits for a row lock with a bounded lock wait found it unavailable: the lock wait
	 * timeout (1205, also MariaDB's {@code NOWAIT}), MySQL's {@code NOWAIT} refusal (3572), or the driver's query
	 * timeout that cancelled the wait.
	 */
	public static boolean isLockUnavailable(SQLException ex) {
		return ex.getErrorCode() == LOCK_WAIT_TIMEOUT || ex.getErrorCode() == LOCK_NOWAIT
				|| ex instanceof java.sql.SQLTimeoutException;
	}

	/** Whether the server's lock wait timeout (1205) rolled the statement back. */
	static boolean isLockWaitTimeout(SQLException ex) {
		return ex.getErrorCode() == LOCK_WAIT_TIMEOUT;
	}

	/** A deadlock (1213) or a serialization failure (SQLSTATE 40001) of this exception itself. */
	private static boolean isDeadlock(SQLException ex) {
		return ex.getErrorCode() == DEADLOCK || SERIALIZATION_FAILURE.equals(ex.getSQLState());
	}

	/** MariaDB's snapshot isolation rolled the transaction back (1020). */
	static boolean isSnapshotConflict(SQLException ex) {
		return ex.getErrorCode() == SNAPSHOT_CONFLICT;
	}

	/** Duplicate entry for a unique key (1062). */
	public static boolean isDuplicateKey(SQLException ex) {
		return ex.getErrorCode() == DUPLICATE_KEY;
	}

	/**
	 * Whether the most specific cause of a failure says that the table does not exist (1146), or, with
	 * {@code orNotGranted}, that it may not be read either (1142).
	 */
	public static boolean isMissingTable(@Nullable Throwable mostSpecificCause, boolean orNotGranted) {
		if (!(mostSpecificCause instanceof SQLException sql)) {
			return false;
		}
		return sql.getErrorCode() == NO_SUCH_TABLE || (orNotGranted && sql.getErrorCode() == TABLE_ACCESS_DENIED);
	}

	/**
	 * A deadlock (1213), serialization failure (SQLSTATE 40001) or snapshot-isolation conflict (1020) anywhere in the
	 * cause chain: the server rolled the whole transaction back. Not a lock wait timeout, which rolls back only the
	 * statement.
	 */
	public static boolean isRolledBackConflict(Throwable ex) {
		for (Throwable t = ex; t != null && t.getCause() != t; t = t.getCause()) {
			if (t instanceof SQLException sql && (isDeadlock(sql) || isSnapshotConflict(sql))) {
				return true;
			}
		}
		return false;
	}

	/**
	 * Deadlock (1213), lock wait timeout (1205), snapshot-isolation conflict (1020) or any serialization failure
	 * (SQLSTATE 40001) anywhere in the cause chain: worth running the same short transaction again.
	 */
	public static boolean isTransient(Throwable ex) {
		for (Throwable t = ex; t != null && t.getCause() != t; t = t.getCause()) {
			if (t instanceof SQLException sql && (isDeadlock(sql) || isLockWaitTimeout(sql) || isSnapshotConflict(sql))) {
				return true;
			}
		}
		return false;
	}

	/**
	 * Whether a failure means the database answered too slowly rather than not at all: a statement or lock wait that
	 * timed out (query timeout, 1969, 3024, 1205), a reply that did not come within the network timeout, or a pool that
	 * had no connection free in time (without a connection failure as its cause).
	 */
	static boolean isTooSlow(Throwable ex) {
		for (Throwable t = ex; t != null; t = t.getCause()) {
			if (t instanceof java.net.SocketTimeoutException) {
				return true;
			}
			if (t instanceof SQLException sql && isBusy(sql)) {
				return true;
			}
			if (t instanceof java.sql.SQLTransientConnectionException && t.getCause() == null) {
				return true; // HikariCP: no connection free in time, none failed
			}
			if (t.getCause() == t) {
				break;
			}
		}
		return false;
	}

	/**
	 * Whether a failure means no connection to the database could be made at all (refused, unknown host, no route,
	 * SQLSTATE 08001 or 08004, or a pool that timed out because of such a failure), as opposed to a connection that
	 * was made and then broke, went silent or answered too slowly.
	 */
	public static boolean isUnreachable(Throwable ex) {
		for (Throwable t = ex; t != null; t = t.getCause()) {
			if (t instanceof java.net.ConnectException || t instanceof java.net.UnknownHostException
					|| t instanceof java.net.NoRouteToHostException) {
				return true;
			}
			if (t instanceof SQLException sql && ("08001".equals(sql.getSQLState()) || "08004".equals(sql.getSQLState()))) {
				return true;
			}
			if (t.getCause() == t) {
				break;
			}
		}
		return false;
	}

	/**
	 * Whether a failure means the connection to the server broke or could not be had, rather than that a statement
	 * was wrong: SQLSTATE class 08, the JDBC connection exception types, a connection pool that timed out, or the
	 * server codes for a killed connection or query (1927, 1317), a shutdown in progress (1053) and a lost or gone
	 * server (2006, 2013). Such a failure leaves it unknown whether the last statement committed.
	 */
	public static boolean isConnectionFailure(Throwable ex) {
		for (Throwable t = ex; t != null; t = t.getCause()) {
			if (t instanceof org.springframework.jdbc.CannotGetJdbcConnectionException
					|| t instanceof java.sql.SQLTransientConnectionException
					|| t instanceof java.sql.SQLNonTransientConnectionException
					|| t instanceof java.sql.SQLRecoverableException) {
				return true;
			}
			if (t instanceof SQLException sql) {
				String state = sql.getSQLState();
				int code = sql.getErrorCode();
				if ((state != null && state.startsWith("08")) || code == 1927 || code == 1317 || code == 1053
						|| code == 2006 || code == 2013) {
					return true;
				}
			}
			if (t.getCause() == t) {
				break;
			}
		}
		return false;
	}

}
