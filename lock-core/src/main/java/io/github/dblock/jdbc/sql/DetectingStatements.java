package io.github.dblock.jdbc.sql;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;

import org.jspecify.annotations.Nullable;

/**
 * The statements of a server family not known in advance: {@link MariaDbStatements} or {@link MySqlStatements} as
 * detected once from the first connection's metadata (the driver knows the server version from the handshake: no
 * round trip), through {@link LockDialect#of(String)}, and then used for every statement. Thread-safe: the dialect
 * found is the same for every connection of a data source.
 */
final class DetectingStatements extends LockStatements {

	/** The statements of the family found, once a connection was seen. */
	private volatile @Nullable LockStatements detected;

	DetectingStatements(LockTable table) {
		super(table);
	}

	@Override
	public @Nullable LockDialect dialect() {
		LockStatements found = this.detected;
		return (found != null) ? found.dialect() : null;
	}

	private LockStatements detect(Connection connection) throws SQLException {
		LockStatements found = this.detected;
		if (found == null) {
			found = LockStatements.of(table(), LockDialect.of(connection.getMetaData().getDatabaseProductVersion()));
			this.detected = found;
		}
		return found;
	}

	@Override
	public PreparedStatement prepareBounded(Connection connection, String sql, int timeoutSeconds, boolean generatedKeys)
			throws SQLException {
		return detect(connection).prepareBounded(connection, sql, timeoutSeconds, generatedKeys);
	}

	@Override
	public PreparedStatement prepareInTransaction(Connection connection, String sql, int timeoutSeconds, boolean generatedKeys)
			throws SQLException {
		return detect(connection).prepareInTransaction(connection, sql, timeoutSeconds, generatedKeys);
	}

	@Override
	public <T extends @Nullable Object> T runWithLockWait(Connection connection, int waitSeconds, String sql, boolean noWait,
			boolean generatedKeys, BoundedStatement<T> action) throws SQLException {
		return detect(connection).runWithLockWait(connection, waitSeconds, sql, noWait, generatedKeys, action);
	}

}
