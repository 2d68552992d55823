package io.github.dblock.jdbc.lease;

import io.github.dblock.jdbc.sql.CallDeadline;
import io.github.dblock.jdbc.sql.JdbcLockSupport;
import io.github.dblock.jdbc.sql.LockRows;
import io.github.dblock.jdbc.sql.LockStatements;
import io.github.dblock.jdbc.sql.SqlErrors;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.concurrent.TimeUnit;

import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import org.jspecify.annotations.Nullable;

import static io.github.dblock.jdbc.lease.ReadWriteLeases.READ;
import static io.github.dblock.jdbc.lease.ReadWriteLeases.WRITE;

/**
 * One attempt of a {@link ReadWriteLeases} wait: a short transaction that locks the resource's {@code _rw} row first
 * ({@code FOR UPDATE} by primary key), looks for a live holder that keeps this kind out, and grants the lease or sets
 * a waiting writer's intent; and the look for this owner's own holder row after an attempt whose outcome is unknown.
 * See docs/DESIGN.md, "Read/write locks". Failures surface as {@link SQLException} (through
 * {@link JdbcLockSupport#execute}, as {@link org.springframework.dao.DataAccessException}). Thread-safe.
 */
final class ReadWriteAttempts {

	/** Bound on immediate re-attempts after a lost race to create a resource's row. */
	private static final int MAX_RACES_PER_ATTEMPT = 4;

	private final JdbcLockSupport jdbc;

	private final LockStatements sql;

	private final HeldReadWriteLeases holds;

	/** How long a waiting writer's intent holds without refresh, in microseconds. */
	private final long intentMicros;

	ReadWriteAttempts(JdbcLockSupport jdbc, LockStatements sql, HeldReadWriteLeases holds, long intentMicros) {
		this.jdbc = jdbc;
		this.sql = sql;
		this.holds = holds;
		this.intentMicros = intentMicros;
	}

	@SuppressWarnings("NullAway") // a lambda returns null for ConnectionWork<T extends @Nullable Object>: see pom.xml
	Attempt attempt(LockRequest request, String kind, String owner, boolean recovering, boolean mayWait,
			CallDeadline deadline) {
		long leaseMicros = TimeUnit.NANOSECONDS.toMicros(request.leaseTime().toNanos());
		byte[] key = LockRows.bytes(request.resource());
		return this.jdbc.execute("acquire " + (kind.equals(READ) ? "read" : "write") + " lock '" + request.resource()
				+ "'", deadline, (connection) -> {
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
							attempt = ShortTransactions.inShortTransaction(connection,
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

	/** Steps 1 to 5 of DESIGN.md's acquisition of a read/write lock, in the caller's transaction; {@code null} if the row does not exist. */
	@Nullable
	private Attempt decide(Connection connection, LockRequest request, byte[] key, String kind, String owner,
			long leaseMicros, boolean mayWait, int timeout, long sentAt) throws SQLException {
		long token;
		boolean ownIntent;
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.readWrite.rwLockRow, timeout, false)) {
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
		Attempt holder = liveHolder(connection, key, kind, owner, timeout);
		if (holder == null) {
			return grant(connection, request, key, kind, owner, leaseMicros, token + 1, ownIntent, timeout, sentAt);
		}
		if (mayWait) {
			try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.readWrite.rwIntent, timeout, false)) {
				ps.setString(1, owner);
				ps.setString(2, request.holder());
				ps.setLong(3, this.intentMicros);
				ps.setBytes(4, key);
				ps.executeUpdate();
			}
			return new Attempt(null, holder.holderDescription, holder.leaseRemainingNanos, true);
		}
		return holder;
	}

	/**
	 * Step 3 of the acquisition: the first live holder that keeps this kind out, writers first.
	 * @return it as a busy attempt (description and remaining lease), or {@code null} if there is none
	 */
	@Nullable
	private Attempt liveHolder(Connection connection, byte[] key, String kind, String owner, int timeout)
			throws SQLException {
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.readWrite.rwHolders, timeout, false)) {
			ps.setBytes(1, key);
			ps.setString(2, owner);
			ps.setString(3, kind.equals(READ) ? WRITE : READ);
			try (ResultSet rs = JdbcLockSupport.query(ps)) {
				if (!rs.next()) {
					return null;
				}
				long remaining = TimeUnit.MICROSECONDS.toNanos(Math.max(0, rs.getLong(3)));
				return new Attempt(null, rs.getString(2) + " (" + (WRITE.equals(rs.getString(1)) ? "write" : "read")
						+ " lock, lease ends in " + TimeUnit.NANOSECONDS.toMillis(remaining) + " ms)", remaining, false);
			}
		}
	}

	/** Step 4 of the acquisition: the grant of token {@code next}, clearing this owner's intent if it is set. */
	private Attempt grant(Connection connection, LockRequest request, byte[] key, String kind, String owner,
			long leaseMicros, long next, boolean ownIntent, int timeout, long sentAt) throws SQLException {
		try (PreparedStatement ps = this.sql.prepareBounded(connection,
				ownIntent ? this.sql.readWrite.rwGrantClearingIntent : this.sql.readWrite.rwGrant, timeout, false)) {
			ps.setLong(1, next);
			ps.setBytes(2, key);
			ps.executeUpdate();
		}
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.readWrite.rwInsertHold, timeout, false)) {
			ps.setBytes(1, key);
			ps.setString(2, owner);
			ps.setString(3, kind);
			ps.setString(4, request.holder());
			ps.setLong(5, next);
			ps.setLong(6, leaseMicros);
			ps.executeUpdate();
		}
		return new Attempt(this.holds.leased(request, owner, kind, next, sentAt + request.leaseTime().toNanos()), null, 0,
				false);
	}

	/**
	 * After an attempt whose outcome is unknown: the holder row an unacknowledged commit of this owner left, if its
	 * lease still runs, as a lock valid for the row's remaining lease (not yet renewed); an expired one is deleted.
	 * @return the lock, or {@code null} if this owner has no live row
	 */
	@Nullable
	Attempt ownHold(Connection connection, LockRequest request, byte[] key, String owner, String kind,
			int timeout, long sentAt) throws SQLException {
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.readWrite.rwOwnHold, timeout, false)) {
			ps.setBytes(1, key);
			ps.setString(2, owner);
			try (ResultSet rs = JdbcLockSupport.query(ps)) {
				if (rs.next()) {
					long remaining = TimeUnit.MICROSECONDS.toNanos(rs.getLong(2));
					return new Attempt(this.holds.leased(request, owner, kind, rs.getLong(1), sentAt + remaining), null, 0, false);
				}
			}
		}
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.readWrite.rwDropOwnExpired, timeout, false)) {
			ps.setBytes(1, key);
			ps.setString(2, owner);
			ps.executeUpdate();
			JdbcLockSupport.commitIfNeeded(connection);
		}
		return null;
	}

	private void createRow(Connection connection, byte[] key, int timeout) throws SQLException {
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.readWrite.rwCreateRow, timeout, false)) {
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

	/**
	 * The result of one attempt.
	 * @param lock the lock, when taken
	 * @param holderDescription what kept it, when busy and known
	 * @param leaseRemainingNanos how long that holder's lease still runs, 0 if unknown
	 * @param intentSet whether the attempt set this owner's writer intent
	 * @param outcomeUnknown whether the attempt may have committed a grant it did not hear of
	 */
	record Attempt(@Nullable HeldLock lock, @Nullable String holderDescription, long leaseRemainingNanos,
			boolean intentSet, boolean outcomeUnknown) {

		Attempt(@Nullable HeldLock lock, @Nullable String holderDescription, long leaseRemainingNanos,
				boolean intentSet) {
			this(lock, holderDescription, leaseRemainingNanos, intentSet, false);
		}

		static final Attempt NONE = new Attempt(null, null, 0, false, false);

	}

}
