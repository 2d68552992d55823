package io.github.dblock.jdbc;

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
 * Deletes lock rows whose lease ended long ago, so that a lock table used with unique resource names (order
 * numbers, idempotency keys) does not grow without bound.
 * <p>
 * A row is deleted only if its {@code expires_at} lies more than the retention before the database server's
 * {@code UTC_TIMESTAMP(6)}, and its {@code fencing_token} lies more than the retention below that clock in
 * microseconds, both checked again by the deleting statement itself, and only if no other transaction holds its row
 * lock at that moment. So a running lease (its {@code expires_at} is in the future), a
 * {@link io.github.dblock.LockMode#PESSIMISTIC PESSIMISTIC} holder's open transaction (it has the row locked,
 * and its uncommitted {@code expires_at} is recent) and an {@link io.github.dblock.LockMode#OPTIMISTIC
 * OPTIMISTIC} compare-and-set in flight are never affected.
 * <p>
 * Deleting a row does not break the fencing tokens: a row created again later starts its token at the server
 * time in microseconds ({@link LockTableSql#NEXT_TOKEN} and the insert statements; a LEASE take hands out the first of
 * a block of 1,024 that ends there). The token condition makes that start above every token the deleted row handed
 * out, at any rate of acquisitions, as long as the server clock never steps back by more than the retention (less
 * the 1,024 µs of a block): a counter that acquisitions pushed ahead of the clock keeps its row until the clock has
 * passed it by the retention. Tokens handed out without being written (PESSIMISTIC with
 * {@code Fencing.SERVER_CLOCK}) are clock readings from before the deletion, so they are below the new row's too
 * while the clock does not step back at all, which that setting assumes anyway.
 * <p>
 * The retention can be as short as {@linkplain #MIN_RETENTION a second}. Keep it far above any clock step back the
 * server may take, and above the minute for which a {@code PESSIMISTIC} or {@code OPTIMISTIC} provider remembers that
 * a row exists: a row deleted while remembered fails that provider's next acquisition inside a transaction with a
 * {@code TransientDataAccessResourceException} (retry the transaction). Spring Boot's
 * {@code distributed-lock.cleanup.retention} accepts one hour and more.
 * <p>
 * One call of {@link #deleteExpired()} runs at most {@value #MAX_BATCHES_PER_RUN} batches. Each batch:
 * <ol>
 * <li>{@code SELECT resource FROM t WHERE expires_at < UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND AND fencing_token <
 * <server µs> - ? ORDER BY expires_at LIMIT ?} ({@code batchSize}): a plain (non-locking) read in autocommit, a range
 * of the {@code expires_at} index (InnoDB secondary indexes carry the primary key) with a primary-key lookup per row
 * in it for the token. It locks nothing, so it cannot block lock operations. If it finds nothing, the call ends: a
 * run over a table with no stale row costs this one statement.</li>
 * <li>Then, for each chunk of at most {@value #MAX_KEYS_PER_STATEMENT} of these candidates, one short
 * transaction:
 * <ol type="a">
 * <li>{@code START TRANSACTION} (on a pool that hands out connections with autocommit off, the transaction
 * starts implicitly);</li>
 * <li>{@code SELECT resource FROM t FORCE INDEX (PRIMARY) WHERE resource IN (?, ...) AND expires_at < <cutoff> AND
 * fencing_token < <token cutoff> FOR UPDATE SKIP LOCKED}: locks the candidates by primary key, re-checking the
 * conditions on the latest committed version, and <em>skips</em> every row another transaction has locked (a PESSIMISTIC holder, or a lock
 * statement running right now) instead of waiting for it;</li>
 * <li>{@code DELETE t FROM t FORCE INDEX (PRIMARY) WHERE resource IN (?, ...) AND expires_at < <cutoff> AND
 * fencing_token < <token cutoff>} on the
 * rows locked in step b, re-checked once more (those rows are ours, so this never waits); left out if step b
 * locked nothing;</li>
 * <li>{@code COMMIT}. The transaction lasts for steps b and c only: a few milliseconds.</li>
 * </ol>
 * </li>
 * </ol>
 * The call goes on with the next batch while a batch found a full {@code batchSize} of candidates and deleted
 * at least one of them (so each further batch sees new candidates and a run never spins on rows it keeps
 * skipping). A chunk costs at most four statements, so a batch of up to {@value #MAX_KEYS_PER_STATEMENT} rows
 * at most five.
 * <p>
 * The index hint and the chunk size are not optional. When an {@code IN} list covers a large part of the table
 * the optimizer prefers a full table scan, and a locking read or {@code DELETE} that scans the table locks every
 * row it reads: the {@code DELETE} then waits for a PESSIMISTIC holder's row although that row is not in its
 * list, and {@code SKIP LOCKED} locks every other row of the table, fresh ones included, until the commit (seen
 * on MariaDB 11.4: a 19-key {@code DELETE} on a 20-row table, a 500-key one on a 3,000-row table).
 * {@code FORCE INDEX (PRIMARY)} keeps both statements on primary-key lookups; MySQL accepts index hints in a
 * {@code DELETE} only in its multi-table form, hence {@code DELETE t FROM t}. From 1,000 values on, MariaDB
 * turns an {@code IN} list into a join with a temporary table ({@code in_predicate_conversion_threshold}),
 * which scans the whole table despite the hint (seen with 1,500 keys), and MySQL abandons range optimization
 * when it would need more than {@code range_optimizer_max_mem_size} (8 MB by default; keys are up to 1020
 * bytes): hence at most {@value #MAX_KEYS_PER_STATEMENT} keys per statement.
 * <p>
 * Why {@code SKIP LOCKED} rather than bounding the {@code DELETE}'s lock wait: a {@code DELETE} that meets a
 * row locked by a PESSIMISTIC holder must wait for it (at best for one second, with MariaDB's
 * {@code SET STATEMENT innodb_lock_wait_timeout=1 FOR DELETE ...} or, on MySQL, a session variable set and
 * reset around it or a JDBC query timeout), and the lock-wait timeout then rolls back the whole batch, while the
 * batch holds locks on the other rows it has reached. As the candidates are taken oldest first, a long-running
 * holder of an old row would fail the same batch on every run and stop all cleanup. {@code SKIP LOCKED} never
 * waits, deletes everything else, and is the same SQL on both supported servers (MySQL 8.0+, MariaDB 10.6+).
 * Locking by primary key (not through the {@code expires_at} range) keeps the locks on the rows themselves, as
 * the lock operations do; under REPEATABLE READ a key deleted meanwhile by a concurrent run gets a gap lock
 * until the commit a few milliseconds later.
 * <p>
 * Every statement has a query timeout of the statement timeout (row locks never make these statements wait,
 * but a metadata lock or an overloaded server could). A lock wait timeout (error 1205) or query timeout ends the
 * call after rolling that chunk back; its rows are tried again on the next call. Deadlocks (1213) are retried.
 * Statements run on connections taken directly from the data source (a {@code TransactionAwareDataSourceProxy}
 * is unwrapped), never in a caller's transaction; each batch on a fresh connection.
 * <p>
 * Thread-safe: instances are immutable. Runs on several nodes at once are safe too: they split the rows
 * between them through the row locks and never delete a row twice.
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
	private final LockStatements.Cleanup cleanup;

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
		this.cleanup = idempotencyRecords ? this.sql.idempotencyCleanup : this.sql.lockCleanup;
		this.retentionMicros = retentionMicros;
		this.batchSize = batchSize;
		this.holderRows = new HolderRowsCleanup(this.jdbc, table, batchSize);
		this.holderBase = holderBase;
	}

	/**
	 * A cleaner of the idempotency records of a lock table ({@code <table>_idem}, see {@link IdempotencyStore}): it
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
				"idempotency records " + table.name() + IdempotencyStore.TABLE_SUFFIX, table, true, 0, batchSize,
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
		return this.holderRows.deleteExpiredKeys("read/write holders", this.sql.cleanRwHolds, this.sql.cleanRwHold);
	}

	/**
	 * Deletes rows whose lease ended more than the retention ago (see the class comment for the algorithm), at
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
		return this.holderRows.deleteExpiredKeys("semaphore permits", this.sql.cleanSemHolds, this.sql.cleanSemHold);
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
