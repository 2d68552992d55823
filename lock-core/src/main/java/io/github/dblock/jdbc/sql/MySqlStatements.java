package io.github.dblock.jdbc.sql;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;

import org.jspecify.annotations.Nullable;

/**
 * What is sent to MySQL 8.0+ (and any server not recognized as MariaDB): every statement of {@link LockStatements}
 * (the shared text), bounded as this class says; together the two files are everything this library sends to MySQL.
 * A statement is bounded by the driver's query timeout, since MySQL has no per-statement bound for a write
 * ({@code MAX_EXECUTION_TIME} covers {@code SELECT} only); a row-lock wait by {@code FOR UPDATE NOWAIT} for a zero wait,
 * otherwise by {@code SET SESSION innodb_lock_wait_timeout} before the statement and {@code SET SESSION
 * innodb_lock_wait_timeout = DEFAULT} after it (MySQL's {@code SET_VAR} hint does not cover InnoDB variables); the
 * replication sources are read with {@code SHOW REPLICA STATUS} (8.1+) or {@code SHOW SLAVE STATUS}. These statements
 * also run on MariaDB, which is how the tests exercise this dialect. Immutable and thread-safe.
 */
final class MySqlStatements extends LockStatements {

	/** Sets the session's row-lock wait before a waiting statement. Parameter: seconds, at least 1. */
	static final String SET_LOCK_WAIT = "SET SESSION innodb_lock_wait_timeout = ?";

	/** Gives the session the server's row-lock wait back after it. */
	static final String RESET_LOCK_WAIT = "SET SESSION innodb_lock_wait_timeout = DEFAULT";

	MySqlStatements(LockTable table) {
		super(table);
	}

	@Override
	public LockDialect dialect() {
		return LockDialect.MYSQL;
	}

	@Override
	public PreparedStatement prepareBounded(Connection connection, String sql, int timeoutSeconds, boolean generatedKeys)
			throws SQLException {
		PreparedStatement ps = prepare(connection, sql, generatedKeys);
		try {
			ps.setQueryTimeout(Math.max(1, timeoutSeconds));
		}
		catch (SQLException ex) {
			ps.close();
			throw ex;
		}
		return ps;
	}

	/** MySQL has no snapshot isolation of that kind: its locking reads and writes read the latest committed row. */
	@Override
	public PreparedStatement prepareInTransaction(Connection connection, String sql, int timeoutSeconds, boolean generatedKeys)
			throws SQLException {
		return prepareBounded(connection, sql, timeoutSeconds, generatedKeys);
	}

	@Override
	public <T extends @Nullable Object> T runWithLockWait(Connection connection, int waitSeconds, String sql, boolean noWait,
			boolean generatedKeys, BoundedStatement<T> action) throws SQLException {
		if (noWait && waitSeconds == 0) {
			return runInterruptibly(connection, sql + " NOWAIT", generatedKeys, action);
		}
		try (PreparedStatement set = connection.prepareStatement(SET_LOCK_WAIT)) {
			set.setInt(1, Math.max(1, waitSeconds));
			set.execute();
		}
		boolean ran = false;
		try {
			T result = runInterruptibly(connection, sql, generatedKeys, action);
			ran = true;
			return result;
		}
		finally {
			try (Statement reset = connection.createStatement()) {
				reset.execute(RESET_LOCK_WAIT);
			}
			catch (SQLException resetFailure) {
				if (ran) {
					throw resetFailure;
				} // otherwise the statement's own failure is the one reported
			}
		}
	}

	/** {@code SHOW REPLICA STATUS} from 8.1 on, {@code SHOW SLAVE STATUS} before. */
	public static String replicaStatus(DatabaseServer server) {
		return (server.major() > 8 || (server.major() == 8 && server.minor() > 0)) ? "SHOW REPLICA STATUS"
				: "SHOW SLAVE STATUS";
	}

}
