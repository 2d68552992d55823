package io.github.dblock.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
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

	/** Microseconds since the epoch on the server's UTC clock; no session time zone is involved. */
	private static final String SERVER_MICROS = "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))";

	/** Bound on immediate re-attempts after a lost race (insert collision, lease ending between statements). */
	private static final int MAX_RACES_PER_ATTEMPT = 4;

	private final JdbcLockSupport jdbc;

	private final Duration initialBackoff;

	private final Duration maxBackoff;

	private final String takeSql;

	private final String peekSql;

	private final String insertSql;

	private final String tokenSql;

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
		if (initialBackoff.isNegative() || initialBackoff.isZero() || maxBackoff.compareTo(initialBackoff) < 0) {
			throw new IllegalArgumentException("backoff must satisfy 0 < initialBackoff <= maxBackoff, was "
					+ initialBackoff + " and " + maxBackoff);
		}
		this.jdbc = new JdbcLockSupport(dataSource, statementTimeout);
		this.initialBackoff = initialBackoff;
		this.maxBackoff = maxBackoff;
		String t = table.quoted();
		this.takeSql = "UPDATE " + t + " SET owner_token = ?, holder = ?, fencing_token = LAST_INSERT_ID(GREATEST("
				+ "fencing_token + 1, " + SERVER_MICROS + ")), acquired_at = UTC_TIMESTAMP(6), "
				+ "expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND "
				+ "WHERE resource = ? AND expires_at <= UTC_TIMESTAMP(6)";
		this.peekSql = "SELECT holder, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) FROM " + t
				+ " WHERE resource = ?";
		this.insertSql = "INSERT INTO " + t + " (resource, owner_token, holder, fencing_token, acquired_at, expires_at)"
				+ " VALUES (?, ?, ?, LAST_INSERT_ID(" + SERVER_MICROS + "), UTC_TIMESTAMP(6),"
				+ " UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND)";
		this.tokenSql = "SELECT fencing_token FROM " + t + " WHERE resource = ? AND owner_token = ?";
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
			TimeUnit.NANOSECONDS.sleep(pause(attempt, result.leaseRemainingNanos, remaining));
		}
	}

	/** Exponential backoff with jitter, cut short where the holder's lease ends or the caller's deadline. */
	long pause(int attempt, long leaseRemainingNanos, long waitRemainingNanos) {
		long base = this.initialBackoff.toNanos() << Math.min(attempt, 20);
		long ceiling = Math.min(Math.max(base, 0), this.maxBackoff.toNanos());
		long pause = ceiling / 2 + ThreadLocalRandom.current().nextLong(ceiling / 2 + 1);
		if (leaseRemainingNanos > 0) {
			pause = Math.min(pause, leaseRemainingNanos + TimeUnit.MILLISECONDS.toNanos(1));
		}
		return Math.max(0, Math.min(pause, waitRemainingNanos));
	}

	private Attempt attemptOnce(LockRequest request) {
		String owner = UUID.randomUUID().toString();
		long leaseMicros = TimeUnit.NANOSECONDS.toMicros(request.leaseTime().toNanos());
		return this.jdbc.execute("acquire lock '" + request.resource() + "'", (connection) -> {
			int timeout = this.jdbc.queryTimeoutSeconds(request.remainingNanos());
			Attempt last = Attempt.NONE;
			for (int race = 0; race < MAX_RACES_PER_ATTEMPT; race++) {
				long sentAt = System.nanoTime();
				Long token = take(connection, request, owner, leaseMicros, timeout);
				if (token != null) {
					return new Attempt(new LeaseLock(request.resource(), owner, token, sentAt), null, 0);
				}
				last = peek(connection, request.resource(), timeout);
				if (last != null && last.leaseRemainingNanos > 0) {
					return last;
				}
				if (last == null) {
					token = insert(connection, request, owner, leaseMicros, timeout);
					if (token != null) {
						return new Attempt(new LeaseLock(request.resource(), owner, token, sentAt), null, 0);
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
			ps.setBytes(4, bytes(request.resource()));
			int matched = ps.executeUpdate();
			JdbcLockSupport.commitIfNeeded(connection);
			return (matched == 1) ? fencingToken(connection, ps, request.resource(), owner, timeout) : null;
		}
	}

	@Nullable
	private Long insert(Connection connection, LockRequest request, String owner, long leaseMicros, int timeout)
			throws SQLException {
		try (PreparedStatement ps = connection.prepareStatement(this.insertSql, Statement.RETURN_GENERATED_KEYS)) {
			ps.setQueryTimeout(timeout);
			ps.setBytes(1, bytes(request.resource()));
			ps.setString(2, owner);
			ps.setString(3, request.holder());
			ps.setLong(4, leaseMicros);
			ps.executeUpdate();
			JdbcLockSupport.commitIfNeeded(connection);
			return fencingToken(connection, ps, request.resource(), owner, timeout);
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

	/** Reads the token from the OK packet's insert id; falls back to a query for drivers that do not expose it. */
	private long fencingToken(Connection connection, PreparedStatement ps, String resource, String owner, int timeout)
			throws SQLException {
		try (ResultSet keys = ps.getGeneratedKeys()) {
			if (keys.next()) {
				long token = keys.getLong(1);
				if (token > 0) {
					return token;
				}
			}
		}
		try (PreparedStatement query = connection.prepareStatement(this.tokenSql)) {
			query.setQueryTimeout(timeout);
			query.setBytes(1, bytes(resource));
			query.setString(2, owner);
			try (ResultSet rs = query.executeQuery()) {
				if (!rs.next()) {
					throw new SQLException("lock row for '" + resource + "' vanished right after it was taken");
				}
				return rs.getLong(1);
			}
		}
	}

	@Nullable
	private Attempt peek(Connection connection, String resource, int timeout) throws SQLException {
		try (PreparedStatement ps = connection.prepareStatement(this.peekSql)) {
			ps.setQueryTimeout(timeout);
			ps.setBytes(1, bytes(resource));
			try (ResultSet rs = ps.executeQuery()) {
				if (!rs.next()) {
					return null;
				}
				String holder = rs.getString(1);
				long remainingMicros = rs.getLong(2);
				return new Attempt(null, holder, TimeUnit.MICROSECONDS.toNanos(Math.max(0, remainingMicros)));
			}
			finally {
				JdbcLockSupport.commitIfNeeded(connection);
			}
		}
	}

	boolean release(LeaseLock lock) {
		return this.jdbc.execute("release lock '" + lock.resource + "'", (connection) -> {
			try (PreparedStatement ps = connection.prepareStatement(this.releaseSql)) {
				ps.setQueryTimeout(this.jdbc.statementTimeoutSeconds());
				ps.setBytes(1, bytes(lock.resource));
				ps.setString(2, lock.ownerToken);
				int matched = ps.executeUpdate();
				JdbcLockSupport.commitIfNeeded(connection);
				return matched == 1;
			}
		});
	}

	/** Resource names are stored as their UTF-8 bytes in a {@code VARBINARY} column: exact comparison. */
	static byte[] bytes(String resource) {
		return resource.getBytes(java.nio.charset.StandardCharsets.UTF_8);
	}

	/** The result of one attempt: a lock, or what was learned about the holder. */
	private record Attempt(@Nullable HeldLock lock, @Nullable String holder, long leaseRemainingNanos) {

		static final Attempt NONE = new Attempt(null, null, 0);

		@Nullable
		String holderDescription() {
			if (this.holder == null) {
				return null;
			}
			return this.holder + " (lease ends in " + TimeUnit.NANOSECONDS.toMillis(this.leaseRemainingNanos) + " ms)";
		}

	}

	private final class LeaseLock implements HeldLock {

		private final String resource;

		private final String ownerToken;

		private final long fencingToken;

		private final long acquiredAtNanos;

		LeaseLock(String resource, String ownerToken, long fencingToken, long acquiredAtNanos) {
			this.resource = resource;
			this.ownerToken = ownerToken;
			this.fencingToken = fencingToken;
			this.acquiredAtNanos = acquiredAtNanos;
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
		public long acquiredAtNanos() {
			return this.acquiredAtNanos;
		}

		@Override
		public boolean release() {
			return LeaseLockProvider.this.release(this);
		}

	}

}
