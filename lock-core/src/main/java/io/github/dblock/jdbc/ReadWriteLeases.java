package io.github.dblock.jdbc;

import io.github.dblock.spi.Backoff;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import io.github.dblock.LockLostException;
import io.github.dblock.LockType;
import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.spi.TransactionCheckedLock;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.dao.DataAccessException;

/**
 * Read/write (shared/exclusive) leases for {@link io.github.dblock.LockMode#LEASE}: {@link LockType#READ} and
 * {@link LockType#WRITE} locks in the tables {@code <table>_rw} (one row per resource: fencing token counter and
 * writer intent, never deleted) and {@code <table>_rw_hold} (one row per holder: owner token, kind, lease).
 * <p>
 * One acquisition attempt is one short transaction:
 * <ol>
 * <li>{@code SELECT fencing_token, intent_owner, intent_expires_at > UTC_TIMESTAMP(6), intent_holder FROM _rw WHERE
 * resource = ? FOR UPDATE}: locks the resource's row, so acquisitions of one resource are serialized (releases and
 * renewals touch only the holder's own row and need no such lock). No row: it is created by a separate
 * {@code INSERT} (a duplicate-key error means another node created it first) and the attempt starts again.</li>
 * <li>If another owner's writer intent is live (its {@code intent_expires_at} is after the server's now), the
 * attempt is busy: new readers and other writers stay out while a writer waits (writer preference).</li>
 * <li>{@code SELECT kind, holder, ... FROM _rw_hold WHERE resource = ? AND owner_token <> ? AND expires_at >
 * UTC_TIMESTAMP(6)}, writers first: a reader is busy if a live writer is found, a writer if any live holder is.
 * This plain read sees every holder committed before the row lock of step 1 was granted: under READ COMMITTED it
 * reads the latest committed rows, and under REPEATABLE READ the transaction's snapshot is taken by its first
 * consistent (non-locking) read, which is this one, after the locking read of step 1.</li>
 * <li>Not busy: {@code UPDATE _rw SET fencing_token = <read + 1>} (clearing the intent if it is the caller's own),
 * {@code INSERT} the holder row with a lease of {@code UTC_TIMESTAMP(6) + lease}, {@code COMMIT}.</li>
 * <li>Busy, for a writer that may still wait: set (or refresh) its intent, {@code intent_expires_at =
 * UTC_TIMESTAMP(6) + intent time}, {@code COMMIT}. The writer refreshes it with every attempt, and clears it when
 * it gives up ({@code UPDATE ... WHERE intent_owner = ?}); if it dies, the intent ends with its intent time.</li>
 * </ol>
 * Between attempts the caller sleeps with backoff and jitter (never longer than a fifth of the intent time, so a
 * waiting writer's intent never lapses). Renewal (every third of the lease, on the lease provider's scheduler) is
 * {@code UPDATE _rw_hold SET expires_at = ... WHERE resource = ? AND owner_token = ? AND expires_at >
 * UTC_TIMESTAMP(6)}; release is {@code DELETE} of the holder's row on the same condition (or, with a minimum hold
 * time, an {@code UPDATE} of its expiry). A crashed holder's row stops counting when its lease ends; the cleanup
 * job deletes such rows later. Deadlocks and lock wait timeouts are retried; broken connections are retried until
 * the deadline with the same owner token.
 * <p>
 * A release statement that fails (other than a broken connection while the lease is still valid, which
 * {@link RenewableLease#release()} retries) is followed by a plain read of the holder row: a row still live is the
 * failure it is ({@link DataAccessException}); a row gone or expired is a lease that is over, which counts as
 * released if the release began while the lease was valid by this JVM's clock, and as lost
 * ({@link LockLostException}, with the failure as its cause) if it began later.
 * <p>
 * An attempt whose outcome is unknown (its connection broke, or a statement timed out: a {@code COMMIT} whose reply
 * came after the query timeout did commit) may have left a holder row of this owner. The next attempt, and when the
 * deadline has passed one last look on a fresh connection, first looks for that row by owner token and, if its lease
 * still runs, returns it as the lock, valid for the row's remaining lease on the server's clock (an expired one is
 * deleted); so an unknown outcome is never reported as busy while its lease stays behind. Renewal starts only
 * once a grant is known committed, so that no renewal outlives an attempt nobody holds the result of. If even the
 * last look fails, the row ends with its lease, unrenewed.
 * <p>
 * Thread-safe.
 */
final class ReadWriteLeases {

	private static final Log logger = LogFactory.getLog(ReadWriteLeases.class);

	private static final String READ = "R";

	private static final String WRITE = "W";

	/** Bound on immediate re-attempts after a lost race to create a resource's row. */
	private static final int MAX_RACES_PER_ATTEMPT = 4;

	private final JdbcLockSupport jdbc;

	private final Backoff backoff;

	private final Supplier<ScheduledExecutorService> renewals;

	/** How long a waiting writer's intent holds without refresh, in microseconds. */
	private final long intentMicros;

	/** Every statement, in the lease provider's dialect. */
	private final LockStatements sql;

	/** Where commit checks run: the transaction of the lease provider's data source, and its cluster topology. */
	private final LeaseLockProvider transactions;

	/**
	 * @param jdbc the lock data source's statement support
	 * @param sql the lease provider's statements (the read/write tables are named after the lock table)
	 * @param backoff pauses between attempts
	 * @param renewals the lease provider's shared renewal scheduler
	 * @param transactions the lease provider, which runs commit checks in the application's transaction
	 */
	ReadWriteLeases(JdbcLockSupport jdbc, LockStatements sql, Backoff backoff,
			Supplier<ScheduledExecutorService> renewals, LeaseLockProvider transactions) {
		this.jdbc = jdbc;
		this.transactions = transactions;
		this.backoff = backoff;
		this.renewals = renewals;
		// at least 5 of the longest pauses between a waiting writer's attempts, and at least 2 s
		this.intentMicros = Math.max(TimeUnit.SECONDS.toMicros(2), 5 * backoff.max().toNanos() / 1000);
		this.sql = sql;
	}

	/** The statements of a write lease's commit check, in order (tests). */
	java.util.List<String> commitCheckSql() {
		return this.transactions.isMultiPrimary() ? java.util.List.of(this.sql.rwTouchResource, this.sql.rwLockHold)
				: java.util.List.of(this.sql.rwLockHold);
	}

	/**
	 * Runs the commit check of a write lease on the transaction's connection (see the class comment).
	 * @return whether the holder row is still the lease's and live (and now locked by the transaction)
	 */
	private boolean lockHoldInTransaction(Lease lease) {
		return this.transactions.inTransaction("check the write lock '" + lease.resource + "' at commit",
				(connection, timeout) -> {
					byte[] key = LockRows.bytes(lease.resource);
					if (this.transactions.isMultiPrimary()) {
						try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.rwTouchResource,
								timeout, false)) {
							ps.setBytes(1, key);
							ps.executeUpdate(); // if the lease is not ours any more, the transaction rolls back anyway
						}
					}
					try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.rwLockHold, timeout,
							false)) {
						ps.setBytes(1, key);
						ps.setString(2, lease.ownerToken);
						try (ResultSet rs = JdbcLockSupport.query(ps)) {
							return rs.next();
						}
					}
				});
	}

	/** How long a waiting writer's intent keeps new readers out without being refreshed. */
	Duration intentTime() {
		return Duration.ofNanos(TimeUnit.MICROSECONDS.toNanos(this.intentMicros));
	}

	/**
	 * Takes a read or write lock for a new owner, waiting until the request's deadline (see the class comment).
	 * @throws IllegalArgumentException for {@link LockType#EXCLUSIVE}
	 */
	AcquireResult acquire(LockRequest request, LockType type) throws InterruptedException {
		if (type != LockType.READ && type != LockType.WRITE) {
			throw new IllegalArgumentException("Read/write leases are READ or WRITE, not " + type);
		}
		String kind = (type == LockType.READ) ? READ : WRITE;
		String owner = UUID.randomUUID().toString();
		boolean intentSet = false;
		// whether an earlier attempt may have committed a grant without our hearing of it
		boolean recovering = false;
		int outages = 0;
		try {
			for (int attempt = 0;; attempt++) {
				Attempt result;
				boolean mayWait = kind.equals(WRITE) && request.remainingNanos() > 0;
				// set before the attempt: an intent whose commit reply is lost must still be cleared (clearing one
				// that was never set matches nothing)
				intentSet |= mayWait;
				try {
					result = attemptOnce(request, kind, owner, recovering, mayWait);
					recovering = result.outcomeUnknown;
				}
				catch (org.springframework.dao.PessimisticLockingFailureException ex) {
					// deadlocks (gap locks of a neighbouring resource's acquisition) that outlasted the retries, or a
					// lock wait timeout: the lock is contended, not broken; try again until the wait time ends
					result = Attempt.NONE;
				}
				catch (DataAccessException ex) {
					if (!SqlErrors.isConnectionFailure(ex) && !SqlErrors.isTooSlow(ex)) {
						throw ex;
					}
					if (request.remainingNanos() <= 0) {
						// an attempt that got no connection sent nothing: no grant of ours to look for
						HeldLock own = (ex instanceof org.springframework.jdbc.CannotGetJdbcConnectionException) ? null
								: lastLookForOwnHold(request, kind, owner);
						if (own != null) {
							return acquired(request, own); // any intent of ours is cleared below (a no-op if granted)
						}
						if (!SqlErrors.isUnreachable(ex)) {
							// reached, but no answer in time: not acquired, with the cause (as for exclusive leases)
							return AcquireResult.timedOut(null, ex);
						}
						throw ex;
					}
					if (outages++ == 0) {
						logger.warn("Lost the connection to the lock database while acquiring the " + type + " lock '"
								+ request.resource() + "'; retrying until the wait time ends: " + ex.getMostSpecificCause());
					}
					recovering = true;
					result = Attempt.NONE;
				}
				intentSet |= result.intentSet;
				if (result.lock != null) {
					intentSet = false; // the grant cleared it
					return acquired(request, result.lock);
				}
				long remaining = request.remainingNanos();
				if (remaining <= 0) {
					HeldLock own = recovering ? lastLookForOwnHold(request, kind, owner) : null;
					if (own != null) {
						return acquired(request, own); // any intent of ours is cleared below (a no-op if granted)
					}
					return AcquireResult.busy(result.holderDescription);
				}
				if (Thread.interrupted()) {
					throw new InterruptedException();
				}
				long pause = Math.min(this.backoff.pauseNanos(attempt, result.leaseRemainingNanos, remaining),
						TimeUnit.MICROSECONDS.toNanos(this.intentMicros) / 5);
				TimeUnit.NANOSECONDS.sleep(pause);
			}
		}
		finally {
			if (intentSet) {
				// at once, so that readers are not held back by a writer that gave up (one statement, bounded like
				// every other: the connection within one statement timeout, the reply within it plus the margin)
				clearIntentQuietly(request.resource(), owner);
			}
		}
	}

	@SuppressWarnings("NullAway") // a lambda returns null for ConnectionWork<T extends @Nullable Object>: see pom.xml
	private Attempt attemptOnce(LockRequest request, String kind, String owner, boolean recovering, boolean mayWait) {
		long leaseMicros = TimeUnit.NANOSECONDS.toMicros(request.leaseTime().toNanos());
		byte[] key = LockRows.bytes(request.resource());
		return this.jdbc.execute("acquire " + (kind.equals(READ) ? "read" : "write") + " lock '" + request.resource()
				+ "'", this.jdbc.connectionTimeoutNanos(request.remainingNanos()), (connection) -> {
					int timeout = this.jdbc.queryTimeoutSeconds(request.remainingNanos());
					long sentAt = System.nanoTime();
					if (recovering) {
						Attempt own = ownHold(connection, request, key, owner, kind, timeout, sentAt);
						if (own != null) {
							return own;
						}
					}
					for (int race = 0; race < MAX_RACES_PER_ATTEMPT; race++) {
						Attempt attempt;
						try {
							attempt = JdbcLockSupport.inShortTransaction(connection, timeout,
									(c) -> decide(c, request, key, kind, owner, leaseMicros, mayWait, timeout, sentAt));
						}
						catch (SQLException ex) {
							if (!SqlErrors.isStatementTimeout(ex)) {
								throw ex;
							}
							// waited for the row lock the whole query timeout, or a COMMIT whose reply came late: the
							// outcome is unknown, and the next attempt (or the last look) looks for our own row first
							return new Attempt(null, "a transaction holding the read/write row lock", 0, false, true);
						}
						if (attempt != null) {
							return attempt;
						}
						createRow(connection, key, timeout);
					}
					return Attempt.NONE;
				});
	}

	/** Steps 1 to 5 of the class comment, in the caller's transaction; {@code null} if the row does not exist. */
	@Nullable
	private Attempt decide(Connection connection, LockRequest request, byte[] key, String kind, String owner,
			long leaseMicros, boolean mayWait, int timeout, long sentAt) throws SQLException {
		long token;
		boolean ownIntent;
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.rwLockRow, timeout, false)) {
			ps.setBytes(1, key);
			try (ResultSet rs = JdbcLockSupport.query(ps)) {
				if (!rs.next()) {
					return null;
				}
				token = rs.getLong(1);
				String intentOwner = rs.getString(2);
				boolean intentLive = rs.getBoolean(3);
				ownIntent = owner.equals(intentOwner);
				if (intentLive && !ownIntent) {
					return new Attempt(null, "a writer waiting for the lock: " + rs.getString(4), 0, false);
				}
			}
		}
		String holder = null;
		long holderRemaining = 0;
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.rwHolders, timeout, false)) {
			ps.setBytes(1, key);
			ps.setString(2, owner);
			ps.setString(3, kind.equals(READ) ? WRITE : READ);
			try (ResultSet rs = JdbcLockSupport.query(ps)) {
				if (rs.next()) {
					holderRemaining = TimeUnit.MICROSECONDS.toNanos(Math.max(0, rs.getLong(3)));
					holder = rs.getString(2) + " (" + (WRITE.equals(rs.getString(1)) ? "write" : "read")
							+ " lock, lease ends in " + TimeUnit.NANOSECONDS.toMillis(holderRemaining) + " ms)";
				}
			}
		}
		if (holder == null) {
			long next = token + 1;
			try (PreparedStatement ps = this.sql.prepareBounded(connection, ownIntent ? this.sql.rwGrantClearingIntent : this.sql.rwGrant, timeout, false)) {
				ps.setLong(1, next);
				ps.setBytes(2, key);
				ps.executeUpdate();
			}
			try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.rwInsertHold, timeout, false)) {
				ps.setBytes(1, key);
				ps.setString(2, owner);
				ps.setString(3, kind);
				ps.setString(4, request.holder());
				ps.setLong(5, next);
				ps.setLong(6, leaseMicros);
				ps.executeUpdate();
			}
			return new Attempt(leased(request, owner, kind, next, sentAt + request.leaseTime().toNanos()), null, 0, false);
		}
		if (mayWait) {
			try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.rwIntent, timeout, false)) {
				ps.setString(1, owner);
				ps.setString(2, request.holder());
				ps.setLong(3, this.intentMicros);
				ps.setBytes(4, key);
				ps.executeUpdate();
			}
			return new Attempt(null, holder, holderRemaining, true);
		}
		return new Attempt(null, holder, holderRemaining, false);
	}

	/**
	 * After an attempt whose outcome is unknown: the holder row an unacknowledged commit of this owner left, if its
	 * lease still runs, as a lock valid for the row's remaining lease (not yet renewed); an expired one is deleted.
	 * @return the lock, or {@code null} if this owner has no live row
	 */
	@Nullable
	private Attempt ownHold(Connection connection, LockRequest request, byte[] key, String owner, String kind,
			int timeout, long sentAt) throws SQLException {
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.rwOwnHold, timeout, false)) {
			ps.setBytes(1, key);
			ps.setString(2, owner);
			try (ResultSet rs = JdbcLockSupport.query(ps)) {
				if (rs.next()) {
					long remaining = TimeUnit.MICROSECONDS.toNanos(rs.getLong(2));
					return new Attempt(leased(request, owner, kind, rs.getLong(1), sentAt + remaining), null, 0, false);
				}
			}
		}
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.rwDropOwnExpired, timeout, false)) {
			ps.setBytes(1, key);
			ps.setString(2, owner);
			ps.executeUpdate();
			JdbcLockSupport.commitIfNeeded(connection);
		}
		return null;
	}

	private void createRow(Connection connection, byte[] key, int timeout) throws SQLException {
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.rwCreateRow, timeout, false)) {
			ps.setBytes(1, key);
			ps.executeUpdate();
			JdbcLockSupport.commitIfNeeded(connection);
		}
		catch (SQLException ex) {
			if (!SqlErrors.isDuplicateKey(ex)) {
				throw ex;
			}
			if (!connection.getAutoCommit()) {
				connection.rollback();
			}
		}
	}

	@SuppressWarnings("NullAway") // a lambda returns null for ConnectionWork<T extends @Nullable Object>: see pom.xml
	private void clearIntentQuietly(String resource, String owner) {
		try {
			this.jdbc.execute("clear the writer intent of '" + resource + "'", (connection) -> {
				try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.rwClearIntent, this.jdbc.statementTimeoutSeconds(), false)) {
					ps.setBytes(1, LockRows.bytes(resource));
					ps.setString(2, owner);
					ps.executeUpdate();
					JdbcLockSupport.commitIfNeeded(connection);
					return null;
				}
			});
		}
		catch (RuntimeException ex) {
			logger.warn("Could not clear the intent of a writer that gave up waiting for '" + resource + "'; new readers "
					+ "wait until it ends (" + intentTime().toMillis() + " ms)", ex);
		}
	}

	/**
	 * The last look, when the deadline has passed after an attempt whose outcome is unknown: one query on a fresh
	 * connection for this owner's live holder row.
	 * @return the lock if the row is there, else {@code null} (also if the database cannot be asked: the row, if
	 * any, then ends with its lease, unrenewed)
	 */
	@Nullable
	@SuppressWarnings("NullAway") // a lambda returns null for ConnectionWork<T extends @Nullable Object>: see pom.xml
	private HeldLock lastLookForOwnHold(LockRequest request, String kind, String owner) {
		try {
			Attempt own = this.jdbc.execute("look for the unacknowledged " + (kind.equals(READ) ? "read" : "write")
					+ " lock '" + request.resource() + "'", TimeUnit.SECONDS.toNanos(1), (connection) -> ownHold(connection, request,
							LockRows.bytes(request.resource()), owner, kind, this.jdbc.queryTimeoutSeconds(0),
							System.nanoTime()));
			return (own != null) ? own.lock : null;
		}
		catch (RuntimeException ex) {
			logger.warn("Could not look for a read/write lock of '" + request.resource() + "' whose grant may have "
					+ "committed unacknowledged; if it did, it ends with its lease (" + request.leaseTime().toMillis()
					+ " ms), unrenewed: " + ex);
			return null;
		}
	}

	/** A grant known to be committed: starts its renewal if the request asks for it. */
	private AcquireResult acquired(LockRequest request, HeldLock lock) {
		if (request.renew()) {
			((Lease) lock).startRenewal(this.renewals.get());
		}
		return AcquireResult.acquired(lock);
	}

	/** A lock just taken (or found again), not renewed yet: renewal starts once its grant is known committed. */
	private HeldLock leased(LockRequest request, String owner, String kind, long token, long validUntilNanos) {
		return kind.equals(WRITE)
				? new WriteLease(request.resource(), owner, token, request.leaseTime().toNanos(), request.minHoldMicros(),
						validUntilNanos)
				: new Lease(request.resource(), owner, kind, token, request.leaseTime().toNanos(), request.minHoldMicros(),
						validUntilNanos);
	}

	/**
	 * How long a lease's holder row still runs on the server's clock, by a plain read.
	 * @return microseconds (0 or less: expired), or {@code null} if the row is gone
	 */
	@Nullable
	@SuppressWarnings("NullAway") // a lambda returns null for ConnectionWork<T extends @Nullable Object>: see pom.xml
	private Long ownRemainingMicros(Lease lease) {
		return this.jdbc.execute("look for the holder row of '" + lease.resource + "'", (connection) -> {
			try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.rwOwnRemaining, this.jdbc.statementTimeoutSeconds(), false)) {
				ps.setBytes(1, LockRows.bytes(lease.resource));
				ps.setString(2, lease.ownerToken);
				try (ResultSet rs = JdbcLockSupport.query(ps)) {
					Long remaining = rs.next() ? rs.getLong(1) : null;
					JdbcLockSupport.commitIfNeeded(connection);
					return remaining;
				}
			}
		});
	}

	private int update(String task, String sql, Lease lease, long micros) {
		return this.jdbc.execute(task + " '" + lease.resource + "'", (connection) -> {
			try (PreparedStatement ps = this.sql.prepareBounded(connection, sql, this.jdbc.statementTimeoutSeconds(), false)) {
				int index = 1;
				if (micros >= 0) {
					ps.setLong(index++, micros);
				}
				ps.setBytes(index++, LockRows.bytes(lease.resource));
				ps.setString(index, lease.ownerToken);
				int matched = ps.executeUpdate();
				JdbcLockSupport.commitIfNeeded(connection);
				return matched;
			}
		});
	}

	/**
	 * The result of one attempt.
	 * @param lock the lock, when taken
	 * @param holderDescription what kept it, when busy and known
	 * @param leaseRemainingNanos how long that holder's lease still runs, 0 if unknown
	 * @param intentSet whether the attempt set this owner's writer intent
	 * @param outcomeUnknown whether the attempt may have committed a grant it did not hear of
	 */
	private record Attempt(@Nullable HeldLock lock, @Nullable String holderDescription, long leaseRemainingNanos,
			boolean intentSet, boolean outcomeUnknown) {

		Attempt(@Nullable HeldLock lock, @Nullable String holderDescription, long leaseRemainingNanos,
				boolean intentSet) {
			this(lock, holderDescription, leaseRemainingNanos, intentSet, false);
		}

		static final Attempt NONE = new Attempt(null, null, 0, false, false);

	}

	/** One owner's read or write lease: renewed on the shared scheduler, lost once renewal finds it gone. */
	private class Lease extends RereadableLease {

		private final String kind;

		private final long minHoldMicros;

		Lease(String resource, String ownerToken, String kind, long fencingToken, long leaseNanos, long minHoldMicros,
				long validUntilNanos) {
			super(resource, ownerToken, fencingToken, leaseNanos, validUntilNanos);
			this.kind = kind;
			this.minHoldMicros = minHoldMicros;
		}

		@Override
		boolean renewInDatabase() {
			return update("renew", ReadWriteLeases.this.sql.rwRenew, this, TimeUnit.NANOSECONDS.toMicros(this.leaseNanos)) == 1;
		}

		/** A release with a minimum hold keeps the holder row, and its owner, until the hold ends. */
		@Override
		boolean releaseKeepsOwner() {
			return this.minHoldMicros > 0;
		}

		@Override
		boolean releaseStatement() {
			LockStatements sql = ReadWriteLeases.this.sql;
			return (this.minHoldMicros > 0) ? update("release", sql.rwReleaseKeeping, this, this.minHoldMicros) == 1
					: update("release", sql.rwRelease, this, -1) == 1;
		}

		@Override
		@Nullable
		Long remainingMicrosInDatabase() {
			return ownRemainingMicros(this);
		}

		@Override
		String describe() {
			return "the " + kindName() + " lock '" + this.resource + "'";
		}

		private String kindName() {
			return READ.equals(this.kind) ? "read" : "write";
		}

		@Override
		public String toString() {
			return kindName() + " lease of '" + this.resource + "' (fencing token " + fencingToken() + ")";
		}

	}

	/**
	 * A write lease, which can be checked in the application's transaction at its commit (see the class comment).
	 * A lease known lost or released fails the check without a statement.
	 */
	private final class WriteLease extends Lease implements TransactionCheckedLock {

		WriteLease(String resource, String ownerToken, long fencingToken, long leaseNanos, long minHoldMicros,
				long validUntilNanos) {
			super(resource, ownerToken, WRITE, fencingToken, leaseNanos, minHoldMicros, validUntilNanos);
		}

		@Override
		public boolean inTransactionOfItsDatabase() {
			return ReadWriteLeases.this.transactions.inTransactionOfItsDatabase();
		}

		@Override
		public boolean lockRowInTransaction() {
			if (this.lost || this.released) {
				return false;
			}
			return lockHoldInTransaction(this);
		}

	}

}
