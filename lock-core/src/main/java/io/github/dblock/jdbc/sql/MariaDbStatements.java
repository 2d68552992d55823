package io.github.dblock.jdbc.sql;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

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

	/** The timeouts, in seconds, whose bounded statement texts are kept ({@link #bounded}). */
	private static final int KEPT_TIMEOUTS = 64;

	/** The statements whose bounded texts are kept at most; past it a text is built per call. */
	private static final int KEPT_STATEMENTS = 256;

	/**
	 * Per statement text, its bounded texts by timeout in seconds, each built once: the same {@code String} for every
	 * call, so neither this library nor the driver's statement cache builds or hashes it again.
	 */
	private final Map<String, String[]> boundedTexts = new ConcurrentHashMap<>();

	/** Whether the server of a version has {@code innodb_snapshot_isolation}; {@code null} until asked. */
	private volatile @Nullable SnapshotIsolation snapshotIsolation;

	MariaDbStatements(LockTable table) {
		super(table);
	}

	@Override
	public LockDialect dialect() {
		return LockDialect.MARIADB;
	}

	/**
	 * Bounded by the server: {@code max_statement_time} needs a constant, and the value is an int computed by this
	 * library, never user input.
	 */
	@Override
	public PreparedStatement prepareBounded(Connection connection, String sql, int timeoutSeconds, boolean generatedKeys)
			throws SQLException {
		return prepare(connection, bounded(sql, Math.max(1, timeoutSeconds)), generatedKeys);
	}

	/** {@code SET STATEMENT max_statement_time=n FOR sql}, kept for small timeouts and a bounded number of texts. */
	String bounded(String sql, int timeoutSeconds) {
		String[] texts = this.boundedTexts.get(sql);
		if (texts == null && timeoutSeconds <= KEPT_TIMEOUTS && this.boundedTexts.size() < KEPT_STATEMENTS) {
			texts = this.boundedTexts.computeIfAbsent(sql, (key) -> new String[KEPT_TIMEOUTS + 1]);
		}
		if (texts == null || timeoutSeconds > KEPT_TIMEOUTS) {
			return "SET STATEMENT max_statement_time=" + timeoutSeconds + " FOR " + sql;
		}
		String text = texts[timeoutSeconds];
		if (text == null) {
			// a race builds the same text twice; a String is safely published through the array
			text = "SET STATEMENT max_statement_time=" + timeoutSeconds + " FOR " + sql;
			texts[timeoutSeconds] = text;
		}
		return text;
	}

	@Override
	public PreparedStatement prepareInTransaction(Connection connection, String sql, int timeoutSeconds, boolean generatedKeys)
			throws SQLException {
		return prepare(connection, "SET STATEMENT max_statement_time=" + Math.max(1, timeoutSeconds)
				+ snapshotIsolationOff(connection) + " FOR " + sql, generatedKeys);
	}

	/** {@code SET STATEMENT} needs a constant: the value is an int computed here, never user input. */
	@Override
	public <T extends @Nullable Object> T runWithLockWait(Connection connection, int waitSeconds, String sql, boolean noWait,
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
