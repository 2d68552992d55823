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

	/**
	 * Bounded by the server: {@code max_statement_time} needs a constant, and the value is an int computed by this
	 * library, never user input.
	 */
	@Override
	PreparedStatement prepareBounded(Connection connection, String sql, int timeoutSeconds, boolean generatedKeys)
			throws SQLException {
		return prepare(connection, "SET STATEMENT max_statement_time=" + Math.max(1, timeoutSeconds) + " FOR " + sql,
				generatedKeys);
	}

	/** {@code SET STATEMENT} needs a constant: the value is an int computed here, never user input. */
	@Override
	<T extends @Nullable Object> T runWithLockWait(Connection connection, int waitSeconds, String sql, boolean noWait,
			boolean generatedKeys, BoundedStatement<T> action) throws SQLException {
		return runInterruptibly(connection, "SET STATEMENT innodb_lock_wait_timeout=" + waitSeconds + " FOR " + sql,
				generatedKeys, action);
	}

}
