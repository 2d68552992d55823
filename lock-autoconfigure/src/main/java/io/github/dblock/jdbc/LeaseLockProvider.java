package io.github.dblock.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import io.github.dblock.LockMode;
import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockProvider;
import io.github.dblock.spi.LockRequest;
import org.jspecify.annotations.Nullable;

/**
 * The {@link LockMode#LEASE} provider: a lease row per resource in the lock table, written with the database
 * server's clock.
 * <p>
 * One acquisition attempt:
 * <ol>
 * <li>{@code UPDATE} the resource's row to the new owner token, holder description, a fencing token of
 * {@code GREATEST(fencing_token + 1, <server time in µs>)} and an expiry of {@code UTC_TIMESTAMP(6) + lease},
 * on condition that the current lease has expired ({@code expires_at <= UTC_TIMESTAMP(6)}). The row is matched
 * by primary key, the new owner token is unique, so the matched-row count is 1 exactly when the lock was taken,
 * whether or not the driver reports found rows. The fencing token comes back in the same round trip through
 * {@code LAST_INSERT_ID(expr)}, which the server returns in its OK packet.</li>
 * <li>If no row matched, {@code SELECT} the row to learn its holder and how long its lease still runs.</li>
 * <li>If there is no row yet (a never-seen resource), {@code INSERT} it. When several nodes insert the same
 * new resource at once, all but one get a duplicate-key error and go back to step 1.</li>
 * </ol>
 * If a {@link LockMode#PESSIMISTIC} holder's transaction has the row locked, step 1 waits for it, at most for
 * the query timeout, and then counts as busy.
 * <p>
 * Between attempts the provider sleeps with exponential backoff and jitter, never past the holder's lease end
 * (as read in step 2) nor past the caller's deadline. An uncontended acquisition of a known resource costs one
 * statement; release is one owner-checked {@code UPDATE} that clears the owner and ends the lease (rows are
 * never deleted by a release, so the fencing token keeps increasing).
 * <p>
 * Every statement runs in autocommit on a connection taken directly from the data source, never in the
 * caller's transaction, so a lock is visible to other nodes as soon as it is taken and a business rollback
 * cannot undo it. Single-statement, primary-key transactions see the latest committed row whatever the
 * connection's isolation level, so no isolation change (and no extra round trip) is needed. Deadlocks and lock
 * wait timeouts are retried; other errors surface as {@link org.springframework.dao.DataAccessException}.
 * <p>
 * Thread-safe.
 */
public class LeaseLockProvider implements LockProvider {

	/** Bound on immediate re-attempts after a lost race (insert collision, lease ending between statements). */
	private static final int MAX_RACES_PER_ATTEMPT = 4;

	private final JdbcLockSupport jdbc;

	private final Backoff backoff;

	private final LockRows rows;

	private final String takeSql;

	private final String insertSql;

	private final String releaseSql;

	/**
	 * Creates a provider.
	 * @param dataSource the data source holding the lock table; a {@code TransactionAwareDataSourceProxy} is
	 * unwrapped, so lock statements never join a Spring-managed transaction
	 * @param table the lock table
	 * @param statementTimeout upper bound of every statement's query timeout (JDBC resolution: whole seconds,
	 * at least one)
	 * @param initialBackoff first pause between attempts while waiting, positive
	 * @param maxBackoff longest pause between attempts while waiting, at least {@code initialBackoff}
	 */
	public LeaseLockProvider(DataSource dataSource, LockTable table, Duration statementTimeout, Duration initialBackoff,
			Duration maxBackoff) {
		this.backoff = new Backoff(initialBackoff, maxBackoff);
		this.jdbc = new JdbcLockSupport(dataSource, statementTimeout);
		String t = table.quoted();
		this.rows = new LockRows(table);
		this.takeSql = "UPDATE " + t + " SET owner_token = ?, holder = ?, " + LockRows.NEXT_TOKEN
				+ ", acquired_at = UTC_TIMESTAMP(6), expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND"
				+ " WHERE resource = ? AND " + LockRows.FREE;
		this.insertSql = "INSERT INTO " + t + " (resource, owner_token, holder, fencing_token, acquired_at, expires_at)"
				+ " VALUES (?, ?, ?, LAST_INSERT_ID(" + LockRows.SERVER_MICROS + "), UTC_TIMESTAMP(6),"
				+ " UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND)";
		this.releaseSql = "UPDATE " + t + " SET owner_token = NULL, expires_at = UTC_TIMESTAMP(6)"
				+ " WHERE resource = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6)";
	}

	@Override
	public LockMode mode() {
		return LockMode.LEASE;
	}

	@Override
	public AcquireResult acquire(LockRequest request) throws InterruptedException {
		for (int attempt = 0;; attempt++) {
			Attempt result = attemptOnce(request);
			if (result.lock != null) {
				return AcquireResult.acquired(result.lock);
			}
			long remaining = request.remainingNanos();
			if (remaining <= 0) {
				return AcquireResult.busy(result.holderDescription());
			}
			if (Thread.interrupted()) {
				throw new InterruptedException();
			}
			TimeUnit.NANOSECONDS.sleep(this.backoff.pauseNanos(attempt, result.leaseRemainingNanos, remaining));
		}
	}

	private Attempt attemptOnce(LockRequest request) {
		String owner = UUID.randomUUID().toString();
		long leaseMicros = TimeUnit.NANOSECONDS.toMicros(request.leaseTime().toNanos());
		return this.jdbc.execute("acquire lock '" + request.resource() + "'", (connection) -> {
			int timeout = this.jdbc.queryTimeoutSeconds(request.remainingNanos());
			Attempt last = Attempt.NONE;
			for (int race = 0; race < MAX_RACES_PER_ATTEMPT; race++) {
				long sentAt = System.nanoTime();
				Long token;
				try {
					token = take(connection, request, owner, leaseMicros, timeout);
				}
				catch (SQLException ex) {
					if (ex instanceof java.sql.SQLTimeoutException) {
						// the row is locked by a PESSIMISTIC holder's transaction for longer than this caller waits
						return new Attempt(null, "an open transaction holding the row lock", 0);
					}
					throw ex;
				}
				if (token != null) {
					return new Attempt(new LeaseLock(request.resource(), owner, token, sentAt + request.leaseTime().toNanos()), null, 0);
				}
				LockRows.Peek peek = this.rows.peek(connection, request.resource(), timeout);
				last = (peek != null) ? new Attempt(null, peek.holderDescription(), peek.leaseRemainingNanos()) : null;
				if (last != null && last.leaseRemainingNanos > 0) {
					return last;
				}
				if (last == null) {
					token = insert(connection, request, owner, leaseMicros, timeout);
					if (token != null) {
						return new Attempt(new LeaseLock(request.resource(), owner, token, sentAt + request.leaseTime().toNanos()), null, 0);
					}
					last = Attempt.NONE;
				}
				// lost a race (another node inserted first, or the lease ended between statements): look again
			}
			return last;
		});
	}

	@Nullable
	private Long take(Connection connection, LockRequest request, String owner, long leaseMicros, int timeout)
			throws SQLException {
		try (PreparedStatement ps = connection.prepareStatement(this.takeSql, Statement.RETURN_GENERATED_KEYS)) {
			ps.setQueryTimeout(timeout);
			ps.setString(1, owner);
			ps.setString(2, request.holder());
			ps.setLong(3, leaseMicros);
			ps.setBytes(4, LockRows.bytes(request.resource()));
			int matched = ps.executeUpdate();
			JdbcLockSupport.commitIfNeeded(connection);
			return (matched == 1) ? this.rows.fencingToken(connection, ps, request.resource(), owner, timeout) : null;
		}
	}

	@Nullable
	private Long insert(Connection connection, LockRequest request, String owner, long leaseMicros, int timeout)
			throws SQLException {
		try (PreparedStatement ps = connection.prepareStatement(this.insertSql, Statement.RETURN_GENERATED_KEYS)) {
			ps.setQueryTimeout(timeout);
			ps.setBytes(1, LockRows.bytes(request.resource()));
			ps.setString(2, owner);
			ps.setString(3, request.holder());
			ps.setLong(4, leaseMicros);
			ps.executeUpdate();
			JdbcLockSupport.commitIfNeeded(connection);
			return this.rows.fencingToken(connection, ps, request.resource(), owner, timeout);
		}
		catch (SQLException ex) {
			if (JdbcLockSupport.isDuplicateKey(ex)) {
				if (!connection.getAutoCommit()) {
					connection.rollback();
				}
				return null;
			}
			throw ex;
		}
	}

	boolean release(LeaseLock lock) {
		return this.jdbc.execute("release lock '" + lock.resource + "'", (connection) -> {
			try (PreparedStatement ps = connection.prepareStatement(this.releaseSql)) {
				ps.setQueryTimeout(this.jdbc.statementTimeoutSeconds());
				ps.setBytes(1, LockRows.bytes(lock.resource));
				ps.setString(2, lock.ownerToken);
				int matched = ps.executeUpdate();
				JdbcLockSupport.commitIfNeeded(connection);
				return matched == 1;
			}
		});
	}

	/** The result of one attempt: a lock, or what was learned about the holder. */
	private record Attempt(@Nullable HeldLock lock, @Nullable String holderDescription, long leaseRemainingNanos) {

		static final Attempt NONE = new Attempt(null, null, 0);

	}

	private final class LeaseLock implements HeldLock {

		private final String resource;

		private final String ownerToken;

		private final long fencingToken;

		private final long validUntilNanos;

		LeaseLock(String resource, String ownerToken, long fencingToken, long validUntilNanos) {
			this.resource = resource;
			this.ownerToken = ownerToken;
			this.fencingToken = fencingToken;
			this.validUntilNanos = validUntilNanos;
		}

		@Override
		public long fencingToken() {
			return this.fencingToken;
		}

		@Override
		public String ownerToken() {
			return this.ownerToken;
		}

		@Override
		public long validUntilNanos() {
			return this.validUntilNanos;
		}

		@Override
		public boolean release() {
			return LeaseLockProvider.this.release(this);
		}

	}

}
