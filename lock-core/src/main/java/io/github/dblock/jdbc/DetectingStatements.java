package io.github.dblock.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;

import org.jspecify.annotations.Nullable;

/**
 * The statements of a server family not known in advance: {@link MariaDbStatements} or {@link MySqlStatements} as
 * detected once from the first connection's metadata (the driver knows the server version from the handshake: no
 * round trip), through {@link LockDialect#of(String)}. Thread-safe: the dialect found is the same for every connection
 * of a data source.
 */
final class DetectingStatements extends LockStatements {

	private volatile @Nullable LockDialect detected;

	DetectingStatements(LockTable table) {
		super(table);
	}

	@Override
	@Nullable LockDialect dialect() {
		return this.detected;
	}

	private LockDialect detect(Connection connection) throws SQLException {
		LockDialect dialect = this.detected;
		if (dialect == null) {
			dialect = LockDialect.of(connection.getMetaData().getDatabaseProductVersion());
			this.detected = dialect;
		}
		return dialect;
	}

	@Override
	PreparedStatement prepareBounded(Connection connection, String sql, int timeoutSeconds, boolean generatedKeys)
			throws SQLException {
		return (detect(connection) == LockDialect.MARIADB)
				? MariaDbStatements.bound(connection, sql, timeoutSeconds, generatedKeys)
				: MySqlStatements.bound(connection, sql, timeoutSeconds, generatedKeys);
	}

	@Override
	<T extends @Nullable Object> T runWithLockWait(Connection connection, int waitSeconds, String sql, boolean noWait,
			boolean generatedKeys, BoundedStatement<T> action) throws SQLException {
		return (detect(connection) == LockDialect.MARIADB)
				? MariaDbStatements.withLockWait(connection, waitSeconds, sql, generatedKeys, action)
				: MySqlStatements.withLockWait(connection, waitSeconds, sql, noWait, generatedKeys, action);
	}

}
