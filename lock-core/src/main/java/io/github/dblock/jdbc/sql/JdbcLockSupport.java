package io.github.dblock.jdbc.sql;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import org.jspecify.annotations.Nullable;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;
import org.springframework.jdbc.support.SQLErrorCodeSQLExceptionTranslator;
import org.springframework.jdbc.support.SQLExceptionTranslator;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Connection handling shared by the JDBC lock providers: every lock statement runs on a connection taken
 * directly from the lock {@link DataSource} (never the one bound to the caller's Spring transaction), as its
 * own transaction, with a query timeout; transient errors (deadlock 1213, lock wait timeout 1205, SQLSTATE
 * 40001) are retried a bounded number of times; every other error is translated to a
 * {@link DataAccessException}.
 * <p>
 * Bounds that hold whatever the network does: each call has one {@link CallDeadline}, fixed at its start
 * ({@link #acquisitionDeadline}, {@link #callDeadline}), which bounds its waits for a pooled connection (see
 * {@link BoundedConnections}), its retries, and every read of a reply on the client through the connection's network
 * timeout ({@link Connection#setNetworkTimeout}, the driver's socket read timeout): at most one statement timeout plus
 * {@link #NETWORK_MARGIN_MILLIS} per statement, and never past the deadline. A server-side bound ({@code max_statement_time}) or the driver's query timeout
 * (which Connector/J enforces with {@code KILL QUERY} over another connection) ends a statement that runs too long,
 * but neither ends a read whose reply never comes (a silent peer, a dropped route); the network timeout does, the
 * driver then closes the connection and the pool evicts it. The previous network timeout is restored before the
 * connection goes back to the pool.
 * <p>
 * Internal machinery of the JDBC engine, public only so that the other {@code io.github.dblock.jdbc} packages
 * can use it: not API, may change in any release.
 */
public final class JdbcLockSupport {

	/** How often one operation is retried after a deadlock or lock wait timeout before the error surfaces. */
	public static final int MAX_TRANSIENT_RETRIES = 8;

	/**
	 * How much longer than a statement's own timeout the client waits for its reply before it counts the connection
	 * as dead: 2 s, room for the server's own timeout to answer first.
	 */
	public static final int NETWORK_MARGIN_MILLIS = 2_000;

	/** Runs the driver's network timeout change on the calling thread (Connector/J only sets a socket option). */
	private static final java.util.concurrent.Executor DIRECT = Runnable::run;

	private final DataSource dataSource;

	private final int statementTimeoutSeconds;

	private final SQLExceptionTranslator translator;

	public JdbcLockSupport(DataSource dataSource, Duration statementTimeout) {
		this.dataSource = unwrap(dataSource);
		this.statementTimeoutSeconds = (int) Math.max(1, Math.min(Integer.MAX_VALUE, ceilSeconds(statementTimeout)));
		this.translator = new SQLErrorCodeSQLExceptionTranslator(this.dataSource);
	}

	/**
	 * The data source behind any {@code TransactionAwareDataSourceProxy}: the one a {@code DataSourceTransactionManager}
	 * binds its connection to, and one that never hands out the caller's transactional connection.
	 */
	public static DataSource unwrap(DataSource dataSource) {
		// A transaction-aware proxy would hand out the caller's transactional connection.
		DataSource current = dataSource;
		while (current instanceof TransactionAwareDataSourceProxy proxy && proxy.getTargetDataSource() != null) {
			current = proxy.getTargetDataSource();
		}
		return current;
	}

	private static long ceilSeconds(Duration duration) {
		long seconds = duration.getSeconds();
		return (duration.getNano() > 0) ? seconds + 1 : seconds;
	}

	/**
	 * The query timeout for a statement of an acquisition with the given time left: the time left rounded up
	 * to whole seconds (JDBC's unit), at least one second and at most the configured statement timeout.
	 */
	public int queryTimeoutSeconds(long remainingNanos) {
		long seconds = (remainingNanos + TimeUnit.SECONDS.toNanos(1) - 1) / TimeUnit.SECONDS.toNanos(1);
		return (int) Math.max(1, Math.min(seconds, this.statementTimeoutSeconds));
	}

	public int statementTimeoutSeconds() {
		return this.statementTimeoutSeconds;
	}

	/** The network timeout, in milliseconds, for a connection whose longest statement has the given timeout. */
	static int networkTimeoutMillis(int statementTimeoutSeconds) {
		return (int) Math.min(Integer.MAX_VALUE, statementTimeoutSeconds * 1_000L + NETWORK_MARGIN_MILLIS);
	}

	/**
	 * Bounds every read on the connection to the given statement timeout plus {@link #NETWORK_MARGIN_MILLIS}.
	 * @return the connection's previous network timeout, for {@link #restoreReads}
	 */
	public static int boundReads(Connection connection, int statementTimeoutSeconds) throws SQLException {
		int previous = connection.getNetworkTimeout();
		connection.setNetworkTimeout(DIRECT, networkTimeoutMillis(statementTimeoutSeconds));
		return previous;
	}

	/**
	 * The deadline of an acquisition whose caller waits until {@code deadlineNanos} (a {@link System#nanoTime()}
	 * value fixed when the call started): that point plus one statement timeout plus {@link #NETWORK_MARGIN_MILLIS}.
	 * Its attempts start until {@code deadlineNanos}; the last one, its pool wait, replies and a last look for an
	 * unacknowledged grant end by this deadline.
	 */
	public CallDeadline acquisitionDeadline(long deadlineNanos) {
		return new CallDeadline(deadlineNanos + statementReplyNanos(), statementReplyNanos());
	}

	/** The deadline of an acquisition for the request: see {@link #acquisitionDeadline(long)}. */
	public CallDeadline acquisitionDeadline(io.github.dblock.spi.LockRequest request) {
		return acquisitionDeadline(request.deadlineNanos());
	}

	/**
	 * The deadline of a call that runs statements without waiting for a lock (a release, a renewal, a read), starting
	 * now: one statement timeout plus {@link #NETWORK_MARGIN_MILLIS}, its pool wait and any retry included.
	 */
	public CallDeadline callDeadline() {
		return new CallDeadline(System.nanoTime() + statementReplyNanos(), statementReplyNanos());
	}

	/** One statement timeout plus {@link #NETWORK_MARGIN_MILLIS}, in nanoseconds. */
	private long statementReplyNanos() {
		return TimeUnit.MILLISECONDS.toNanos(networkTimeoutMillis(this.statementTimeoutSeconds));
	}

	/** Puts back a connection's autocommit; a connection that broke meanwhile is discarded by the pool instead. */
	public static void restoreAutoCommit(Connection connection, boolean autoCommit) {
		try {
			if (!connection.isClosed()) {
				connection.setAutoCommit(autoCommit);
			}
		}
		catch (SQLException ex) {
			// the statement's own failure, if any, is the one reported
		}
	}

	/** Restores the network timeout {@link #boundReads} replaced, unless the connection is closed by now. */
	public static void restoreReads(@Nullable Connection connection, int previous) {
		if (connection == null) {
			return;
		}
		try {
			if (!connection.isClosed()) {
				connection.setNetworkTimeout(DIRECT, previous);
			}
		}
		catch (SQLException ex) {
			// a broken connection is discarded by the pool; nothing to restore
		}
	}

	/**
	 * Runs work on a fresh connection of the lock data source within a {@link #callDeadline()} of its own. If the pool
	 * hands out connections with autocommit off, each statement is committed by {@link #commitIfNeeded(Connection)}.
	 */
	public <T extends @Nullable Object> T execute(String task, ConnectionWork<T> work) {
		return execute(task, callDeadline(), work);
	}

	/**
	 * Runs work on a fresh connection of the lock data source, taken within the call's deadline less the reply margin
	 * (at most the pool's own timeout); every read on it is bounded by the statement timeout plus
	 * {@link #NETWORK_MARGIN_MILLIS} and by the deadline. A deadlock or lock wait timeout is retried on a new
	 * connection while the deadline has not passed.
	 */
	public <T extends @Nullable Object> T execute(String task, CallDeadline deadline, ConnectionWork<T> work) {
		int transientFailures = 0;
		while (true) {
			try (Connection connection = connection(task, deadline.connectionWaitNanos())) {
				int previous = connection.getNetworkTimeout();
				deadline.boundReads(connection);
				try {
					return work.run(connection);
				}
				catch (SQLException ex) {
					rollbackQuietly(connection);
					throw onClosedConnection(connection, ex);
				}
				catch (RuntimeException ex) {
					rollbackQuietly(connection);
					throw ex;
				}
				finally {
					restoreReads(connection, previous);
				}
			}
			catch (SQLException ex) {
				if (SqlErrors.isTransient(ex) && transientFailures++ < MAX_TRANSIENT_RETRIES && !deadline.passed()) {
					pauseBeforeRetry(transientFailures);
					continue;
				}
				throw translate(task, ex);
			}
		}
	}

	/**
	 * A connection for {@link #execute}; a failure to get one (nothing was sent) is a
	 * {@link org.springframework.jdbc.CannotGetJdbcConnectionException} naming the pool's reason, so that callers can
	 * tell it from a statement whose outcome is unknown.
	 */
	private Connection connection(String task, long connectionTimeoutNanos) {
		try {
			return BoundedConnections.get(this.dataSource, connectionTimeoutNanos);
		}
		catch (SQLException ex) {
			throw new org.springframework.jdbc.CannotGetJdbcConnectionException(
					"No connection to " + task + ": " + ex.getMessage(), ex);
		}
	}

	/**
	 * A connection straight from the (unwrapped) lock data source, taken within {@code connectionTimeoutNanos}; the
	 * caller bounds its reads ({@link #boundReads}), restores them and closes it.
	 */
	public Connection rawConnection(long connectionTimeoutNanos) throws SQLException {
		return BoundedConnections.get(this.dataSource, connectionTimeoutNanos);
	}

	/**
	 * A connection straight from the (unwrapped) lock data source, taken within the call's deadline less the reply
	 * margin ({@link CallDeadline#connectionWaitNanos}); the caller bounds its reads, restores them and closes it.
	 */
	public Connection rawConnection(CallDeadline deadline) throws SQLException {
		return BoundedConnections.get(this.dataSource, deadline.connectionWaitNanos());
	}

	/**
	 * The connection of an active Spring transaction on the given (not unwrapped) lock data source, if its autocommit
	 * is off, else {@code null}; the caller releases it with {@code DataSourceUtils.releaseConnection}.
	 */
	@Nullable
	public Connection boundTransactionalConnection(DataSource original) {
		if (!TransactionSynchronizationManager.isActualTransactionActive()
				|| !TransactionSynchronizationManager.isSynchronizationActive()
				|| !(TransactionSynchronizationManager.getResource(original) instanceof ConnectionHolder)) {
			return null;
		}
		try {
			Connection connection = DataSourceUtils.getConnection(original);
			if (connection.getAutoCommit()) {
				DataSourceUtils.releaseConnection(connection, original);
				return null;
			}
			return connection;
		}
		catch (SQLException ex) {
			throw translate("inspect the transaction's connection", ex);
		}
	}

	/**
	 * Translates a JDBC failure to Spring's {@link DataAccessException} hierarchy. MariaDB's snapshot-isolation
	 * conflict (1020), which Spring leaves uncategorized, becomes a
	 * {@link org.springframework.dao.PessimisticLockingFailureException}, as Spring translates a deadlock or a
	 * serialization failure: a concurrency failure whose transaction was rolled back and may be run again.
	 */
	public DataAccessException translate(String task, SQLException ex) {
		if (SqlErrors.classify(ex) == SqlErrors.Kind.SNAPSHOT_CONFLICT) {
			return new org.springframework.dao.PessimisticLockingFailureException(task + ": MariaDB's snapshot "
					+ "isolation (innodb_snapshot_isolation) found a row changed since the transaction's read view was "
					+ "created, and the server rolled the transaction back; run the transaction again (" + ex.getMessage()
					+ ")", ex);
		}
		DataAccessException translated = this.translator.translate(task, null, ex);
		return (translated != null) ? translated : new org.springframework.jdbc.UncategorizedSQLException(task, null, ex);
	}

	public static void commitIfNeeded(Connection connection) throws SQLException {
		if (!connection.getAutoCommit()) {
			connection.commit();
		}
	}

	private static void rollbackQuietly(Connection connection) {
		try {
			if (!connection.getAutoCommit()) {
				connection.rollback();
			}
		}
		catch (SQLException ignored) {
			// the original failure is reported
		}
	}

	private static void pauseBeforeRetry(int failures) {
		try {
			// 1..(2^failures) ms, jittered so that colliding transactions do not collide again
			long bound = Math.min(64, 1L << Math.min(failures, 6));
			Thread.sleep(1 + ThreadLocalRandom.current().nextLong(bound));
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	/**
	 * The failure as a {@link java.sql.SQLRecoverableException} if the connection it happened on is closed by now
	 * (a pool closes a connection it found broken, and its next use fails with a plain "connection is closed"
	 * carrying no SQLSTATE), else unchanged; so that {@link SqlErrors#isConnectionFailure} recognizes it.
	 */
	public static SQLException onClosedConnection(@Nullable Connection connection, SQLException ex) {
		if (connection == null || SqlErrors.isConnectionFailure(ex)) {
			return ex;
		}
		try {
			if (!connection.isClosed()) {
				return ex;
			}
		}
		catch (SQLException closedCheckFailed) {
			// cannot even ask: treat it as closed
		}
		return new java.sql.SQLRecoverableException(ex.getMessage(), "08003", ex.getErrorCode(), ex);
	}

	/**
	 * Whether an {@code INSERT} failed because another node inserted the key first; the connection's transaction is
	 * rolled back then if it has one (autocommit off), so the caller can go on with its next statement.
	 */
	public static boolean lostInsertRace(Connection connection, SQLException ex) throws SQLException {
		if (!SqlErrors.isDuplicateKey(ex)) {
			return false;
		}
		if (!connection.getAutoCommit()) {
			connection.rollback();
		}
		return true;
	}

	/**
	 * Runs a query prepared by {@link LockStatements#prepareBounded} and returns its rows. {@code execute()} rather than
	 * {@code executeQuery()}: Connector/J refuses the latter for a text that starts with {@code SET} (MariaDB's
	 * {@code SET STATEMENT ... FOR SELECT}), although the server returns the rows.
	 */
	public static java.sql.ResultSet query(PreparedStatement ps) throws SQLException {
		if (!ps.execute()) {
			throw new SQLException("The query returned no result set: " + ps);
		}
		return ps.getResultSet();
	}

	@FunctionalInterface
	public interface ConnectionWork<T extends @Nullable Object> {

		T run(Connection connection) throws SQLException;

	}

}
