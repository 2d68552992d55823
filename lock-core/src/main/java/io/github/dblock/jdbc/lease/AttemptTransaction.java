package io.github.dblock.jdbc.lease;

import io.github.dblock.jdbc.sql.LockStatements;
import java.sql.Connection;
import java.sql.SQLException;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

/**
 * One attempt's transaction on a connection of its own: begun with {@code START TRANSACTION} on an autocommit
 * connection, ended with {@link #end} ({@code COMMIT} or {@code ROLLBACK}, bounded by the network timeout), and
 * rolled back quietly by {@link #rollbackUnlessEnded()} when the attempt left it open (it failed half-way). Not
 * thread-safe: one per attempt.
 */
final class AttemptTransaction {

	private static final Log logger = LogFactory.getLog(AttemptTransaction.class);

	final Connection connection;

	final boolean autoCommit;

	/** The attempt's query timeout, in whole seconds. */
	final int timeout;

	private boolean ended;

	/** @throws SQLException if the connection's autocommit mode cannot be read */
	AttemptTransaction(Connection connection, int timeout) throws SQLException {
		this.connection = connection;
		this.timeout = timeout;
		this.autoCommit = connection.getAutoCommit();
	}

	/** Begins the transaction ({@code START TRANSACTION} on an autocommit connection). */
	void begin() throws SQLException {
		if (this.autoCommit) {
			ShortTransactions.transactionControl(this.connection, LockStatements.START_TRANSACTION);
		}
	}

	/** Commits or rolls back; the transaction counts as ended once that succeeded. */
	void end(boolean commit) throws SQLException {
		ShortTransactions.endTransaction(this.connection, this.autoCommit, commit);
		this.ended = true;
	}

	/** Rolls back a transaction the attempt did not end, logging a failure (the server ends it with the connection). */
	void rollbackUnlessEnded() {
		if (this.ended) {
			return;
		}
		try {
			ShortTransactions.endTransaction(this.connection, this.autoCommit, false);
		}
		catch (SQLException ex) {
			logger.debug("Could not roll back an attempt's transaction; the server ends it when the connection is "
					+ "discarded", ex);
		}
	}

}
