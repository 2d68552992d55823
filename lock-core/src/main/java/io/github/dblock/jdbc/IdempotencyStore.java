package io.github.dblock.jdbc;

import io.github.dblock.spi.Backoff;
import io.github.dblock.idempotency.IdempotencyProvider;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import io.github.dblock.idempotency.IdempotencyRecord;
import io.github.dblock.idempotency.IdempotencyStatus;
import io.github.dblock.LockLostException;
import io.github.dblock.spi.HeldLock;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The idempotency records of {@link io.github.dblock.idempotency.IdempotencyTemplate}: one row per key in
 * {@code <lock table>_idem} (Flyway migration V4), written with the database server's clock.
 * <p>
 * Claiming a key, one attempt:
 * <ol>
 * <li>First attempt of a call: a plain {@code INSERT} of the row as {@code RUNNING} with a new owner token, a running
 * lease ({@code expires_at = UTC_TIMESTAMP(6) + lease}) and a fencing token of the server time in microseconds
 * (returned in the OK packet through {@code LAST_INSERT_ID(expr)}). Success means the key was new and this call
 * runs the work: one statement for the common case. A duplicate-key error (1062) means a row exists.</li>
 * <li>{@code SELECT} the row by primary key. {@code SUCCEEDED} within its retention: done, the caller gets the
 * record. {@code RUNNING} with time left on its lease: wait (backoff with jitter, never past the lease end nor the
 * caller's deadline) and read again.</li>
 * <li>Otherwise ({@code FAILED}, {@code RUNNING} past its lease, {@code SUCCEEDED} past its retention) take it over
 * with one conditional {@code UPDATE ... WHERE idem_key = ? AND <the same condition>}: the new owner token is unique,
 * so one matched row means this call won, with either found-rows setting of the driver. No
 * {@code INSERT ... ON DUPLICATE KEY UPDATE}: its per-column {@code IF()}s depend on left-to-right assignment
 * (MariaDB's {@code SIMULTANEOUS_ASSIGNMENT} mode changes that) and its affected-rows count on
 * {@code CLIENT_FOUND_ROWS}.</li>
 * </ol>
 * The winner's claim is renewed every third of the lease on the {@link LeaseLockProvider}'s shared scheduler,
 * with an owner-checked {@code UPDATE}; a renewal matching nothing, or the database unreachable until the lease must
 * be presumed over, marks the claim lost ({@link HeldLock#onLost}). Completion is an owner-checked {@code UPDATE} to
 * {@code SUCCEEDED} (outcome, {@code retain_until = now + retention}) or {@code FAILED}. The {@code SUCCEEDED} write
 * joins the caller's Spring transaction on the lock data source when one is active (see {@link Claim#succeed});
 * everything else runs in autocommit on connections of its own, so a claim is visible to other nodes at once.
 * <p>
 * A completion statement outside a transaction that fails is followed by a read of the record: written by this
 * claim after all (its reply was lost or late) counts as done; a record taken over by another caller, deleted, or
 * still this claim's but past its running lease is a claim known to be gone ({@link LockLostException} with the
 * failure as its cause from {@link Claim#succeed}, {@code false} from {@link Claim#fail}); a record still running
 * under this claim is the failure it is.
 * <p>
 * Deadlocks and lock wait timeouts are retried ({@link JdbcLockSupport}); a claim statement that waits for a row
 * locked by an uncommitted completion (another caller's transaction) past its query timeout counts as "still
 * running" and is tried again after a pause. Thread-safe.
 */
public class IdempotencyStore implements IdempotencyProvider {

	private static final Log logger = LogFactory.getLog(IdempotencyStore.class);

	/** Suffix of the records table's name after the lock table's name. */
	public static final String TABLE_SUFFIX = "_idem";

	/** The longest error summary kept in a record. */
	static final int MAX_ERROR_LENGTH = 1000;

	private final DataSource dataSource;

	/** The records table, quoted, for messages. */
	private final String table;

	private final JdbcLockSupport jdbc;

	private final Backoff backoff;

	private final LeaseLockProvider scheduler;

	/** Every statement, in the lease provider's dialect. */
	private final LockStatements sql;

	/**
	 * Creates a store.
	 * @param dataSource the lock data source, holding the records table; claims and failures run on connections
	 * taken directly from it (a {@code TransactionAwareDataSourceProxy} is unwrapped), a success joins the Spring
	 * transaction bound to it if there is one
	 * @param table the lock table; the records table is its name followed by {@value #TABLE_SUFFIX}
	 * @param statementTimeout upper bound of every statement's query timeout (whole seconds, at least one)
	 * @param backoff pauses while a duplicate waits for a running first call
	 * @param scheduler the LEASE provider whose shared scheduler renews running claims
	 */
	public IdempotencyStore(DataSource dataSource, LockTable table, Duration statementTimeout, Backoff backoff,
			LeaseLockProvider scheduler) {
		// a transaction manager binds its connection under the proxy's target, so look it up there
		this.dataSource = JdbcLockSupport.unwrap(dataSource);
		this.jdbc = new JdbcLockSupport(dataSource, statementTimeout);
		this.backoff = backoff;
		this.scheduler = scheduler;
		this.table = quoted(table);
		this.sql = LockStatements.of(table, scheduler.dialect());
	}

	/** The quoted name of the records table of a lock table. */
	static String quoted(LockTable table) {
		return '`' + table.name() + TABLE_SUFFIX + '`';
	}

	/**
	 * Claims a key, or waits until the caller's deadline for a running claim of another caller to end.
	 * @param key the key, already validated
	 * @param holder describes the caller (node and thread)
	 * @param lease the running lease, renewed every third of it while the claim is held
	 * @param retention how long a completed record answers duplicates
	 * @param deadlineNanos the {@link System#nanoTime()} until which to wait for a running claim
	 * @return the claim, or the record that answers this call: {@code SUCCEEDED} (the work is done) or
	 * {@code RUNNING} (the deadline passed while another caller ran it)
	 * @throws InterruptedException if the thread is interrupted while waiting
	 * @throws DataAccessException on a database failure; a broken connection is retried until the deadline
	 */
	@Override
	public Claimed claim(String key, String holder, Duration lease, Duration retention, long deadlineNanos)
			throws InterruptedException {
		String owner = UUID.randomUUID().toString();
		long leaseMicros = micros(lease);
		long retentionMicros = micros(retention);
		boolean insertFirst = true;
		for (int attempt = 0;; attempt++) {
			boolean tryInsert = insertFirst;
			Attempt result;
			try {
				result = this.jdbc.execute("claim idempotency key '" + key + "'",
						(connection) -> attemptOnce(connection, key, owner, holder, leaseMicros, retentionMicros, tryInsert,
								deadlineNanos));
			}
			catch (DataAccessException ex) {
				if (!SqlErrors.isConnectionFailure(ex) || deadlineNanos - System.nanoTime() <= 0) {
					throw explainMissingTable(ex);
				}
				result = new Attempt(null, null, 0);
			}
			insertFirst = false;
			if (result.claim != null) {
				return new Claimed(result.claim, null);
			}
			IdempotencyRecord seen = result.record;
			if (seen != null && seen.status() == IdempotencyStatus.SUCCEEDED) {
				return new Claimed(null, seen);
			}
			long remaining = deadlineNanos - System.nanoTime();
			if (remaining <= 0) {
				return new Claimed(null, seen);
			}
			if (Thread.interrupted()) {
				throw new InterruptedException();
			}
			TimeUnit.NANOSECONDS.sleep(this.backoff.pauseNanos(attempt, result.leaseRemainingNanos, remaining));
		}
	}

	private Attempt attemptOnce(Connection connection, String key, String owner, String holder, long leaseMicros,
			long retentionMicros, boolean tryInsert, long deadlineNanos) throws SQLException {
		int timeout = this.jdbc.queryTimeoutSeconds(deadlineNanos - System.nanoTime());
		byte[] bytes = LockRows.bytes(key);
		try {
			for (int race = 0; race < 4; race++) {
				long sentAt = System.nanoTime();
				if (tryInsert || race > 0) {
					Long token = insert(connection, bytes, owner, holder, leaseMicros, retentionMicros, timeout);
					if (token != null) {
						return new Attempt(claimed(key, owner, token, leaseMicros, retentionMicros, sentAt), null, 0);
					}
				}
				Snapshot row = select(connection, key, bytes, timeout);
				if (row == null) {
					continue; // deleted meanwhile (forget, cleanup): insert it again
				}
				if (!row.takeable(owner)) {
					return new Attempt(null, row.record, row.leaseRemainingNanos);
				}
				sentAt = System.nanoTime();
				Long token = takeOver(connection, bytes, owner, holder, leaseMicros, retentionMicros, timeout);
				if (token != null) {
					return new Attempt(claimed(key, owner, token, leaseMicros, retentionMicros, sentAt), null, 0);
				}
				// another caller took it over between the two statements: look again
			}
			return new Attempt(null, null, 0);
		}
		catch (SQLException ex) {
			if (SqlErrors.isBusy(ex)) {
				// the row is locked by a completion whose transaction has not ended yet: still running
				return new Attempt(null, null, 0);
			}
			throw ex;
		}
	}

	@Nullable
	private Long insert(Connection connection, byte[] key, String owner, String holder, long leaseMicros,
			long retentionMicros, int timeout) throws SQLException {
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.idemInsert, timeout, true)) {
			ps.setBytes(1, key);
			ps.setString(2, owner);
			ps.setString(3, holder);
			ps.setLong(4, leaseMicros);
			ps.setLong(5, retentionMicros);
			ps.executeUpdate();
			JdbcLockSupport.commitIfNeeded(connection);
			return fencingToken(connection, ps, key, owner, timeout);
		}
		catch (SQLException ex) {
			if (JdbcLockSupport.lostInsertRace(connection, ex)) {
				return null;
			}
			throw ex;
		}
	}

	@Nullable
	private Long takeOver(Connection connection, byte[] key, String owner, String holder, long leaseMicros,
			long retentionMicros, int timeout) throws SQLException {
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.idemTakeOver, timeout, true)) {
			ps.setString(1, owner);
			ps.setString(2, holder);
			ps.setLong(3, leaseMicros);
			ps.setLong(4, retentionMicros);
			ps.setBytes(5, key);
			ps.setString(6, owner);
			int matched = ps.executeUpdate();
			JdbcLockSupport.commitIfNeeded(connection);
			return (matched == 1) ? fencingToken(connection, ps, key, owner, timeout) : null;
		}
	}

	/** The token set through {@code LAST_INSERT_ID(expr)}: from the OK packet, else queried by owner token. */
	private long fencingToken(Connection connection, PreparedStatement executed, byte[] key, String owner, int timeout)
			throws SQLException {
		long token = JdbcLockSupport.lastInsertId(executed);
		if (token > 0) {
			return token;
		}
		try (PreparedStatement query = this.sql.prepareBounded(connection, this.sql.idemToken, timeout, false)) {
			query.setBytes(1, key);
			query.setString(2, owner);
			try (ResultSet rs = JdbcLockSupport.query(query)) {
				if (!rs.next()) {
					throw new SQLException("idempotency record vanished right after it was claimed");
				}
				return rs.getLong(1);
			}
		}
	}

	@Nullable
	private Snapshot select(Connection connection, String key, byte[] bytes, int timeout) throws SQLException {
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.idemSelect, timeout, false)) {
			ps.setBytes(1, bytes);
			try (ResultSet rs = JdbcLockSupport.query(ps)) {
				if (!rs.next()) {
					return null;
				}
				IdempotencyRecord record = new IdempotencyRecord(key, IdempotencyStatus.valueOf(rs.getString(1)),
						rs.getString(2), rs.getLong(4), rs.getInt(5), instant(rs, 6), instant(rs, 7),
						nullableInstant(rs, 8), instant(rs, 9), rs.getString(10), rs.getString(11), rs.getString(12));
				return new Snapshot(record, rs.getString(3),
						TimeUnit.MICROSECONDS.toNanos(Math.max(0, rs.getLong(13))), rs.getBoolean(14));
			}
			finally {
				JdbcLockSupport.commitIfNeeded(connection);
			}
		}
	}

	/** A {@code NOT NULL} column. */
	private static Instant instant(ResultSet rs, int column) throws SQLException {
		Instant value = nullableInstant(rs, column);
		if (value == null) {
			throw new SQLException("column " + column + " of the idempotency record is NULL, but it is NOT NULL");
		}
		return value;
	}

	@Nullable
	private static Instant nullableInstant(ResultSet rs, int column) throws SQLException {
		LocalDateTime value = rs.getObject(column, LocalDateTime.class);
		return (value != null) ? value.toInstant(ZoneOffset.UTC) : null;
	}

	/**
	 * The committed record of a key.
	 * @throws DataAccessException on a database failure
	 */
	@Override
	public Optional<IdempotencyRecord> find(String key) {
		try {
			return this.jdbc.execute("read idempotency key '" + key + "'", (connection) -> {
				Snapshot row = select(connection, key, LockRows.bytes(key), this.jdbc.statementTimeoutSeconds());
				return Optional.ofNullable((row != null) ? row.record : null);
			});
		}
		catch (DataAccessException ex) {
			throw explainMissingTable(ex);
		}
	}

	/**
	 * A missing records table (error 1146: migrations switched off and V4 never applied) as an
	 * {@link IllegalStateException} saying what to do; any other failure unchanged.
	 */
	private RuntimeException explainMissingTable(DataAccessException ex) {
		if (SqlErrors.isMissingTable(ex.getMostSpecificCause(), false)) {
			return new IllegalStateException("The idempotency records table " + this.table + " does not exist: with "
					+ "distributed-lock.flyway.enabled=false, create it with " + LockSchema.MIGRATION_LOCATION
					+ "/V4__create_idempotency_table.sql (replace ${lock_table} with the lock table's name), or let the "
					+ "library's migrations run", ex);
		}
		return ex;
	}

	/**
	 * Deletes the record of a key, whatever its state: the next call runs the work again. A runner still working
	 * on it then fails to complete (its claim is lost).
	 * @return whether there was a record
	 * @throws DataAccessException on a database failure
	 */
	@Override
	public boolean forget(String key) {
		return this.jdbc.execute("delete idempotency key '" + key + "'", (connection) -> {
			try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.idemDelete, this.jdbc.statementTimeoutSeconds(), false)) {
				ps.setBytes(1, LockRows.bytes(key));
				int deleted = ps.executeUpdate();
				JdbcLockSupport.commitIfNeeded(connection);
				return deleted == 1;
			}
		});
	}

	private Claim claimed(String key, String owner, long token, long leaseMicros, long retentionMicros, long sentAt) {
		long leaseNanos = TimeUnit.MICROSECONDS.toNanos(leaseMicros);
		Claim claim = new Claim(key, owner, token, leaseNanos, retentionMicros, sentAt + leaseNanos);
		claim.startRenewal(this.scheduler.renewals());
		return claim;
	}

	/** Whole microseconds, rounded up, so that a positive duration never becomes 0. */
	private static long micros(Duration duration) {
		return TimeUnit.SECONDS.toMicros(duration.getSeconds()) + (duration.getNano() + 999) / 1000;
	}

	/** Binds and runs a completion ({@code SUCCEEDED} or {@code FAILED}) of a claim on a connection. */
	private int complete(Connection connection, String sql, Claim claim, @Nullable String outcome,
			@Nullable String outcomeType, @Nullable String error) throws SQLException {
		try (PreparedStatement ps = this.sql.prepareBounded(connection, sql, this.jdbc.statementTimeoutSeconds(), false)) {
			ps.setLong(1, claim.retentionMicros);
			ps.setString(2, outcome);
			ps.setString(3, outcomeType);
			ps.setString(4, (error != null && error.length() > MAX_ERROR_LENGTH) ? error.substring(0, MAX_ERROR_LENGTH)
					: error);
			ps.setBytes(5, LockRows.bytes(claim.resource));
			ps.setString(6, claim.ownerToken);
			return ps.executeUpdate();
		}
	}

	private record Attempt(@Nullable Claim claim, @Nullable IdempotencyRecord record, long leaseRemainingNanos) {
	}

	private record Snapshot(IdempotencyRecord record, @Nullable String ownerToken, long leaseRemainingNanos,
			boolean retentionOver) {

		/**
		 * The same condition as {@link #TAKEABLE}, on this committed state: also a running claim of this very call,
		 * whose claim committed although its reply was lost.
		 */
		boolean takeable(String owner) {
			return switch (this.record.status()) {
				case FAILED -> true;
				case RUNNING -> this.leaseRemainingNanos <= 0 || owner.equals(this.ownerToken);
				case SUCCEEDED -> this.retentionOver;
			};
		}

	}

	/**
	 * A claimed key: this caller runs the work. Renewed on the shared scheduler until it is completed. Exactly one of
	 * {@link #succeed} and {@link #fail} (or {@link #release()}, which fails it) must be called, by any thread.
	 */
	public final class Claim extends OwnedLease implements IdempotencyProvider.HeldClaim {

		private final long retentionMicros;

		Claim(String key, String ownerToken, long fencingToken, long leaseNanos, long retentionMicros,
				long validUntilNanos) {
			super(key, ownerToken, fencingToken, leaseNanos, validUntilNanos);
			this.retentionMicros = retentionMicros;
		}

		/** The idempotency key. */
		@Override
		public String key() {
			return this.resource;
		}

		@Override
		String describe() {
			return "the claim of idempotency key '" + this.resource + "'";
		}

		@Override
		boolean renewInDatabase() {
			return IdempotencyStore.this.jdbc.execute("renew idempotency key '" + this.resource + "'", (connection) -> {
				LockStatements sql = IdempotencyStore.this.sql;
				try (PreparedStatement ps = sql.prepareBounded(connection, sql.idemRenew,
						IdempotencyStore.this.jdbc.statementTimeoutSeconds(), false)) {
					ps.setLong(1, TimeUnit.NANOSECONDS.toMicros(this.leaseNanos));
					ps.setBytes(2, LockRows.bytes(this.resource));
					ps.setString(3, this.ownerToken);
					int matched = ps.executeUpdate();
					JdbcLockSupport.commitIfNeeded(connection);
					return matched == 1;
				}
			});
		}

		/** Giving the key back without an outcome ({@link #release()}) marks it {@code FAILED}. */
		@Override
		boolean releaseInDatabase() {
			return markFailed("released without an outcome");
		}

		/**
		 * Records the outcome and ends the claim. If a Spring transaction is active on the lock data source (with
		 * autocommit off), the {@code UPDATE} runs in it: the record commits or rolls back together with the
		 * caller's writes, and a rollback then marks the record {@code FAILED} on a connection of its own, so that the
		 * next call runs the work again. Otherwise it runs in autocommit. Renewal stops first (in the transactional
		 * case the row is locked by the {@code UPDATE} until the commit, so nobody can take it over meanwhile).
		 * @param outcome the result as JSON, or {@code null} for none
		 * @param outcomeType the result's Java type name, or {@code null}
		 * @param note an error text kept with a success (for example why the outcome could not be recorded), or
		 * {@code null}
		 * @throws LockLostException if the record no longer belongs to this claim (its lease ended and another
		 * caller took it over, or it was deleted); in a transaction the caller must let it roll back. Outside a
		 * transaction also if the statement failed and a read of the record then shows the claim gone (taken over,
		 * deleted, or past its running lease): the failure is its cause
		 * @throws DataAccessException on a database failure while the record still runs under this claim (or cannot
		 * be read); a statement that failed but committed (its reply was lost) is not one
		 */
		@Override
		public void succeed(@Nullable String outcome, @Nullable String outcomeType, @Nullable String note) {
			finish();
			if (!record(boundTransactionalConnection(), outcome, outcomeType, note)) {
				throw lost(null);
			}
		}

		private LockLostException lost(@Nullable DataAccessException failure) {
			return new LockLostException(this.resource, this.fencingToken, "Idempotency key '" + this.resource
					+ "' (fencing token " + this.fencingToken + ") was no longer claimed by this call when its outcome "
					+ "was recorded: its running lease had ended (and another caller may have taken it over), or the "
					+ "record was deleted; the work may have run twice"
					+ ((failure != null) ? " (the statement recording it failed: " + failure.getMostSpecificCause() + ")"
							: ""),
					failure);
		}

		/**
		 * After a completion statement outside a transaction failed: what the record says.
		 * @param status the status the statement was writing
		 * @return {@code true} if the record shows this claim's completion (the statement committed after all),
		 * {@code false} if the claim is known to be gone (taken over, deleted, or past its running lease)
		 * @throws DataAccessException {@code failure}, if the record is still running under this claim or cannot be
		 * read
		 */
		@SuppressWarnings("NullAway") // a lambda returns null for ConnectionWork<T extends @Nullable Object>: see pom.xml
		private boolean afterFailedCompletion(IdempotencyStatus status, DataAccessException failure) {
			Snapshot row;
			try {
				row = IdempotencyStore.this.jdbc.execute("read idempotency key '" + this.resource + "'",
						(connection) -> select(connection, this.resource, LockRows.bytes(this.resource),
								IdempotencyStore.this.jdbc.statementTimeoutSeconds()));
			}
			catch (RuntimeException checkFailed) {
				failure.addSuppressed(checkFailed);
				throw failure;
			}
			if (row == null || !this.ownerToken.equals(row.ownerToken)) {
				return false;
			}
			if (row.record.status() == status) {
				return true;
			}
			if (row.record.status() == IdempotencyStatus.RUNNING && row.leaseRemainingNanos > 0) {
				throw failure;
			}
			return false; // this claim's record, but its running lease is over: anyone may take it over now
		}

		/**
		 * Writes {@code SUCCEEDED}: in the caller's transaction if one is bound (a rollback of it then marks the
		 * record {@code FAILED}), else in autocommit. Renewal has stopped.
		 * @return whether the record still belonged to this claim
		 */
		private boolean record(@Nullable Connection transactional, @Nullable String outcome, @Nullable String outcomeType,
				@Nullable String note) {
			if (transactional == null) {
				try {
					return IdempotencyStore.this.jdbc.execute("record the outcome of idempotency key '" + this.resource
							+ "'", (connection) -> {
								int rows = complete(connection, IdempotencyStore.this.sql.idemSucceed, this, outcome, outcomeType,
										note);
								JdbcLockSupport.commitIfNeeded(connection);
								return rows == 1;
							});
				}
				catch (DataAccessException ex) {
					if (!afterFailedCompletion(IdempotencyStatus.SUCCEEDED, ex)) {
						throw lost(ex);
					}
					return true;
				}
			}
			int matched;
			try {
				matched = complete(transactional, IdempotencyStore.this.sql.idemSucceed, this, outcome, outcomeType, note);
			}
			catch (SQLException ex) {
				throw IdempotencyStore.this.jdbc.translate("record the outcome of idempotency key '" + this.resource + "'", ex);
			}
			finally {
				DataSourceUtils.releaseConnection(transactional, IdempotencyStore.this.dataSource);
			}
			if (matched == 1) {
				TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
					@Override
					public void afterCompletion(int status) {
						if (status == STATUS_ROLLED_BACK) {
							failQuietly("the transaction that recorded the outcome rolled back");
						}
					}
				});
			}
			return matched == 1;
		}

		/**
		 * Ends the claim after its work threw. Outside a transaction on the lock data source this is {@link #fail}.
		 * Inside one, whether the work's writes persist is that transaction's decision (a checked exception, a
		 * {@code noRollbackFor} or a caller catching the exception lets it commit), so the record is completed in it
		 * as {@link #succeed} does, without an outcome and with the error as its note: a commit keeps the writes and
		 * the record together (duplicates then get {@link io.github.dblock.idempotency.AlreadyProcessedException} naming the
		 * error, and the work does not run again), a rollback marks the record {@code FAILED} so that the next call
		 * runs the work again.
		 * @param error what went wrong, cut to {@value IdempotencyStore#MAX_ERROR_LENGTH} characters
		 * @return {@code false} if the record no longer belonged to this claim (nothing was changed)
		 * @throws DataAccessException on a database failure
		 */
		@Override
		public boolean failed(String error) {
			Connection transactional = boundTransactionalConnection();
			if (transactional == null) {
				return fail(error);
			}
			finish();
			return record(transactional, null, null, "the work threw, and its transaction was left to decide: " + error);
		}

		/**
		 * Marks the record {@code FAILED} (in autocommit, never in the caller's transaction), so that the next call
		 * runs the work again, and ends the claim.
		 * @param error what went wrong, cut to {@value IdempotencyStore#MAX_ERROR_LENGTH} characters
		 * @return {@code false} if the record no longer belonged to this claim (nothing was changed), also when the
		 * statement failed and a read of the record then shows the claim gone (taken over, deleted, or past its
		 * running lease)
		 * @throws DataAccessException on a database failure while the record still runs under this claim (or cannot
		 * be read); the record then stays {@code RUNNING} until its lease ends
		 */
		public boolean fail(String error) {
			finish();
			return markFailed(error);
		}

		private boolean markFailed(String error) {
			try {
				return IdempotencyStore.this.jdbc.execute("record the failure of idempotency key '" + this.resource + "'",
						(connection) -> {
							int rows = complete(connection, IdempotencyStore.this.sql.idemFail, this, null, null, error);
							JdbcLockSupport.commitIfNeeded(connection);
							return rows == 1;
						});
			}
			catch (DataAccessException ex) {
				return afterFailedCompletion(IdempotencyStatus.FAILED, ex);
			}
		}

		private void failQuietly(String error) {
			try {
				fail(error);
			}
			catch (RuntimeException ex) {
				logger.warn("Could not mark idempotency key '" + this.resource + "' as failed; it is taken over when its "
						+ "running lease ends", ex);
			}
		}

	}

	/**
	 * Refuses a call inside a read-only transaction on the lock data source, before anything is claimed: the outcome
	 * could not be recorded in it, so the work would run again on every call.
	 * @throws IllegalStateException in that case
	 */
	@Override
	public void requireWritableTransaction(String key) {
		if (!TransactionSynchronizationManager.isActualTransactionActive()
				|| !TransactionSynchronizationManager.isCurrentTransactionReadOnly()) {
			return;
		}
		Connection transactional = boundTransactionalConnection();
		if (transactional != null) {
			DataSourceUtils.releaseConnection(transactional, this.dataSource);
			throw new IllegalStateException("Idempotency key '" + key + "' is used inside a read-only transaction on "
					+ "the lock data source, where its outcome cannot be recorded (the work would run again on every "
					+ "call); remove readOnly or call it outside that transaction. Nothing was claimed");
		}
	}

	/** The connection of an active Spring transaction on the lock data source (autocommit off), or {@code null}. */
	@Nullable
	private Connection boundTransactionalConnection() {
		return this.jdbc.boundTransactionalConnection(this.dataSource);
	}

}
