package io.github.dblock.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

import org.jspecify.annotations.Nullable;

/**
 * What is sent to MariaDB 10.6+: every statement of {@link LockStatements} (the shared text), bounded by the server
 * as this class says; together the two files are everything this library sends to MariaDB. A statement is bounded in
 * time by {@code SET STATEMENT max_statement_time = n FOR ...} (error 1969 when it ends the statement), a row-lock wait
 * by {@code SET STATEMENT innodb_lock_wait_timeout = n FOR ...} ({@code n = 0} fails at once), and the replication
 * sources are read with {@code SHOW ALL SLAVES STATUS}. A statement that may run in a transaction that read before it
 * ({@link #prepareInTransaction}, {@link #runWithLockWait}) also sets {@code innodb_snapshot_isolation=OFF} in its
 * {@code SET STATEMENT} on a server that has that variable (from 10.6.18 and the releases of later series since),
 * which is asked once per server version. Thread-safe; the answer is cached.
 */
final class MariaDbStatements extends LockStatements {

	/** Every replication connection of a multi-source replica. */
	static final String REPLICA_STATUS = "SHOW ALL SLAVES STATUS";

	/** Added to a {@code SET STATEMENT} list on a server that has snapshot isolation. */
	static final String SNAPSHOT_ISOLATION_OFF = ", innodb_snapshot_isolation=OFF";

	/** Whether the server of a version has {@code innodb_snapshot_isolation}; {@code null} until asked. */
	private volatile @Nullable SnapshotIsolation snapshotIsolation;

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

	@Override
	PreparedStatement prepareInTransaction(Connection connection, String sql, int timeoutSeconds, boolean generatedKeys)
			throws SQLException {
		return prepare(connection, "SET STATEMENT max_statement_time=" + Math.max(1, timeoutSeconds)
				+ snapshotIsolationOff(connection) + " FOR " + sql, generatedKeys);
	}

	/** {@code SET STATEMENT} needs a constant: the value is an int computed here, never user input. */
	@Override
	<T extends @Nullable Object> T runWithLockWait(Connection connection, int waitSeconds, String sql, boolean noWait,
			boolean generatedKeys, BoundedStatement<T> action) throws SQLException {
		return runInterruptibly(connection, "SET STATEMENT innodb_lock_wait_timeout=" + waitSeconds
				+ snapshotIsolationOff(connection) + " FOR " + sql, generatedKeys, action);
	}

	/**
	 * {@link #SNAPSHOT_ISOLATION_OFF} if the connection's server has the variable, else nothing. Asked with
	 * {@link LockTableSql#SNAPSHOT_ISOLATION_VARIABLE} (one round trip, on this connection) the first time and again
	 * whenever the server reports another version (an upgrade while the application runs); the version comes from the
	 * driver's handshake, without a round trip.
	 */
	private String snapshotIsolationOff(Connection connection) throws SQLException {
		String version = String.valueOf(connection.getMetaData().getDatabaseProductVersion());
		SnapshotIsolation known = this.snapshotIsolation;
		if (known == null || !known.serverVersion().equals(version)) {
			try (Statement statement = connection.createStatement();
					ResultSet rs = statement.executeQuery(SNAPSHOT_ISOLATION_VARIABLE)) {
				known = new SnapshotIsolation(version, rs.next());
			}
			this.snapshotIsolation = known;
		}
		return known.present() ? SNAPSHOT_ISOLATION_OFF : "";
	}

	/** Whether a server version has {@code innodb_snapshot_isolation}. */
	private record SnapshotIsolation(String serverVersion, boolean present) {
	}

}
