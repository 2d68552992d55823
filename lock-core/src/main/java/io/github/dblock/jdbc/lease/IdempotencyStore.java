package io.github.dblock.jdbc.lease;

import io.github.dblock.jdbc.sql.CallDeadline;
import io.github.dblock.jdbc.sql.InsertIds;
import io.github.dblock.jdbc.sql.JdbcLockSupport;
import io.github.dblock.jdbc.sql.JdbcWait;
import io.github.dblock.jdbc.sql.LockRows;
import io.github.dblock.jdbc.sql.LockSchema;
import io.github.dblock.jdbc.sql.LockStatements;
import io.github.dblock.jdbc.sql.LockTable;
import io.github.dblock.jdbc.sql.SqlErrors;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import io.github.dblock.LockLostException;
import io.github.dblock.idempotency.IdempotencyProvider;
import io.github.dblock.idempotency.IdempotencyRecord;
import io.github.dblock.idempotency.IdempotencyStatus;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.wait.Backoff;
import io.github.dblock.wait.WaitLoop;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The idempotency records of {@link io.github.dblock.idempotency.IdempotencyTemplate}: one row per key in
 * {@code <lock table>_idem}, written with the database server's clock.
 * <p>
 * A claim is a plain {@code INSERT} of a {@code RUNNING} row with a running lease (one statement for a new key); an
 * existing row is read by primary key and either answered ({@code SUCCEEDED} within its retention), waited for
 * ({@code RUNNING} with lease left) or taken over by one owner-checked conditional {@code UPDATE}. The winner's claim
 * is renewed every third of the lease; completion is an owner-checked {@code UPDATE} that joins the caller's Spring
 * transaction on the lock data source when one is active. Statements, take-over conditions and failed completions:
 * see docs/DESIGN.md, "Idempotency keys (run once)".
 * <p>
 * Relies on the primary key's duplicate-key error (1062) and on {@code LAST_INSERT_ID(expr)} for the fencing token.
 * Deadlocks and lock wait timeouts are retried; a lost claim runs its {@link HeldLock#onLost} callbacks, and its
 * completion throws {@link LockLostException}; other errors surface as {@link DataAccessException}. Thread-safe.
 */
public class IdempotencyStore implements IdempotencyProvider {

	private static final Log logger = LogFactory.getLog(IdempotencyStore.class);

	final DataSource dataSource;

	/** The records table, quoted, for messages. */
	private final String table;

	final JdbcLockSupport jdbc;

	private final WaitLoop waits;

	private final LeaseLockProvider scheduler;

	/** Every statement, in the lease provider's dialect. */
	private final LockStatements sql;

	/** The reads and writes of records by key, shared with the claims. */
	private final IdempotencyRows rows;

	/**
	 * Creates a store.
	 * @param dataSource the lock data source, holding the records table; claims and failures run on connections
	 * taken directly from it (a {@code TransactionAwareDataSourceProxy} is unwrapped), a success joins the Spring
	 * transaction bound to it if there is one
	 * @param table the lock table; the records table is its name followed by {@value LockTable#IDEMPOTENCY_SUFFIX}
	 * @param statementTimeout upper bound of every statement's query timeout (whole seconds, at least one)
	 * @param backoff pauses while a duplicate waits for a running first call
	 * @param scheduler the LEASE provider whose shared scheduler renews running claims
	 */
	public IdempotencyStore(DataSource dataSource, LockTable table, Duration statementTimeout, Backoff backoff,
			LeaseLockProvider scheduler) {
		// a transaction manager binds its connection under the proxy's target, so look it up there
		this.dataSource = JdbcLockSupport.unwrap(dataSource);
		this.jdbc = new JdbcLockSupport(dataSource, statementTimeout);
		this.waits = new WaitLoop(backoff, logger);
		this.scheduler = scheduler;
		this.table = quoted(table);
		this.sql = LockStatements.of(table, scheduler.dialect());
		this.rows = new IdempotencyRows(this.dataSource, this.jdbc, this.sql);
	}

	/** The quoted name of the records table of a lock table. */
	static String quoted(LockTable table) {
		return '`' + table.name() + LockTable.IDEMPOTENCY_SUFFIX + '`';
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
		ClaimRequest request = new ClaimRequest(key, LockRows.bytes(key), UUID.randomUUID().toString(), holder,
				micros(lease), micros(retention), deadlineNanos);
		return this.waits.run(() -> deadlineNanos - System.nanoTime(),
				new ClaimWait(request, this.jdbc.acquisitionDeadline(deadlineNanos)));
	}

	/** One call's wait for a key: claimed, answered by a succeeded record, or still running at the deadline. */
	private final class ClaimWait implements JdbcWait<Attempt, Claimed> {

		private final ClaimRequest request;

		/** The call's: bounds every pool wait and reply of the attempts. */
		private final CallDeadline deadline;

		ClaimWait(ClaimRequest request, CallDeadline deadline) {
			this.request = request;
			this.deadline = deadline;
		}

		@Override
		public Attempt attempt(int attempt) {
			Attempt result;
			try {
				// the first attempt of a call inserts first: one statement for a new key
				result = IdempotencyStore.this.jdbc.execute("claim idempotency key '" + this.request.key + "'",
						this.deadline, (connection) -> attemptOnce(connection, this.request, attempt == 0));
			}
			catch (DataAccessException ex) {
				if (!SqlErrors.isConnectionFailure(ex)) {
					throw explainMissingTable(ex);
				}
				throw ex;
			}
			StoredClaim claim = result.claim;
			if (claim != null && LateLeases.arrivedLate(claim)) {
				// its reply came after its lease time: another caller may have taken the key over,
				// so the claim is not handed out. Its renewal stops without a statement (a release would mark the
				// key FAILED); the next attempt takes the key again, since a running claim of this call is takeable
				// by it, or finds it taken over
				claim.finish();
				return new Attempt(null, null, 0);
			}
			return result;
		}

		@Override
		public boolean ridesOut(DataAccessException ex) {
			return SqlErrors.isConnectionFailure(ex);
		}

		@Override
		public Attempt afterOutage(DataAccessException ex) {
			return new Attempt(null, null, 0);
		}

		@Override
		public Claimed outageAtDeadline(DataAccessException ex) {
			throw explainMissingTable(ex);
		}

		@Override
		@Nullable
		public Claimed result(Attempt outcome) {
			if (outcome.claim != null) {
				return new Claimed(outcome.claim, null);
			}
			IdempotencyRecord seen = outcome.record;
			return (seen != null && seen.status() == IdempotencyStatus.SUCCEEDED) ? new Claimed(null, seen) : null;
		}

		@Override
		public Claimed atDeadline(Attempt outcome) {
			return new Claimed(null, outcome.record);
		}

		@Override
		public long pauseNanos(Attempt outcome, int attempt, long remainingNanos, Backoff backoff)
				throws InterruptedException {
			return backoff.pauseNanos(attempt, outcome.leaseRemainingNanos, remainingNanos);
		}

		@Override
		public String waitingFor() {
			return "claiming idempotency key '" + this.request.key + "'";
		}

	}

	private Attempt attemptOnce(Connection connection, ClaimRequest request, boolean tryInsert) throws SQLException {
		int timeout = this.jdbc.queryTimeoutSeconds(request.deadlineNanos - System.nanoTime());
		try {
			for (int race = 0; race < 4; race++) {
				long sentAt = System.nanoTime();
				if (tryInsert || race > 0) {
					Long token = insert(connection, request, timeout);
					if (token != null) {
						return new Attempt(claimed(request, token, sentAt), null, 0);
					}
				}
				IdempotencyRows.Snapshot row = this.rows.select(connection, request.key, request.bytes, timeout);
				if (row == null) {
					continue; // deleted meanwhile (forget, cleanup): insert it again
				}
				if (!row.takeable(request.owner)) {
					return new Attempt(null, row.record(), row.leaseRemainingNanos());
				}
				sentAt = System.nanoTime();
				Long token = claimStatement(connection, this.sql.idempotency.idemTakeOver, request, timeout, request.owner,
						request.holder, request.leaseMicros, request.retentionMicros, request.bytes, request.owner);
				if (token != null) {
					return new Attempt(claimed(request, token, sentAt), null, 0);
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

	/** The plain {@code INSERT} of a new key as {@code RUNNING}: its fencing token, or {@code null} if it exists. */
	@Nullable
	private Long insert(Connection connection, ClaimRequest request, int timeout) throws SQLException {
		try {
			return claimStatement(connection, this.sql.idempotency.idemInsert, request, timeout, request.bytes, request.owner,
					request.holder, request.leaseMicros, request.retentionMicros);
		}
		catch (SQLException ex) {
			if (JdbcLockSupport.lostInsertRace(connection, ex)) {
				return null;
			}
			throw ex;
		}
	}

	/**
	 * Runs a claiming statement (the insert or the take-over) in autocommit.
	 * @param values the bind parameters in order: {@code byte[]}, {@code String} or {@code Long}
	 * @return the claim's fencing token if the statement matched the row, else {@code null}
	 */
	@Nullable
	private Long claimStatement(Connection connection, String statement, ClaimRequest request, int timeout,
			Object... values) throws SQLException {
		try (PreparedStatement ps = this.sql.prepareBounded(connection, statement, timeout, true)) {
			for (int i = 0; i < values.length; i++) {
				if (values[i] instanceof byte[] bytes) {
					ps.setBytes(i + 1, bytes);
				}
				else if (values[i] instanceof Long number) {
					ps.setLong(i + 1, number);
				}
				else {
					ps.setString(i + 1, (String) values[i]);
				}
			}
			int matched = ps.executeUpdate();
			JdbcLockSupport.commitIfNeeded(connection);
			return (matched == 1) ? fencingToken(connection, ps, request.bytes, request.owner, timeout) : null;
		}
	}

	/** The token set through {@code LAST_INSERT_ID(expr)}: from the OK packet, else queried by owner token. */
	private long fencingToken(Connection connection, PreparedStatement executed, byte[] key, String owner, int timeout)
			throws SQLException {
		long token = InsertIds.lastInsertId(executed);
		if (token > 0) {
			return token;
		}
		try (PreparedStatement query = this.sql.prepareBounded(connection, this.sql.idempotency.idemToken, timeout, false)) {
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

	/**
	 * The committed record of a key.
	 * @throws DataAccessException on a database failure
	 */
	@Override
	public Optional<IdempotencyRecord> find(String key) {
		try {
			return this.jdbc.execute("read idempotency key '" + key + "'", (connection) -> {
				IdempotencyRows.Snapshot row = this.rows.select(connection, key, LockRows.bytes(key), this.jdbc.statementTimeoutSeconds());
				return Optional.ofNullable((row != null) ? row.record() : null);
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
			try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.idempotency.idemDelete, this.jdbc.statementTimeoutSeconds(), false)) {
				ps.setBytes(1, LockRows.bytes(key));
				int deleted = ps.executeUpdate();
				JdbcLockSupport.commitIfNeeded(connection);
				return deleted == 1;
			}
		});
	}

	private StoredClaim claimed(ClaimRequest request, long token, long sentAt) {
		long leaseNanos = TimeUnit.MICROSECONDS.toNanos(request.leaseMicros);
		StoredClaim claim = new StoredClaim(this.rows, request.key, request.owner, token, leaseNanos, request.retentionMicros,
				sentAt + leaseNanos);
		claim.startRenewal(this.scheduler.renewals());
		return claim;
	}

	/** Whole microseconds, rounded up, so that a positive duration never becomes 0. */
	private static long micros(Duration duration) {
		return TimeUnit.SECONDS.toMicros(duration.getSeconds()) + (duration.getNano() + 999) / 1000;
	}

	/**
	 * One call's claim: the key (and its bytes), the call's owner token, its holder description, the running lease
	 * and retention in microseconds, and the caller's deadline.
	 */
	private record ClaimRequest(String key, byte[] bytes, String owner, String holder, long leaseMicros,
			long retentionMicros, long deadlineNanos) {
	}

	private record Attempt(@Nullable StoredClaim claim, @Nullable IdempotencyRecord record, long leaseRemainingNanos) {
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
		Connection transactional = this.rows.boundTransactionalConnection();
		if (transactional != null) {
			DataSourceUtils.releaseConnection(transactional, this.dataSource);
			throw new IllegalStateException("Idempotency key '" + key + "' is used inside a read-only transaction on "
					+ "the lock data source, where its outcome cannot be recorded (the work would run again on every "
					+ "call); remove readOnly or call it outside that transaction. Nothing was claimed");
		}
	}


}
