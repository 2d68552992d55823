package io.github.dblock.jdbc;

import io.github.dblock.spi.Backoff;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import io.github.dblock.LockLostException;
import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.semaphore.SemaphoreProvider;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.dao.DataAccessException;

/**
 * Distributed semaphores on two tables derived from the lock table's name: {@code <table>_sem}, one row per pool
 * (permit count and fencing token), and {@code <table>_sem_hold}, one row per held permit (owner token, holder,
 * fencing token, lease on the server's clock).
 * <p>
 * One acquisition attempt is one short transaction on a connection of its own (never the caller's transaction):
 * <ol>
 * <li>{@code SELECT permits FROM <table>_sem WHERE name = ? FOR UPDATE}: serializes the acquisitions of a pool;</li>
 * <li>{@code SELECT COUNT(*), SUM(expires_at <= UTC_TIMESTAMP(6)), ... FROM <table>_sem_hold WHERE name = ? FOR
 * UPDATE}: a locking read, so it sees the latest committed holders whatever the isolation level (a renewal that
 * committed a moment ago counts);</li>
 * <li>{@code DELETE} the pool's expired holders, if step 2 found any;</li>
 * <li>if the live holders are fewer than the permits: advance the pool's fencing token ({@code GREATEST(
 * fencing_token + 1, <server µs>)}, returned through {@code LAST_INSERT_ID}) and {@code INSERT} the holder row with
 * {@code expires_at = UTC_TIMESTAMP(6) + lease};</li>
 * <li>{@code COMMIT}.</li>
 * </ol>
 * Between attempts the caller sleeps with the shared {@link Backoff} (exponential, jittered) until its deadline.
 * Every statement uses the primary key of its table (step 2 and 3 a prefix of it), every value is a bind parameter.
 * <p>
 * Release is {@code DELETE ... WHERE name = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6)}: no row
 * means the lease had expired (and the permit may have gone to another owner), reported as {@code false}. A release
 * statement that fails (other than a broken connection while the lease is still valid, which
 * {@link RenewableLease#release()} retries) is followed by a plain read of the holder row: a row still live is the
 * failure it is ({@link DataAccessException}); a row gone or expired is a lease that is over, which counts as
 * released if the release began while the lease was valid by this JVM's clock, and as lost
 * ({@link LockLostException}, with the failure as its cause) if it began later.
 * Renewal, when the request asks for it, runs on the {@link LeaseLockProvider}'s shared scheduler every third of
 * the lease with {@code UPDATE ... SET expires_at = UTC_TIMESTAMP(6) + lease WHERE name = ? AND owner_token = ? AND
 * expires_at > UTC_TIMESTAMP(6)}; a renewal matching no row, or a database unreachable until the lease must be
 * presumed expired by this JVM's clock, marks the permit lost and runs its {@link HeldLock#onLost} callbacks.
 * <p>
 * Changing the permit count never revokes a permit: after a decrease, holders above the new count keep their
 * permits until they release, and new acquisitions wait until fewer than the new count are live. A pool's row
 * is created from the configured initial count the first time it is needed (a plain {@code INSERT}; a
 * duplicate-key error means another node created it first), never overwritten by it.
 * <p>
 * A take whose outcome is unknown (its connection broke, or a statement timed out: a {@code COMMIT} whose reply came
 * after the query timeout did commit) is looked for by the next attempt of the same acquisition (one owner token
 * serves the whole wait), and when the deadline has passed by one last query on a fresh connection: a live holder
 * row of this owner is the permit, valid for the row's remaining lease on the server's clock, not for a full lease
 * from the retry. So an unknown outcome is never reported as busy while its permit stays taken; if even the last
 * look fails, the row ends with its lease, unrenewed (renewal starts only once a take is known committed).
 * Deadlocks and lock wait timeouts are retried; other errors surface as {@link DataAccessException}. Thread-safe.
 */
public class JdbcSemaphoreProvider implements SemaphoreProvider {

	private static final Log logger = LogFactory.getLog(JdbcSemaphoreProvider.class);

	/** The configuration property holding a pool's initial permit count, with {@code %s} for the name. */
	public static final String PERMITS_PROPERTY = "distributed-lock.semaphores.%s.permits";

	private final JdbcLockSupport jdbc;

	private final Backoff backoff;

	private final LeaseLockProvider renewals;

	private final Map<String, Integer> configuredPermits;

	private final String poolTable;

	/** Every statement, in the lease provider's dialect. */
	private final LockStatements sql;

	/**
	 * Creates a provider.
	 * @param dataSource the data source holding the lock table; a {@code TransactionAwareDataSourceProxy} is
	 * unwrapped, so semaphore statements never join a Spring-managed transaction
	 * @param table the lock table; the semaphore tables are {@code <table>_sem} and {@code <table>_sem_hold}
	 * (created by the library's migration {@code V3})
	 * @param statementTimeout upper bound of every statement's query timeout (whole seconds, at least one)
	 * @param backoff pauses between attempts while waiting
	 * @param renewals the LEASE provider whose renewal scheduler also renews permits
	 * @param configuredPermits initial permit counts per pool name, each at least 1 (copied)
	 * @throws IllegalArgumentException if a configured count is below 1
	 */
	public JdbcSemaphoreProvider(DataSource dataSource, LockTable table, Duration statementTimeout, Backoff backoff,
			LeaseLockProvider renewals, Map<String, Integer> configuredPermits) {
		configuredPermits.forEach(JdbcSemaphoreProvider::checkPermits);
		this.jdbc = new JdbcLockSupport(dataSource, statementTimeout);
		this.backoff = backoff;
		this.renewals = renewals;
		this.configuredPermits = Map.copyOf(configuredPermits);
		this.poolTable = poolTable(table);
		this.sql = LockStatements.of(table, renewals.dialect());
	}

	/** The quoted name of the pool table of a lock table. */
	static String poolTable(LockTable table) {
		return '`' + table.name() + "_sem`";
	}

	/** The quoted name of the holder table of a lock table. */
	static String holdTable(LockTable table) {
		return '`' + table.name() + "_sem_hold`";
	}

	private static void checkPermits(String name, Integer permits) {
		if (permits == null || permits < 1) {
			throw new IllegalArgumentException("Semaphore '" + name + "' must have at least 1 permit, was " + permits
					+ " (" + PERMITS_PROPERTY.formatted(name) + ")");
		}
	}

	/**
	 * Creates the row of every configured pool that has none yet; existing rows keep their permit count (it may
	 * have been changed at run time). Called once at start-up.
	 * @throws IllegalStateException if the semaphore tables do not exist (migrations off and {@code V3} not applied)
	 * @throws DataAccessException if the database fails otherwise
	 */
	public void createConfiguredPools() {
		try {
			this.configuredPermits.forEach((name, permits) -> this.jdbc.execute("create semaphore '" + name + "'",
					(connection) -> insertPool(connection, name, permits, this.jdbc.statementTimeoutSeconds())));
		}
		catch (DataAccessException ex) {
			if (SqlErrors.isMissingTable(ex.getMostSpecificCause(), false)) {
				throw new IllegalStateException("Semaphores are configured (distributed-lock.semaphores) but their table "
						+ this.poolTable + " does not exist: apply " + LockSchema.MIGRATION_LOCATION
						+ "/V3__create_semaphore_tables.sql, or let the library migrate (distributed-lock.flyway.enabled=true)",
						ex);
			}
			throw ex;
		}
	}

	@Override
	public AcquireResult acquire(LockRequest request) throws InterruptedException {
		// One owner token for the whole wait: a take whose COMMIT reply was lost is found again by it.
		String owner = UUID.randomUUID().toString();
		// whether an earlier attempt may have committed a take without our hearing of it
		boolean uncertain = false;
		int outages = 0;
		for (int attempt = 0;; attempt++) {
			Attempt result;
			boolean checkOwn = uncertain;
			try {
				result = this.jdbc.execute("acquire a permit of semaphore '" + request.resource() + "'",
						this.jdbc.connectionTimeoutNanos(request.remainingNanos()),
						(connection) -> attemptOnce(connection, request, owner, checkOwn));
				uncertain = result.outcomeUnknown;
			}
			catch (org.springframework.dao.PessimisticLockingFailureException ex) {
				// deadlocks (gap locks of a neighbouring pool's acquisition) that outlasted the retries, or a lock wait
				// timeout: the pool is contended, not broken (a rolled-back attempt took nothing); try again
				result = new Attempt(null, null);
			}
			catch (DataAccessException ex) {
				if (!SqlErrors.isConnectionFailure(ex) && !SqlErrors.isTooSlow(ex)) {
					throw ex;
				}
				if (request.remainingNanos() <= 0) {
					// an attempt that got no connection sent nothing: no permit of ours to look for
					Permit own = (ex instanceof org.springframework.jdbc.CannotGetJdbcConnectionException) ? null
							: lastLookForOwnPermit(request, owner);
					if (own != null) {
						return acquired(request, own);
					}
					if (!SqlErrors.isUnreachable(ex)) {
						// reached, but no answer in time: not acquired, with the cause (as for locks)
						return AcquireResult.timedOut(null, ex);
					}
					throw ex;
				}
				if (outages++ == 0) {
					logger.warn("Lost the connection to the lock database while acquiring a permit of '"
							+ request.resource() + "'; retrying until the wait time ends: " + ex.getMostSpecificCause());
				}
				uncertain = true;
				result = new Attempt(null, null);
			}
			if (result.permit != null) {
				return acquired(request, result.permit);
			}
			long remaining = request.remainingNanos();
			if (remaining <= 0) {
				Permit own = uncertain ? lastLookForOwnPermit(request, owner) : null;
				return (own != null) ? acquired(request, own) : AcquireResult.busy(result.busy);
			}
			if (Thread.interrupted()) {
				throw new InterruptedException();
			}
			TimeUnit.NANOSECONDS.sleep(this.backoff.pauseNanos(attempt, 0, remaining));
		}
	}

	private Attempt attemptOnce(Connection connection, LockRequest request, String owner, boolean checkOwn)
			throws SQLException {
		String name = request.resource();
		int timeout = this.jdbc.queryTimeoutSeconds(request.remainingNanos());
		long sentAt = System.nanoTime();
		boolean autoCommit = connection.getAutoCommit();
		boolean ended = false;
		try {
			if (autoCommit) {
				JdbcLockSupport.executeStatement(connection, LockStatements.START_TRANSACTION, timeout);
			}
			Integer permits = queryInt(connection, this.sql.semLockPool, timeout, name);
			if (permits == null) {
				JdbcLockSupport.endTransaction(connection, autoCommit, false, timeout);
				ended = true;
				insertPool(connection, name, configured(name), timeout);
				return attemptOnce(connection, request, owner, checkOwn);
			}
			int holders;
			int expired;
			boolean own;
			try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.semCount, timeout, false)) {
				ps.setString(1, owner);
				ps.setBytes(2, LockRows.bytes(name));
				try (ResultSet rs = JdbcLockSupport.query(ps)) {
					rs.next();
					holders = rs.getInt(1);
					expired = rs.getInt(2);
					own = rs.getInt(3) == 1;
				}
			}
			if (own && checkOwn) {
				// an earlier attempt of this acquisition committed, but its reply was lost or late
				Permit found = ownPermit(connection, request, owner, timeout, sentAt);
				JdbcLockSupport.endTransaction(connection, autoCommit, true, timeout);
				ended = true;
				if (found != null) {
					return new Attempt(found, null);
				}
				// it expired between the two reads: the next attempt takes a new one
				return new Attempt(null, "the permit of an unacknowledged take expired", true);
			}
			if (expired > 0) {
				try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.semDeleteExpired, timeout, false)) {
					ps.setBytes(1, LockRows.bytes(name));
					ps.executeUpdate();
				}
			}
			int live = holders - expired;
			if (live >= permits) {
				JdbcLockSupport.endTransaction(connection, autoCommit, expired > 0, timeout);
				ended = true;
				return new Attempt(null, "all " + permits + " permits of semaphore '" + name + "' held (" + live
						+ " live holders)");
			}
			long token;
			try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.semNextToken, timeout, true)) {
				ps.setBytes(1, LockRows.bytes(name));
				ps.executeUpdate();
				token = generatedToken(connection, ps, name, timeout);
			}
			try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.semInsertHold, timeout, false)) {
				ps.setBytes(1, LockRows.bytes(name));
				ps.setString(2, owner);
				ps.setString(3, request.holder());
				ps.setLong(4, token);
				ps.setLong(5, TimeUnit.NANOSECONDS.toMicros(request.leaseTime().toNanos()));
				ps.executeUpdate();
			}
			JdbcLockSupport.endTransaction(connection, autoCommit, true, timeout);
			ended = true;
			return new Attempt(permit(request, owner, token, sentAt + request.leaseTime().toNanos()), null);
		}
		catch (SQLException ex) {
			return switch (SqlErrors.classify(ex)) {
				// the pool row stayed locked for the whole query timeout (a stuck transaction), or a COMMIT's reply
				// came after it (the take committed): busy for now, and the next attempt looks for our own row first
				case STATEMENT_TIMEOUT -> new Attempt(null, "a transaction holding the row lock of semaphore '" + name + "'", true);
				// a lock wait timeout rolled the attempt back: busy, not a fault
				case LOCK_WAIT_TIMEOUT -> new Attempt(null, "a transaction holding the row lock of semaphore '" + name + "'");
				default -> throw ex;
			};
		}
		finally {
			if (!ended) {
				rollbackQuietly(connection, autoCommit);
			}
		}
	}

	private long generatedToken(Connection connection, PreparedStatement executed, String name, int timeout)
			throws SQLException {
		long generated = JdbcLockSupport.lastInsertId(executed);
		if (generated > 0) {
			return generated;
		}
		Long token = queryLong(connection, this.sql.semToken, timeout, name); // the pool row is locked by us
		if (token == null) {
			throw new SQLException("semaphore row '" + name + "' vanished while locked");
		}
		return token;
	}

	private static void rollbackQuietly(Connection connection, boolean autoCommit) {
		try {
			JdbcLockSupport.endTransaction(connection, autoCommit, false, 0);
		}
		catch (SQLException ex) {
			logger.debug("Could not roll back a semaphore transaction; the server ends it when the connection is "
					+ "discarded", ex);
		}
	}

	/**
	 * Creates a pool row as its own statement.
	 * @return {@code false} if it existed already (a duplicate key: another node created it first)
	 */
	private boolean insertPool(Connection connection, String name, int permits, int timeout) throws SQLException {
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.semInsertPool, timeout, false)) {
			ps.setBytes(1, LockRows.bytes(name));
			ps.setInt(2, permits);
			ps.executeUpdate();
			JdbcLockSupport.commitIfNeeded(connection);
			return true;
		}
		catch (SQLException ex) {
			if (!SqlErrors.isDuplicateKey(ex)) {
				throw ex;
			}
			if (!connection.getAutoCommit()) {
				connection.rollback();
			}
			return false;
		}
	}

	/** The configured initial permit count of a pool that has no row. */
	private int configured(String name) {
		Integer permits = this.configuredPermits.get(name);
		if (permits == null) {
			throw new IllegalArgumentException("Semaphore '" + name + "' is unknown: it has no row in the database and "
					+ "no configured permit count. Set " + PERMITS_PROPERTY.formatted(name) + " (use "
					+ "distributed-lock.semaphores[" + name + "].permits for a name with characters other than letters, "
					+ "digits and '-'), or call SemaphoreTemplate.setPermits(\"" + name + "\", n) first");
		}
		return permits;
	}

	@Override
	@SuppressWarnings("NullAway") // a lambda returns null for ConnectionWork<T extends @Nullable Object>: see pom.xml
	public void setPermits(String name, int permits) {
		checkPermits(name, permits);
		this.jdbc.execute("set the permits of semaphore '" + name + "'", (connection) -> {
			int timeout = this.jdbc.statementTimeoutSeconds();
			// 0 matched rows means either no row or (with useAffectedRows=true) an unchanged value: the insert tells
			// the two apart, and after a duplicate key the update is repeated in case another node inserted first
			if (updatePermits(connection, name, permits, timeout) == 0
					&& !insertPool(connection, name, permits, timeout)) {
				updatePermits(connection, name, permits, timeout);
			}
			return null;
		});
	}

	private int updatePermits(Connection connection, String name, int permits, int timeout) throws SQLException {
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.semUpdatePermits, timeout, false)) {
			ps.setInt(1, permits);
			ps.setBytes(2, LockRows.bytes(name));
			int matched = ps.executeUpdate();
			JdbcLockSupport.commitIfNeeded(connection);
			return matched;
		}
	}

	@Override
	public int getPermits(String name) {
		Integer permits = readInt("read the permits", this.sql.semPermits, name);
		return (permits != null) ? permits : configured(name);
	}

	@Override
	public int availablePermits(String name) {
		Integer available = readInt("count the free permits", this.sql.semAvailable, name);
		return Math.max(0, (available != null) ? available : configured(name));
	}

	@Nullable
	private Integer queryInt(Connection connection, String sql, int timeout, String name) throws SQLException {
		Long value = queryLong(connection, sql, timeout, name);
		return (value != null) ? Math.toIntExact(value) : null;
	}

	@Nullable
	private Long queryLong(Connection connection, String sql, int timeout, String name, String... more)
			throws SQLException {
		try (PreparedStatement ps = this.sql.prepareBounded(connection, sql, timeout, false)) {
			ps.setBytes(1, LockRows.bytes(name));
			for (int i = 0; i < more.length; i++) {
				ps.setString(i + 2, more[i]);
			}
			try (ResultSet rs = JdbcLockSupport.query(ps)) {
				return rs.next() ? rs.getLong(1) : null;
			}
		}
	}

	/** A read outside a transaction: committed at once on a pool that hands out connections without autocommit. */
	@Nullable
	@SuppressWarnings("NullAway") // a lambda returns null for ConnectionWork<T extends @Nullable Object>: see pom.xml
	private Integer readInt(String task, String sql, String name) {
		return this.jdbc.execute(task + " of semaphore '" + name + "'", (connection) -> {
			Integer value = queryInt(connection, sql, this.jdbc.statementTimeoutSeconds(), name);
			JdbcLockSupport.commitIfNeeded(connection);
			return value;
		});
	}

	/** A permit just taken (or found again), not renewed yet: renewal starts once its take is known committed. */
	private Permit permit(LockRequest request, String owner, long token, long validUntilNanos) {
		return new Permit(request.resource(), owner, token, request.leaseTime().toNanos(), validUntilNanos);
	}

	/** A take known to be committed: starts its renewal if the request asks for it. */
	private AcquireResult acquired(LockRequest request, Permit permit) {
		if (request.renew()) {
			permit.startRenewal(this.renewals.renewals());
		}
		return AcquireResult.acquired(permit);
	}

	/**
	 * This owner's live holder row, as a permit valid for the row's remaining lease on the server's clock (counted
	 * from {@code sentAt}, taken before the query, so that it errs early).
	 * @return the permit, or {@code null} if this owner has no live row
	 */
	@Nullable
	private Permit ownPermit(Connection connection, LockRequest request, String owner, int timeout, long sentAt)
			throws SQLException {
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.semOwnPermit, timeout, false)) {
			ps.setBytes(1, LockRows.bytes(request.resource()));
			ps.setString(2, owner);
			try (ResultSet rs = JdbcLockSupport.query(ps)) {
				if (!rs.next()) {
					return null;
				}
				long remainingNanos = TimeUnit.MICROSECONDS.toNanos(Math.max(0, rs.getLong(2)));
				return permit(request, owner, rs.getLong(1), sentAt + remainingNanos);
			}
		}
	}

	/**
	 * The last look, when the deadline has passed after an attempt whose outcome is unknown: one query on a fresh
	 * connection for this owner's live holder row.
	 * @return the permit if the row is there, else {@code null} (also if the database cannot be asked: the row, if
	 * any, then ends with its lease, unrenewed)
	 */
	@Nullable
	@SuppressWarnings("NullAway") // a lambda returns null for ConnectionWork<T extends @Nullable Object>: see pom.xml
	private Permit lastLookForOwnPermit(LockRequest request, String owner) {
		try {
			return this.jdbc.execute("look for the unacknowledged permit of semaphore '" + request.resource() + "'",
					TimeUnit.SECONDS.toNanos(1), (connection) -> {
						Permit found = ownPermit(connection, request, owner, this.jdbc.queryTimeoutSeconds(0),
								System.nanoTime());
						JdbcLockSupport.commitIfNeeded(connection);
						return found;
					});
		}
		catch (RuntimeException ex) {
			logger.warn("Could not look for a permit of semaphore '" + request.resource() + "' whose take may have "
					+ "committed unacknowledged; if it did, it ends with its lease (" + request.leaseTime().toMillis()
					+ " ms), unrenewed: " + ex);
			return null;
		}
	}

	/**
	 * How long a permit's holder row still runs on the server's clock, by a plain read.
	 * @return microseconds (0 or less: expired), or {@code null} if the row is gone
	 */
	@Nullable
	@SuppressWarnings("NullAway") // a lambda returns null for ConnectionWork<T extends @Nullable Object>: see pom.xml
	private Long ownRemainingMicros(Permit permit) {
		return this.jdbc.execute("look for the holder row of a permit of semaphore '" + permit.resource + "'",
				(connection) -> {
					Long remaining = queryLong(connection, this.sql.semOwnRemaining, this.jdbc.statementTimeoutSeconds(),
							permit.resource, permit.ownerToken);
					JdbcLockSupport.commitIfNeeded(connection);
					return remaining;
				});
	}

	private int ownerStatement(String sql, String task, Permit permit, long leaseMicros) {
		return this.jdbc.execute(task + " a permit of semaphore '" + permit.resource + "'", (connection) -> {
			try (PreparedStatement ps = this.sql.prepareBounded(connection, sql, this.jdbc.statementTimeoutSeconds(), false)) {
				int index = 1;
				if (leaseMicros >= 0) {
					ps.setLong(index++, leaseMicros);
				}
				ps.setBytes(index++, LockRows.bytes(permit.resource));
				ps.setString(index, permit.ownerToken);
				int matched = ps.executeUpdate();
				JdbcLockSupport.commitIfNeeded(connection);
				return matched;
			}
		});
	}

	/**
	 * The outcome of one attempt.
	 * @param permit the permit, when taken
	 * @param busy a description of the full pool, when not
	 * @param outcomeUnknown whether the attempt may have committed a take it did not hear of
	 */
	private record Attempt(@Nullable Permit permit, @Nullable String busy, boolean outcomeUnknown) {

		Attempt(@Nullable Permit permit, @Nullable String busy) {
			this(permit, busy, false);
		}

	}

	/** One held permit: a lease on a holder row, renewed on the shared scheduler. */
	private final class Permit extends RereadableLease {

		Permit(String name, String ownerToken, long fencingToken, long leaseNanos, long validUntilNanos) {
			super(name, ownerToken, fencingToken, leaseNanos, validUntilNanos);
		}

		@Override
		String describe() {
			return "a permit of semaphore '" + this.resource + "'";
		}

		@Override
		boolean renewInDatabase() {
			return ownerStatement(JdbcSemaphoreProvider.this.sql.semRenew, "renew", this,
					TimeUnit.NANOSECONDS.toMicros(this.leaseNanos)) == 1;
		}

		@Override
		boolean releaseStatement() {
			return ownerStatement(JdbcSemaphoreProvider.this.sql.semRelease, "release", this, -1) == 1;
		}

		@Override
		@Nullable
		Long remainingMicrosInDatabase() {
			return ownRemainingMicros(this);
		}

		@Override
		String lostConsequence() {
			return "another owner may have been admitted in its place";
		}

	}

}
