package io.github.dblock.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;

import org.jspecify.annotations.Nullable;

/**
 * What is sent to MariaDB 10.6+: every statement of {@link LockStatements} (the shared text), bounded by the server
 * as this class says; together the two files are everything this library sends to MariaDB. A statement is bounded in
 * time by {@code SET STATEMENT max_statement_time = n FOR ...} (error 1969 when it ends the statement), a row-lock wait
 * by {@code SET STATEMENT innodb_lock_wait_timeout = n FOR ...} ({@code n = 0} fails at once), and the replication
 * sources are read with {@code SHOW ALL SLAVES STATUS}. Immutable and thread-safe.
 */
final class MariaDbStatements extends LockStatements {

	/** Every replication connection of a multi-source replica. */
	static final String REPLICA_STATUS = "SHOW ALL SLAVES STATUS";

	MariaDbStatements(LockTable table) {
		super(table);
	}

	@Override
	LockDialect dialect() {
		return LockDialect.MARIADB;
	}

	@Override
	PreparedStatement prepareBounded(Connection connection, String sql, int timeoutSeconds, boolean generatedKeys)
			throws SQLException {
		return bound(connection, sql, timeoutSeconds, generatedKeys);
	}

	static PreparedStatement bound(Connection connection, String sql, int timeoutSeconds, boolean generatedKeys)
			throws SQLException {
		// a constant is required here: the value is an int computed by this library, never user input
		return prepare(connection, "SET STATEMENT max_statement_time=" + Math.max(1, timeoutSeconds) + " FOR " + sql,
				generatedKeys);
	}

	@Override
	<T extends @Nullable Object> T runWithLockWait(Connection connection, int waitSeconds, String sql, boolean noWait,
			boolean generatedKeys, BoundedStatement<T> action) throws SQLException {
		return withLockWait(connection, waitSeconds, sql, generatedKeys, action);
	}

	static <T extends @Nullable Object> T withLockWait(Connection connection, int waitSeconds, String sql,
			boolean generatedKeys, BoundedStatement<T> action) throws SQLException {
		// SET STATEMENT needs a constant: the value is an int computed here, never user input
		return runInterruptibly(connection, "SET STATEMENT innodb_lock_wait_timeout=" + waitSeconds + " FOR " + sql,
				generatedKeys, action);
	}

}
