package io.github.dblock.jdbc.lease;

import io.github.dblock.jdbc.sql.JdbcLockSupport;
import java.sql.Connection;
import java.sql.SQLException;

import javax.sql.DataSource;

import org.jspecify.annotations.Nullable;
import org.springframework.dao.DataAccessException;

/**
 * The application's transaction on the lock's data source, for commit-time validation: whether the current thread
 * runs one, a commit check run on its connection, and whether such a check must write the row (multi-primary
 * cluster). Shared by the exclusive and the write leases of a {@link LeaseLockProvider}. Thread-safe; the
 * multi-primary flag is set during configuration.
 */
final class ApplicationTransactions {

	private final JdbcLockSupport jdbc;

	/** The data source as given (not unwrapped): the key a transaction manager may bind its connection to. */
	private final DataSource dataSource;

	/** Whether commit-time validation must write the row (Galera, multi-primary group replication). */
	private volatile boolean multiPrimary;

	ApplicationTransactions(JdbcLockSupport jdbc, DataSource dataSource) {
		this.jdbc = jdbc;
		this.dataSource = dataSource;
	}

	/** Sets whether commit checks write the row (see {@link LeaseLockProvider#setMultiPrimary(boolean)}). */
	void setMultiPrimary(boolean multiPrimary) {
		this.multiPrimary = multiPrimary;
	}

	/** Whether commit checks write the row. */
	boolean isMultiPrimary() {
		return this.multiPrimary;
	}

	/**
	 * The key under which a transaction manager bound a connection of the lock's database to this thread: the data
	 * source as given, or the one behind its {@code TransactionAwareDataSourceProxy} (a
	 * {@code DataSourceTransactionManager} binds to that one); {@code null} if none is bound.
	 */
	@Nullable
	private DataSource transactionKey() {
		if (org.springframework.transaction.support.TransactionSynchronizationManager
			.getResource(this.dataSource) != null) {
			return this.dataSource;
		}
		DataSource target = JdbcLockSupport.unwrap(this.dataSource);
		return (target != this.dataSource && org.springframework.transaction.support.TransactionSynchronizationManager
			.getResource(target) != null) ? target : null;
	}

	/**
	 * Whether the current thread runs an active transaction on the lock's data source (a connection of it bound
	 * to the thread, not in autocommit). No SQL runs. Used by the commit checks of exclusive and write leases.
	 */
	boolean inTransactionOfItsDatabase() {
		DataSource key = transactionKey();
		Connection connection = (key != null) ? this.jdbc.boundTransactionalConnection(key) : null;
		if (connection == null) {
			return false; // no transaction on the lock's database, or one in autocommit
		}
		org.springframework.jdbc.datasource.DataSourceUtils.releaseConnection(connection, key);
		return true;
	}

	/**
	 * Runs a commit check on the connection of the current thread's transaction on the lock's data source.
	 * @param task what is done, for messages
	 * @param check the statements; given the connection and the statement timeout in seconds
	 * @return what the check returned
	 * @throws IllegalStateException if there is no such transaction
	 * @throws DataAccessException if a statement failed
	 */
	boolean inTransaction(String task, TransactionCheck check) {
		DataSource key = transactionKey();
		Connection connection = (key != null) ? this.jdbc.boundTransactionalConnection(key) : null;
		if (key == null || connection == null) {
			throw new IllegalStateException("No transaction on the lock data source for the commit check (" + task + ")");
		}
		try {
			return check.run(connection, this.jdbc.statementTimeoutSeconds());
		}
		catch (SQLException ex) {
			throw this.jdbc.translate(task, ex);
		}
		finally {
			org.springframework.jdbc.datasource.DataSourceUtils.releaseConnection(connection, key);
		}
	}

	/** Statements of a commit check, run on the application's transactional connection. */
	@FunctionalInterface
	interface TransactionCheck {

		/**
		 * @param connection the transaction's connection (not to be closed or committed)
		 * @param timeoutSeconds the statement timeout, in seconds
		 * @return whether the lock is still held
		 */
		boolean run(Connection connection, int timeoutSeconds) throws SQLException;

	}

}
