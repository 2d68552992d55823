package io.github.dblock.jdbc.admin;

import io.github.dblock.jdbc.sql.CleanupStatements;
import io.github.dblock.jdbc.sql.JdbcLockSupport;
import io.github.dblock.jdbc.sql.KnownRows;
import io.github.dblock.jdbc.sql.LockStatements;
import io.github.dblock.jdbc.sql.LockTable;
import io.github.dblock.jdbc.sql.SqlErrors;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * Deletes lock rows (or idempotency records) whose lease ended more than the retention ago and whose fencing token
 * the server's clock has passed by the retention, so that a table used with unique resource names does not grow
 * without bound. Rows are locked with {@code FOR UPDATE SKIP LOCKED}: a held row is neither touched nor waited for.
 * One {@link #deleteExpired()} runs at most {@value #MAX_BATCHES_PER_RUN} batches of short transactions, each
 * statement bounded by the statement timeout. The retention (at least {@linkplain #MIN_RETENTION a second}) must stay
 * far above any step back of the server's clock. Thread-safe; runs on the caller's thread. See docs/DESIGN.md,
 * "Cleanup of stale rows".
 */
public class LockTableCleaner {

	/**
	 * The shortest accepted retention: one second. Fencing tokens stay increasing at any retention (see the class
	 * comment); a short one narrows the server clock step back they tolerate, and below a minute it can delete a row
	 * a provider still remembers.
	 */
	public static final Duration MIN_RETENTION = Duration.ofSeconds(1);

	/** The longest accepted retention: a cutoff before year 1000 would be outside {@code DATETIME}'s range. */
	public static final Duration MAX_RETENTION = Duration.ofDays(36_500);

	/** The largest accepted batch size. */
	public static final int MAX_BATCH_SIZE = 10_000;

	/** At most this many batches run in one call of {@link #deleteExpired()}. */
	public static final int MAX_BATCHES_PER_RUN = 100;

	/** At most this many keys are locked and deleted by one statement (and one transaction). */
	public static final int MAX_KEYS_PER_STATEMENT = 500;

	private static final Log logger = LogFactory.getLog(LockTableCleaner.class);

	private final JdbcLockSupport jdbc;

	/** The table cleaned, for messages. */
	private final String table;

	private final long retentionMicros;

	private final int batchSize;

	/** The expired rows of the holder tables beside the lock table. */
	private final HolderRowsCleanup holderRows;

	/** Every statement (each with the driver's query timeout: the dialect does not matter here). */
	private final LockStatements sql;

	/** The statements of what this cleaner deletes: expired lock rows, or idempotency records. */
	private final CleanupStatements.Cleanup cleanup;

	@Nullable
	private final LockTable holderBase;

	/**
	 * Creates a cleaner.
	 * @param dataSource the data source holding the lock table; a {@code TransactionAwareDataSourceProxy} is
	 * unwrapped
	 * @param table the lock table
	 * @param retention how long after its lease ended (its {@code expires_at}, server clock) a row may be deleted,
	 * and how far below the server clock in µs its fencing token must be; at least {@link #MIN_RETENTION one second},
	 * at most {@link #MAX_RETENTION}; microsecond resolution
	 * @param batchSize how many rows one batch deletes at most, 1 to {@value #MAX_BATCH_SIZE}
	 * @param statementTimeout the query timeout of every statement, positive (JDBC resolution: whole seconds,
	 * rounded up)
	 * @throws IllegalArgumentException if an argument is null or out of range
	 */
	public LockTableCleaner(DataSource dataSource, LockTable table, Duration retention, int batchSize,
			Duration statementTimeout) {
		this(checked(dataSource, table, retention, batchSize, statementTimeout), "lock table " + table, table, false,
				TimeUnit.SECONDS.toMicros(retention.getSeconds()) + TimeUnit.NANOSECONDS.toMicros(retention.getNano()),
				batchSize, statementTimeout, table);
	}

	/** Checks the public constructor's arguments; returns the data source. */
	private static DataSource checked(DataSource dataSource, LockTable table, Duration retention, int batchSize,
			Duration statementTimeout) {
		if (dataSource == null || table == null) {
			throw new IllegalArgumentException("dataSource and table must not be null");
		}
		if (retention == null || retention.compareTo(MIN_RETENTION) < 0) {
			throw new IllegalArgumentException("lock table cleanup retention must be at least " + MIN_RETENTION
					+ ", was " + retention + ": a row is deleted once its lease ended and its fencing token is behind "
					+ "the server's clock by the retention, because a row created again starts its token at the clock; "
					+ "keep it far longer than any step the database server's clock may take backwards, and than the "
					+ TimeUnit.NANOSECONDS.toMinutes(KnownRows.TTL_NANOS) + " minute for which lock providers "
					+ "remember that a row exists");
		}
		if (retention.compareTo(MAX_RETENTION) > 0) {
			throw new IllegalArgumentException("lock table cleanup retention must be at most " + MAX_RETENTION
					+ " (about 100 years), was " + retention);
		}
		if (batchSize < 1 || batchSize > MAX_BATCH_SIZE) {
			throw new IllegalArgumentException("lock table cleanup batch size must be between 1 and " + MAX_BATCH_SIZE
					+ ", was " + batchSize);
		}
		if (statementTimeout == null || statementTimeout.isNegative() || statementTimeout.isZero()) {
			throw new IllegalArgumentException("lock table cleanup statement timeout must be positive, was "
					+ statementTimeout);
		}
		return dataSource;
	}

	private LockTableCleaner(DataSource dataSource, String table, LockTable lockTable, boolean idempotencyRecords,
			long retentionMicros, int batchSize, Duration statementTimeout, @Nullable LockTable holderBase) {
		this.jdbc = new JdbcLockSupport(dataSource, statementTimeout);
		this.table = table;
		this.sql = LockStatements.of(lockTable, null);
		this.cleanup = idempotencyRecords ? this.sql.cleanup.idempotencyCleanup : this.sql.cleanup.lockCleanup;
		this.retentionMicros = retentionMicros;
		this.batchSize = batchSize;
		this.holderRows = new HolderRowsCleanup(this.jdbc, table, batchSize, MAX_BATCHES_PER_RUN);
		this.holderBase = holderBase;
	}

	/**
	 * A cleaner of the idempotency records of a lock table ({@code <table>_idem}, see {@code IdempotencyStore}): it
	 * deletes records past their {@code retain_until} (each record's own retention, server clock), except a
	 * {@code RUNNING} one whose running lease has not ended and one whose fencing token is not below the server clock
	 * in µs (a claim after the delete starts its token at the clock), with the same algorithm as the lock table's
	 * cleaner, on
	 * the {@code retain_until} index. A missing records table (migrations switched off and V4 not applied) is
	 * skipped with a debug log.
	 * @param batchSize how many records one batch deletes at most, 1 to {@value #MAX_BATCH_SIZE}
	 * @param statementTimeout the query timeout of every statement, positive
	 * @throws IllegalArgumentException if an argument is null or out of range
	 */
	public static LockTableCleaner forIdempotencyRecords(DataSource dataSource, LockTable table, int batchSize,
			Duration statementTimeout) {
		return new LockTableCleaner(checked(dataSource, table, MIN_RETENTION, batchSize, statementTimeout),
				"idempotency records " + table.name() + LockTable.IDEMPOTENCY_SUFFIX, table, true, 0, batchSize,
				statementTimeout, null);
	}

	/**
	 * Deletes the holder rows of read/write locks ({@code <table>_rw_hold}) whose lease has ended: crashed or lost
	 * holders. Such a row counts for nothing any more (acquisitions ignore expired rows, renewal and release never
	 * bring one back), so no retention applies. At most {@value #MAX_BATCHES_PER_RUN} batches of {@code batchSize}:
	 * each a plain read of the oldest expired keys through the {@code expires_at} index ({@code SELECT resource,
	 * owner_token ... WHERE expires_at < UTC_TIMESTAMP(6) ORDER BY expires_at LIMIT ?}), then one autocommit
	 * {@code DELETE} by primary key per row, re-checking the expiry (sent as one JDBC batch). The per-resource
	 * {@code <table>_rw} rows are never deleted: they carry the fencing token counter. A missing
	 * {@code <table>_rw_hold} table (migrations switched off and the read/write tables not created), or one the user
	 * has no grant on (a user set up before read/write locks existed, who does not use them), deletes nothing.
	 * @return how many rows this call deleted
	 * @throws org.springframework.dao.DataAccessException if the database fails
	 */
	public int deleteExpiredReadWriteHolds() {
		if (this.holderBase == null) {
			return 0;
		}
		return this.holderRows.deleteExpiredKeys("read/write holders", this.sql.cleanup.cleanRwHolds, this.sql.cleanup.cleanRwHold);
	}

	/**
	 * Deletes rows whose lease ended more than the retention ago (see docs/DESIGN.md, "Cleanup of stale rows"), at
	 * most {@value #MAX_BATCHES_PER_RUN} batches of {@code batchSize} rows. Rows locked by another transaction
	 * are skipped and left for a later call. Stops early, keeping the interrupt flag, if the calling thread is
	 * interrupted between batches.
	 * @return how many rows this call deleted
	 * @throws org.springframework.dao.DataAccessException if the database fails (other than a lock wait or query
	 * timeout, which ends the call with the rows deleted so far, and deadlocks, which are retried)
	 */
	public int deleteExpired() {
		int deleted = 0;
		for (int batch = 0; batch < MAX_BATCHES_PER_RUN; batch++) {
			if (Thread.currentThread().isInterrupted()) {
				break;
			}
			Batch result;
			try {
				result = this.jdbc.execute("delete expired rows of " + this.table, this::runBatch);
			}
			catch (org.springframework.dao.DataAccessException ex) {
				// the lock table itself must exist; an optional feature's table may be missing or not granted
				if (this.holderBase != null || !SqlErrors.isMissingTable(ex.getMostSpecificCause(), true)) {
					throw ex;
				}
				logger.debug("No " + this.table + " table to clean, or no grant on it: "
						+ ex.getMostSpecificCause().getMessage());
				break;
			}
			deleted += result.deleted;
			if (result.timedOut) {
				logger.info("Cleanup of " + this.table + " timed out in a batch; its rows are left "
						+ "for the next run");
				break;
			}
			if (result.candidates < this.batchSize || result.deleted == 0) {
				break;
			}
		}
		if (deleted > 0 && logger.isDebugEnabled()) {
			logger.debug("Deleted " + deleted + " expired rows of " + this.table);
		}
		return deleted;
	}

	private Batch runBatch(Connection connection) throws SQLException {
		int timeout = this.jdbc.statementTimeoutSeconds();
		List<byte[]> candidates;
		try {
			candidates = candidates(connection, timeout);
		}
		catch (SQLException ex) {
			if (SqlErrors.isBusy(ex)) {
				return new Batch(0, 0, true);
			}
			throw ex;
		}
		int deleted = 0;
		for (int from = 0; from < candidates.size(); from += MAX_KEYS_PER_STATEMENT) {
			List<byte[]> chunk = candidates.subList(from, Math.min(candidates.size(), from + MAX_KEYS_PER_STATEMENT));
			int chunkDeleted = deleteChunk(connection, chunk, timeout);
			if (chunkDeleted < 0) {
				return new Batch(candidates.size(), deleted, true);
			}
			deleted += chunkDeleted;
		}
		return new Batch(candidates.size(), deleted, false);
	}

	/**
	 * Step 2 for one chunk of candidates, as one transaction.
	 * @return the number of rows deleted, or -1 if a statement timed out (the transaction was rolled back)
	 */
	private int deleteChunk(Connection connection, List<byte[]> candidates, int timeout) throws SQLException {
		boolean autoCommit = connection.getAutoCommit();
		boolean ended = false;
		try {
			if (autoCommit) {
				execute(connection, LockStatements.START_TRANSACTION, timeout);
			}
			List<byte[]> locked = lockStillExpired(connection, candidates, timeout);
			int deleted = locked.isEmpty() ? 0 : delete(connection, locked, timeout);
			if (autoCommit) {
				execute(connection, LockStatements.COMMIT, timeout);
			}
			else {
				connection.commit();
			}
			ended = true;
			return deleted;
		}
		catch (SQLException ex) {
			if (SqlErrors.isBusy(ex)) {
				return -1; // rolled back below
			}
			throw ex;
		}
		finally {
			if (!ended) {
				rollbackQuietly(connection, autoCommit);
			}
		}
	}

	/**
	 * Deletes the rows of held semaphore permits ({@code <table>_sem_hold}) whose lease has ended, at most
	 * {@value #MAX_BATCHES_PER_RUN} batches of {@code batchSize} rows. No retention applies: a permit row carries no
	 * state once expired (the fencing token lives in the pool's row, which is never deleted), and its late holder's
	 * release reports the loss whether the row is expired or gone. Each batch reads candidates on the
	 * {@code expires_at} index without locking, then deletes them one by one by primary key, re-checking the expiry
	 * (autocommit statements, one row lock each). A missing semaphore table (migration {@code V3} not applied while
	 * migrations are off) counts as nothing to delete.
	 * @return how many permit rows this call deleted
	 * @throws org.springframework.dao.DataAccessException if the database fails
	 */
	public int deleteExpiredPermits() {
		if (this.holderBase == null) {
			return 0;
		}
		return this.holderRows.deleteExpiredKeys("semaphore permits", this.sql.cleanup.cleanSemHolds, this.sql.cleanup.cleanSemHold);
	}

	/** Step 1: the oldest candidates, by a plain read of the {@code expires_at} index. */
	private List<byte[]> candidates(Connection connection, int timeout) throws SQLException {
		try (PreparedStatement ps = connection.prepareStatement(this.cleanup.candidates())) {
			ps.setQueryTimeout(timeout);
			ps.setLong(1, this.retentionMicros);
			ps.setLong(2, this.retentionMicros);
			ps.setInt(3, this.batchSize);
			List<byte[]> keys = new ArrayList<>();
			try (ResultSet rs = ps.executeQuery()) {
				while (rs.next()) {
					keys.add(rs.getBytes(1));
				}
			}
			JdbcLockSupport.commitIfNeeded(connection);
			return keys;
		}
	}

	/** Step 2b: locks those candidates that are still expired and not locked by anyone else. */
	private List<byte[]> lockStillExpired(Connection connection, List<byte[]> candidates, int timeout)
			throws SQLException {
		String sql = LockStatements.withKeys(this.cleanup.lockStillExpired(), candidates.size());
		try (PreparedStatement ps = connection.prepareStatement(sql)) {
			ps.setQueryTimeout(timeout);
			int index = bindKeys(ps, candidates);
			ps.setLong(index, this.retentionMicros);
			ps.setLong(index + 1, this.retentionMicros);
			List<byte[]> keys = new ArrayList<>(candidates.size());
			try (ResultSet rs = ps.executeQuery()) {
				while (rs.next()) {
					keys.add(rs.getBytes(1));
				}
			}
			return keys;
		}
	}

	/** Step 2c: deletes the locked rows, re-checking the expiry. */
	private int delete(Connection connection, List<byte[]> locked, int timeout) throws SQLException {
		String sql = LockStatements.withKeys(this.cleanup.delete(), locked.size());
		try (PreparedStatement ps = connection.prepareStatement(sql)) {
			ps.setQueryTimeout(timeout);
			int index = bindKeys(ps, locked);
			ps.setLong(index, this.retentionMicros);
			ps.setLong(index + 1, this.retentionMicros);
			return ps.executeUpdate();
		}
	}

	/** Binds the keys from parameter 1 on; returns the next parameter index. */
	private static int bindKeys(PreparedStatement ps, List<byte[]> keys) throws SQLException {
		int index = 1;
		for (byte[] key : keys) {
			ps.setBytes(index++, key);
		}
		return index;
	}

	private static void execute(Connection connection, String sql, int timeout) throws SQLException {
		try (Statement statement = connection.createStatement()) {
			statement.setQueryTimeout(timeout);
			statement.execute(sql);
		}
	}

	/**
	 * Ends a chunk's transaction after a failure. With autocommit on, the transaction was opened by a
	 * {@code START TRANSACTION} statement, which the pool would not roll back when the connection is returned.
	 */
	private static void rollbackQuietly(Connection connection, boolean autoCommit) {
		try {
			if (autoCommit) {
				execute(connection, LockStatements.ROLLBACK, 0);
			}
			else {
				connection.rollback();
			}
		}
		catch (SQLException ex) {
			logger.debug("Could not roll back a lock table cleanup batch; the server ends its transaction when the "
					+ "connection is discarded", ex);
		}
	}

	/**
	 * The outcome of one batch.
	 * @param candidates rows found by step 1
	 * @param deleted rows deleted
	 * @param timedOut whether a statement timed out (the batch was rolled back)
	 */
	private record Batch(int candidates, int deleted, boolean timedOut) {

	}

}
