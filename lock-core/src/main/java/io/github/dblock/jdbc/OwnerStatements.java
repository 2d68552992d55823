package io.github.dblock.jdbc;

import java.sql.PreparedStatement;

/**
 * The owner-checked statements on the row of one lease (a semaphore permit's holder row, an idempotency claim's
 * record): {@code UPDATE ... WHERE <key> = ? AND owner_token = ? ...} to renew, {@code DELETE ...} to release. One
 * short autocommit statement on a connection of its own, bounded like every statement of {@link JdbcLockSupport}.
 */
final class OwnerStatements {

	private OwnerStatements() {
	}

	/**
	 * Runs one owner-checked statement whose parameters are, in order, the new lease in microseconds (if any), the
	 * row's key and the owner token.
	 * @param deadline the call's: the pool wait and the reply end by it
	 * @param task what the statement does, for failure messages
	 * @param leaseMicros the lease to bind first, or a negative value for a statement without one
	 * @return the rows matched: 1 while the row is still the owner's, else 0
	 * @throws org.springframework.dao.DataAccessException on a database failure
	 */
	static int execute(JdbcLockSupport jdbc, CallDeadline deadline, LockStatements sql, String task, String statement,
			long leaseMicros, String resource, String ownerToken) {
		return jdbc.execute(task, deadline, (connection) -> {
			try (PreparedStatement ps = sql.prepareBounded(connection, statement, jdbc.statementTimeoutSeconds(), false)) {
				int index = 1;
				if (leaseMicros >= 0) {
					ps.setLong(index++, leaseMicros);
				}
				ps.setBytes(index++, LockRows.bytes(resource));
				ps.setString(index, ownerToken);
				int matched = ps.executeUpdate();
				JdbcLockSupport.commitIfNeeded(connection);
				return matched;
			}
		});
	}

}
