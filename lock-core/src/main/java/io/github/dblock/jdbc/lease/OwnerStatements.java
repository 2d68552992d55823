package io.github.dblock.jdbc.lease;

import io.github.dblock.jdbc.sql.CallDeadline;
import io.github.dblock.jdbc.sql.JdbcLockSupport;
import io.github.dblock.jdbc.sql.LockRows;
import io.github.dblock.jdbc.sql.LockStatements;
import java.sql.PreparedStatement;
import java.util.concurrent.TimeUnit;

/**
 * The owner-checked statements on the row of one lease (a semaphore permit's holder row, an idempotency claim's
 * record): {@code UPDATE ... WHERE <key> = ? AND owner_token = ? ...} to renew, {@code DELETE ...} to release. A
 * release is one short autocommit statement on a connection of its own, bounded like every statement of
 * {@link JdbcLockSupport}; a renewal is a short transaction that locks a row first ({@link #renewAfterLocking}).
 */
final class OwnerStatements {

	private OwnerStatements() {
	}

	/**
	 * Runs one owner-checked statement without a lease (a release) whose parameters are the row's key and the owner
	 * token, in autocommit.
	 * @param deadline the call's: the pool wait and the reply end by it
	 * @param task what the statement does, for failure messages
	 * @return the rows matched: 1 while the row is still the owner's, else 0
	 * @throws org.springframework.dao.DataAccessException on a database failure
	 */
	static int execute(JdbcLockSupport jdbc, CallDeadline deadline, LockStatements sql, String task, String statement,
			String resource, String ownerToken) {
		return jdbc.execute(task, deadline, (connection) -> {
			try (PreparedStatement ps = sql.prepareBounded(connection, statement, jdbc.statementTimeoutSeconds(), false)) {
				ps.setBytes(1, LockRows.bytes(resource));
				ps.setString(2, ownerToken);
				int matched = ps.executeUpdate();
				JdbcLockSupport.commitIfNeeded(connection);
				return matched;
			}
		});
	}

	/**
	 * Renews a lease in one short transaction of two statements on a connection of its own: a locking read by primary
	 * key ({@code lockStatement}, the row every acquisition of the lease locks first, so in the acquisitions' lock
	 * order), then the owner-checked {@code renewStatement}. The server fixes {@code UTC_TIMESTAMP()} when a statement
	 * starts, so the waiting is left to the first statement: the renewal then starts, and judges the lease by the
	 * server's clock, once no acquisition can be granted beside it, and a lease that ended while it waited is found
	 * ended (never extended beside a competitor granted meanwhile). Neither statement reads consistently, so the
	 * transaction has no read view and MariaDB's snapshot isolation does not apply. Each statement's timeout ends a
	 * reply margin before the deadline, and the reads are bounded by it.
	 * @param deadline the call's: the pool wait, both statements and their replies end by it
	 * @param task what the renewal does, for failure messages
	 * @param lockStatement the locking read; its one parameter is the row's key ({@code resource})
	 * @param renewStatement the owner-checked update; parameters: the new lease in microseconds, the key, the owner
	 * @param leaseMicros the new lease, counted from the server's clock when the update starts
	 * @return whether the row was still the owner's and live (and is now extended)
	 * @throws org.springframework.dao.DataAccessException on a database failure, including a wait past the deadline
	 */
	static boolean renewAfterLocking(JdbcLockSupport jdbc, CallDeadline deadline, LockStatements sql, String task,
			String lockStatement, String renewStatement, long leaseMicros, String resource, String ownerToken) {
		byte[] key = LockRows.bytes(resource);
		return jdbc.execute(task, deadline, (connection) -> ShortTransactions.inShortTransaction(connection, (c) -> {
			try (PreparedStatement ps = sql.prepareBounded(c, lockStatement, timeoutWithin(jdbc, deadline), false)) {
				ps.setBytes(1, key);
				JdbcLockSupport.query(ps).close();
			}
			deadline.boundReads(c); // what the wait for the row left of the deadline
			try (PreparedStatement ps = sql.prepareBounded(c, renewStatement, timeoutWithin(jdbc, deadline), false)) {
				ps.setLong(1, leaseMicros);
				ps.setBytes(2, key);
				ps.setString(3, ownerToken);
				return ps.executeUpdate() == 1;
			}
		}));
	}

	/**
	 * A statement timeout that ends a reply margin before the deadline: the statement timeout, or less once part of
	 * the deadline is spent (at least 1 s).
	 */
	private static int timeoutWithin(JdbcLockSupport jdbc, CallDeadline deadline) {
		return jdbc.queryTimeoutSeconds(
				deadline.remainingNanos() - TimeUnit.MILLISECONDS.toNanos(JdbcLockSupport.NETWORK_MARGIN_MILLIS));
	}

}
