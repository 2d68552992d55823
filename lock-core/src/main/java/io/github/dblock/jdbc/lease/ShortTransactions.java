package io.github.dblock.jdbc.lease;

import io.github.dblock.jdbc.sql.JdbcLockSupport;
import io.github.dblock.jdbc.sql.LockStatements;
import java.sql.Connection;
import java.sql.SQLException;

import org.jspecify.annotations.Nullable;

/**
 * Short transactions of lock statements on a connection of their own: begun with {@code START TRANSACTION} on an
 * autocommit connection (one round trip, where switching autocommit off and on costs two), ended with {@code COMMIT}
 * or {@code ROLLBACK}; bounded by the connection's network timeout only. Stateless and thread-safe.
 */
final class ShortTransactions {

	private ShortTransactions() {
	}

	/**
	 * Runs work as one short transaction on the connection: on an autocommit connection between
	 * {@code START TRANSACTION} and {@code COMMIT} statements (one round trip each, where switching autocommit off and
	 * on again would cost one more), otherwise with the connection's own commit; rolled back when the work throws.
	 * The transaction's own statements are bounded by the network timeout only (see {@link #transactionControl}).
	 */
	static <T extends @Nullable Object> T inShortTransaction(Connection connection, JdbcLockSupport.ConnectionWork<T> work)
			throws SQLException {
		boolean autoCommit = connection.getAutoCommit();
		if (autoCommit) {
			transactionControl(connection, LockStatements.START_TRANSACTION);
		}
		boolean ended = false;
		try {
			T result = work.run(connection);
			endTransaction(connection, autoCommit, true);
			ended = true;
			return result;
		}
		finally {
			if (!ended) {
				try {
					endTransaction(connection, autoCommit, false);
				}
				catch (SQLException ignored) {
					// the original failure is reported; the server ends the transaction with the connection
				}
			}
		}
	}

	/**
	 * Ends a transaction begun by {@code START TRANSACTION} on an autocommit connection ({@code autoCommit} true:
	 * a {@code COMMIT} or {@code ROLLBACK} statement, see {@link #transactionControl}), or through the connection
	 * otherwise.
	 */
	static void endTransaction(Connection connection, boolean autoCommit, boolean commit) throws SQLException {
		if (autoCommit) {
			transactionControl(connection, commit ? LockStatements.COMMIT : LockStatements.ROLLBACK);
		}
		else if (commit) {
			connection.commit();
		}
		else {
			connection.rollback();
		}
	}

	/**
	 * Executes {@code START TRANSACTION}, {@code COMMIT} or {@code ROLLBACK}, bounded by the connection's network
	 * timeout (the call's deadline) and by no query timeout: the server runs them at once, and Connector/J's query
	 * timeout cancels with {@code KILL QUERY} over a new connection that the statement waits for; on a silent
	 * network that connection's handshake waits for a network timeout of its own, so a query timeout shorter than
	 * the reply bound would push the call past its deadline (measured: by the query timeout, 1 s).
	 */
	static void transactionControl(Connection connection, String sql) throws SQLException {
		try (java.sql.Statement statement = connection.createStatement()) {
			statement.execute(sql);
		}
	}

}
