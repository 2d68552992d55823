package io.github.dblock.jdbc.pessimistic;

import io.github.dblock.jdbc.sql.CallDeadline;
import io.github.dblock.jdbc.sql.JdbcLockSupport;
import io.github.dblock.jdbc.sql.LockStatements;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.Semaphore;

import io.github.dblock.spi.HeldLock;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * The sessions that hold {@link PessimisticLockProvider} row locks: the held lock itself ({@link RowLock}, released by
 * {@code COMMIT} on a connection of its own, or by the caller's transaction), the idle bound of a holder's session
 * ({@link PessimisticLockProvider#setIdleTimeout}), and the slot of the connection cap a connection of its own takes.
 * Thread-safe.
 */
final class HolderSessions {

	/** The provider's logger: these messages are the provider's. */
	private static final Log logger = LogFactory.getLog(HolderSessions.class);

	private final JdbcLockSupport jdbc;

	/** The provider's cap on connections of their own: a lock on one gives its slot back at release. */
	private final Semaphore connections;

	/** The holder's session idle bound in whole seconds ({@code wait_timeout}), 0 for the server's own. */
	private volatile int idleTimeoutSeconds;

	HolderSessions(JdbcLockSupport jdbc, Semaphore connections) {
		this.jdbc = jdbc;
		this.connections = connections;
	}

	/**
	 * A lock held on {@code connection} (its own, released by {@code COMMIT}), or, for {@code null}, in the caller's
	 * transaction.
	 * @param previousReads the connection's network timeout before the acquisition bounded it, restored at release
	 */
	RowLock rowLock(@Nullable Connection connection, String owner, long token, int previousReads) {
		return new RowLock(connection, owner, token, previousReads);
	}

	/** Sets the idle bound of holders' sessions, in whole seconds (0: the server's own). */
	void setIdleTimeoutSeconds(int seconds) {
		this.idleTimeoutSeconds = seconds;
	}

	/** Applies the idle bound to a holder's session (see {@link PessimisticLockProvider#setIdleTimeout}); no statement when unset. */
	void boundIdleSession(Connection connection) throws SQLException {
		int seconds = this.idleTimeoutSeconds;
		if (seconds > 0) {
			try (PreparedStatement ps = connection.prepareStatement(LockStatements.SESSION_IDLE_BOUND)) {
				ps.setInt(1, seconds);
				ps.execute();
			}
		}
	}

	/** Gives a holder's session the server's own {@code wait_timeout} back; quiet, the connection may be broken. */
	void restoreIdleSession(@Nullable Connection connection) {
		if (connection == null || this.idleTimeoutSeconds == 0) {
			return;
		}
		try {
			execute(connection, LockStatements.SESSION_IDLE_RESTORE);
		}
		catch (SQLException ex) {
			logger.debug("Could not restore wait_timeout on a lock connection", ex);
		}
	}

	/**
	 * Applies the idle bound to the caller's transaction's session once it holds the lock, restored when the
	 * transaction completes (its connection is still bound then).
	 */
	void boundIdleSessionOfTransaction(Connection connection) {
		if (this.idleTimeoutSeconds == 0) {
			return;
		}
		try {
			boundIdleSession(connection);
		}
		catch (SQLException ex) {
			throw this.jdbc.translate("bound the idle time of the lock's transaction", ex);
		}
		org.springframework.transaction.support.TransactionSynchronizationManager.registerSynchronization(
				new org.springframework.transaction.support.TransactionSynchronization() {
					@Override
					public void afterCompletion(int status) {
						restoreIdleSession(connection);
					}
				});
	}

	static void execute(Connection connection, String sql) throws SQLException {
		try (Statement statement = connection.createStatement()) {
			statement.execute(sql);
		}
	}

	static void closeQuietly(@Nullable Connection connection, boolean rollback, int previousReads) {
		if (connection == null) {
			return;
		}
		try {
			if (rollback) {
				execute(connection, LockStatements.ROLLBACK);
			}
		}
		catch (SQLException ex) {
			// the connection is discarded below; the server ends its transaction
		}
		JdbcLockSupport.restoreReads(connection, previousReads);
		try {
			connection.close();
		}
		catch (SQLException ex) {
			logger.debug("Could not close lock connection", ex);
		}
	}

	/**
	 * A held row lock: on this provider's own connection and transaction (released by {@code COMMIT}), or, when
	 * {@code connection} is {@code null}, in a Spring-managed transaction that releases it when it ends.
	 */
	final class RowLock implements HeldLock {

		@Nullable
		private final Connection connection;

		private final String owner;

		private final long token;

		/** The network timeout of {@link #connection} before the acquisition bounded it, restored at release. */
		private final int previousReads;

		RowLock(@Nullable Connection connection, String owner, long token, int previousReads) {
			this.connection = connection;
			this.owner = owner;
			this.token = token;
			this.previousReads = previousReads;
		}

		@Override
		public long fencingToken() {
			return this.token;
		}

		@Override
		public String ownerToken() {
			return this.owner;
		}

		@Override
		public long validUntilNanos() {
			return Long.MAX_VALUE;
		}

		@Override
		public boolean isTransactionBound() {
			return this.connection == null;
		}

		@Override
		public boolean release() {
			if (this.connection == null) {
				return true;
			}
			try {
				// the release's replies (the COMMIT's, the idle bound's restore) come within one deadline: the
				// statement timeout plus the margin, not for as long as the network stays silent
				CallDeadline deadline = HolderSessions.this.jdbc.callDeadline();
				deadline.boundReads(this.connection);
				execute(this.connection, LockStatements.COMMIT);
				deadline.boundReads(this.connection);
				restoreIdleSession(this.connection);
				closeQuietly(this.connection, false, this.previousReads);
				return true;
			}
			catch (SQLException ex) {
				// The connection failed while the lock was held: the server ended the transaction when it noticed,
				// so another owner may have taken the lock since.
				logger.warn("Pessimistic lock connection failed before release; the lock was lost", ex);
				closeQuietly(this.connection, false, this.previousReads);
				return false;
			}
			finally {
				HolderSessions.this.connections.release();
			}
		}

	}

}
