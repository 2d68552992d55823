package io.github.dblock.jdbc.lease;

import io.github.dblock.jdbc.sql.CallDeadline;
import io.github.dblock.jdbc.sql.InsertIds;
import io.github.dblock.jdbc.sql.JdbcLockSupport;
import io.github.dblock.jdbc.sql.JdbcWait;
import io.github.dblock.jdbc.sql.LockRows;
import io.github.dblock.jdbc.sql.LockStatements;
import io.github.dblock.jdbc.sql.LockTable;
import io.github.dblock.jdbc.sql.SqlErrors;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import io.github.dblock.LockLostException;
import io.github.dblock.jdbc.lease.HeldPermits.Permit;
import io.github.dblock.semaphore.SemaphoreProvider;
import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.wait.Backoff;
import io.github.dblock.wait.WaitLoop;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.dao.DataAccessException;
import org.springframework.dao.PessimisticLockingFailureException;
import org.springframework.jdbc.CannotGetJdbcConnectionException;

/**
 * Distributed semaphores on {@code <table>_sem} (one row per pool: permit count and fencing token) and
 * {@code <table>_sem_hold} (one row per held permit: owner token, holder, fencing token, lease on the server's clock).
 * <p>
 * An acquisition attempt is one short transaction on a connection of its own, never the caller's: it locks the
 * pool's row ({@code FOR UPDATE} by primary key), counts the live holders with a locking read, deletes expired ones
 * and, below the permit count, advances the pool's fencing token and inserts the holder row. Between attempts the
 * caller backs off with jitter until its deadline. Release deletes the owner's live row; renewal (every third of the
 * lease, when asked for) extends it after locking the pool's row. Changing the permit count never revokes a permit.
 * Statements, unknown outcomes and failed releases: see
 * docs/DESIGN.md, "Semaphores" and "Unknown outcomes and failed releases of read/write leases and permits".
 * <p>
 * Relies on InnoDB row locks and locking reads. Deadlocks and lock wait timeouts are retried; a release whose lease
 * was over before it began throws {@link LockLostException}; other errors surface as {@link DataAccessException}.
 * Lost permits run their {@link HeldLock#onLost} callbacks. Thread-safe.
 */
public class JdbcSemaphoreProvider implements SemaphoreProvider {

	private static final Log logger = LogFactory.getLog(JdbcSemaphoreProvider.class);

	/** The configuration property holding a pool's initial permit count, with {@code %s} for the name. */
	public static final String PERMITS_PROPERTY = SemaphorePools.PERMITS_PROPERTY;

	private final JdbcLockSupport jdbc;

	private final WaitLoop waits;

	private final LeaseLockProvider renewals;

	private final SemaphorePools pools;

	/** The permits once taken: renewal, release, the look at their rows. */
	private final HeldPermits held;

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
		configuredPermits.forEach(SemaphorePools::checkPermits);
		this.jdbc = new JdbcLockSupport(dataSource, statementTimeout);
		this.waits = new WaitLoop(backoff, logger);
		this.renewals = renewals;
		this.sql = LockStatements.of(table, renewals.dialect());
		this.pools = new SemaphorePools(this.jdbc, this.sql, configuredPermits, poolTable(table));
		this.held = new HeldPermits(this.jdbc, this.sql, this.pools);
	}

	/** The quoted name of the pool table of a lock table. */
	static String poolTable(LockTable table) {
		return '`' + table.name() + "_sem`";
	}

	/** The quoted name of the holder table of a lock table. */
	static String holdTable(LockTable table) {
		return '`' + table.name() + "_sem_hold`";
	}

	/**
	 * Creates the row of every configured pool that has none yet; existing rows keep their permit count (it may
	 * have been changed at run time). Called once at start-up.
	 * @throws IllegalStateException if the semaphore tables do not exist (migrations off and {@code V3} not applied)
	 * @throws DataAccessException if the database fails otherwise
	 */
	public void createConfiguredPools() {
		this.pools.createConfigured();
	}

	@Override
	public AcquireResult acquire(LockRequest request) throws InterruptedException {
		return this.waits.run(request::remainingNanos, new PermitWait(request, this.jdbc.acquisitionDeadline(request)));
	}

	/**
	 * One acquisition's wait. One owner token serves it all: a take whose {@code COMMIT} reply was lost is found
	 * again by it.
	 */
	private final class PermitWait implements JdbcWait<Attempt, AcquireResult> {

		private final LockRequest request;

		private final String owner = UUID.randomUUID().toString();

		/** The call's: bounds every pool wait and reply of the attempts and the last look. */
		private final CallDeadline deadline;

		/** Whether an earlier attempt may have committed a take without our hearing of it. */
		private boolean uncertain;

		PermitWait(LockRequest request, CallDeadline deadline) {
			this.request = request;
			this.deadline = deadline;
		}

		@Override
		public Attempt attempt(int attempt) {
			boolean checkOwn = this.uncertain;
			Attempt result = JdbcSemaphoreProvider.this.jdbc.execute(
					// the attempts leave the end of the deadline to the last look for a take whose reply was lost
					"acquire a permit of semaphore '" + this.request.resource() + "'", this.deadline.lessLastLook(),
					(connection) -> attemptOnce(connection, this.request, this.owner, checkOwn));
			this.uncertain = result.outcomeUnknown;
			if (result.permit != null && LateLeases.arrivedLate(result.permit)) {
				this.uncertain = true; // if the give-back failed, the next attempt finds this owner's permit first
				return new Attempt(null, LateLeases.giveBack(this.request, result.permit));
			}
			return result;
		}

		@Override
		@Nullable
		public Attempt contended(DataAccessException ex) {
			// deadlocks (gap locks of a neighbouring pool's acquisition) that outlasted the retries, or a lock wait
			// timeout: the pool is contended, not broken (a rolled-back attempt took nothing); try again
			return (ex instanceof PessimisticLockingFailureException) ? new Attempt(null, null) : null;
		}

		@Override
		public Attempt afterOutage(DataAccessException ex) {
			this.uncertain = true;
			return new Attempt(null, null);
		}

		@Override
		public AcquireResult outageAtDeadline(DataAccessException ex) {
			// an attempt that got no connection sent nothing: no permit of ours to look for
			Permit own = (ex instanceof CannotGetJdbcConnectionException) ? null
					: lastLookForOwnPermit(this.request, this.owner, this.deadline);
			// reached, but no answer in time: not acquired, with the cause (as for locks)
			return (own != null) ? acquired(this.request, own) : JdbcWait.timedOutUnlessUnreachable(ex);
		}

		@Override
		@Nullable
		public AcquireResult result(Attempt outcome) {
			return (outcome.permit != null) ? acquired(this.request, outcome.permit) : null;
		}

		@Override
		public AcquireResult atDeadline(Attempt outcome) {
			Permit own = this.uncertain ? lastLookForOwnPermit(this.request, this.owner, this.deadline) : null;
			return (own != null) ? acquired(this.request, own) : AcquireResult.busy(outcome.busy);
		}

		@Override
		public String waitingFor() {
			return "acquiring a permit of '" + this.request.resource() + "'";
		}

	}

	/** One attempt: one short transaction on the pool's row (see the class comment). */
	private Attempt attemptOnce(Connection connection, LockRequest request, String owner, boolean checkOwn)
			throws SQLException {
		String name = request.resource();
		int timeout = this.jdbc.queryTimeoutSeconds(request.remainingNanos());
		long sentAt = System.nanoTime();
		AttemptTransaction tx = new AttemptTransaction(connection, timeout);
		try {
			return attemptInTransaction(tx, request, owner, checkOwn, sentAt);
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
			tx.rollbackUnlessEnded();
		}
	}

	private Attempt attemptInTransaction(AttemptTransaction tx, LockRequest request, String owner, boolean checkOwn,
			long sentAt) throws SQLException {
		String name = request.resource();
		int timeout = tx.timeout;
		tx.begin();
		Integer permits = this.pools.queryInt(tx.connection, this.sql.semaphore.semLockPool, timeout, name);
		if (permits == null) {
			tx.end(false);
			this.pools.insert(tx.connection, name, this.pools.configured(name), timeout);
			return attemptOnce(tx.connection, request, owner, checkOwn);
		}
		Holders holders = countHolders(tx, name, owner);
		if (holders.own && checkOwn) {
			// an earlier attempt of this acquisition committed, but its reply was lost or late
			Permit found = ownPermit(tx.connection, request, owner, timeout, sentAt);
			tx.end(true);
			// else it expired between the two reads: the next attempt takes a new one
			return (found != null) ? new Attempt(found, null)
					: new Attempt(null, "the permit of an unacknowledged take expired", true);
		}
		if (holders.expired > 0) {
			try (PreparedStatement ps = this.sql.prepareBounded(tx.connection, this.sql.semaphore.semDeleteExpired, timeout, false)) {
				ps.setBytes(1, LockRows.bytes(name));
				ps.executeUpdate();
			}
		}
		int live = holders.count - holders.expired;
		if (live >= permits) {
			tx.end(holders.expired > 0);
			return new Attempt(null, "all " + permits + " permits of semaphore '" + name + "' held (" + live
					+ " live holders)");
		}
		return take(tx, request, owner, sentAt);
	}

	/** Step 2: the pool's holder rows, by a locking read. */
	private Holders countHolders(AttemptTransaction tx, String name, String owner) throws SQLException {
		try (PreparedStatement ps = this.sql.prepareBounded(tx.connection, this.sql.semaphore.semCount, tx.timeout, false)) {
			ps.setString(1, owner);
			ps.setBytes(2, LockRows.bytes(name));
			try (ResultSet rs = JdbcLockSupport.query(ps)) {
				rs.next();
				return new Holders(rs.getInt(1), rs.getInt(2), rs.getInt(3) == 1);
			}
		}
	}

	/** Step 4 and 5: the pool's next fencing token, the holder row, {@code COMMIT}. */
	private Attempt take(AttemptTransaction tx, LockRequest request, String owner, long sentAt) throws SQLException {
		String name = request.resource();
		long token;
		try (PreparedStatement ps = this.sql.prepareBounded(tx.connection, this.sql.semaphore.semNextToken, tx.timeout, true)) {
			ps.setBytes(1, LockRows.bytes(name));
			ps.executeUpdate();
			token = generatedToken(tx.connection, ps, name, tx.timeout);
		}
		try (PreparedStatement ps = this.sql.prepareBounded(tx.connection, this.sql.semaphore.semInsertHold, tx.timeout, false)) {
			ps.setBytes(1, LockRows.bytes(name));
			ps.setString(2, owner);
			ps.setString(3, request.holder());
			ps.setLong(4, token);
			ps.setLong(5, TimeUnit.NANOSECONDS.toMicros(request.leaseTime().toNanos()));
			ps.executeUpdate();
		}
		tx.end(true);
		return new Attempt(this.held.permit(request, owner, token, sentAt + request.leaseTime().toNanos()), null);
	}

	private long generatedToken(Connection connection, PreparedStatement executed, String name, int timeout)
			throws SQLException {
		long generated = InsertIds.lastInsertId(executed);
		if (generated > 0) {
			return generated;
		}
		Long token = this.pools.queryLong(connection, this.sql.semaphore.semToken, timeout, name); // the pool row is locked by us
		if (token == null) {
			throw new SQLException("semaphore row '" + name + "' vanished while locked");
		}
		return token;
	}

	@Override
	public void setPermits(String name, int permits) {
		this.pools.setPermits(name, permits);
	}

	@Override
	public int getPermits(String name) {
		return this.pools.getPermits(name);
	}

	@Override
	public int availablePermits(String name) {
		return this.pools.availablePermits(name);
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
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.semaphore.semOwnPermit, timeout, false)) {
			ps.setBytes(1, LockRows.bytes(request.resource()));
			ps.setString(2, owner);
			try (ResultSet rs = JdbcLockSupport.query(ps)) {
				if (!rs.next()) {
					return null;
				}
				long remainingNanos = TimeUnit.MICROSECONDS.toNanos(Math.max(0, rs.getLong(2)));
				return this.held.permit(request, owner, rs.getLong(1), sentAt + remainingNanos);
			}
		}
	}

	/** {@link LateLeases#lastLook} for this owner's holder row of the semaphore. */
	@SuppressWarnings("NullAway") // a lambda returns null for ConnectionWork<T extends @Nullable Object>: see pom.xml
	private @Nullable Permit lastLookForOwnPermit(LockRequest request, String owner, CallDeadline deadline) {
		return LateLeases.lastLook(this.jdbc, "a permit of semaphore '" + request.resource() + "'", request, deadline,
				(connection) -> ownPermit(connection, request, owner, this.jdbc.queryTimeoutSeconds(0),
						System.nanoTime()));
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

	/** What step 2 found: the pool's holder rows, the expired ones among them, and whether one is this owner's. */
	private record Holders(int count, int expired, boolean own) {
	}


}
