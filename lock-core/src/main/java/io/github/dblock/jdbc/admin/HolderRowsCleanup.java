package io.github.dblock.jdbc.admin;

import io.github.dblock.jdbc.sql.JdbcLockSupport;
import io.github.dblock.jdbc.sql.SqlErrors;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

/**
 * The clean-up of the holder tables beside a lock table ({@code <table>_rw_hold}, {@code <table>_sem_hold}) for
 * {@code LockTableCleaner}: expired holder rows, deleted by primary key in batches, each delete re-checking the expiry.
 * Thread-safe.
 */
final class HolderRowsCleanup {

	/** This class's own logger. */
	private static final Log logger = LogFactory.getLog(HolderRowsCleanup.class);

	private final JdbcLockSupport jdbc;

	/** The lock table's name, for messages. */
	private final String table;

	private final int batchSize;

	/** The most batches one call deletes. */
	private final int maxBatches;

	HolderRowsCleanup(JdbcLockSupport jdbc, String table, int batchSize, int maxBatches) {
		this.jdbc = jdbc;
		this.table = table;
		this.batchSize = batchSize;
		this.maxBatches = maxBatches;
	}

	/**
	 * Deletes expired rows of a holder table in batches: {@code candidatesSql} reads at most {@code batchSize} keys
	 * (bind parameter 1) on an index, without locking; {@code deleteSql} deletes one of them by primary key, its key
	 * columns bound in the same order, re-checking the expiry. A missing table, or one the user has no grant on,
	 * counts as nothing to delete.
	 * @return how many rows were deleted
	 */
	int deleteExpiredKeys(String what, String candidatesSql, String deleteSql) {
		int deleted = 0;
		for (int batch = 0; batch < this.maxBatches && !Thread.currentThread().isInterrupted(); batch++) {
			int[] result = this.jdbc.execute("delete expired " + what + " beside " + this.table,
					(connection) -> deleteKeyBatch(connection, what, candidatesSql, deleteSql));
			deleted += result[1];
			if (result[0] < this.batchSize || result[1] == 0) {
				break;
			}
		}
		return deleted;
	}

	/** One batch of {@link #deleteExpiredKeys}: {candidates, deleted}. */
	private int[] deleteKeyBatch(Connection connection, String what, String candidatesSql, String deleteSql)
			throws SQLException {
		int timeout = this.jdbc.statementTimeoutSeconds();
		List<Object[]> keys = new ArrayList<>();
		try (PreparedStatement ps = connection.prepareStatement(candidatesSql)) {
			ps.setQueryTimeout(timeout);
			ps.setInt(1, this.batchSize);
			try (ResultSet rs = ps.executeQuery()) {
				int columns = rs.getMetaData().getColumnCount();
				while (rs.next()) {
					Object[] key = new Object[columns];
					for (int i = 0; i < columns; i++) {
						key[i] = rs.getObject(i + 1);
					}
					keys.add(key);
				}
			}
			JdbcLockSupport.commitIfNeeded(connection);
		}
		catch (SQLException ex) {
			if (SqlErrors.classify(ex) == SqlErrors.Kind.NO_TABLE) {
				logger.debug("No table of " + what + " beside " + this.table + ", or no grant on it; "
						+ "nothing to clean there: " + ex.getMessage());
				return new int[] { 0, 0 };
			}
			throw ex;
		}
		if (keys.isEmpty()) {
			return new int[] { 0, 0 };
		}
		int deleted = 0;
		try (PreparedStatement ps = connection.prepareStatement(deleteSql)) {
			ps.setQueryTimeout(timeout);
			for (Object[] key : keys) {
				for (int i = 0; i < key.length; i++) {
					ps.setObject(i + 1, key[i]);
				}
				ps.addBatch();
			}
			for (int count : ps.executeBatch()) {
				// a driver that cannot tell (SUCCESS_NO_INFO) deleted it as far as we know
				deleted += (count == Statement.SUCCESS_NO_INFO) ? 1 : Math.max(0, count);
			}
			JdbcLockSupport.commitIfNeeded(connection);
		}
		return new int[] { keys.size(), deleted };
	}

}
