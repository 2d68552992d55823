package io.github.dblock.jdbc;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.concurrent.TimeUnit;

import org.jspecify.annotations.Nullable;

/**
 * The statements on the lock table that the providers share. Rows are addressed by primary key only; every value
 * is a bind parameter; instants are computed by the server.
 */
final class LockRows {

	/** Microseconds since the epoch on the server's UTC clock; no session time zone is involved. */
	static final String SERVER_MICROS = "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))";

	/**
	 * The next fencing token, also handed to the client in the OK packet: strictly greater than the current one,
	 * and never below the server time in microseconds (so a row re-created after deletion keeps increasing).
	 */
	static final String NEXT_TOKEN = "fencing_token = LAST_INSERT_ID(GREATEST(fencing_token + 1, " + SERVER_MICROS + "))";

	/** The lease on the row has ended (or the row was released). */
	static final String FREE = "expires_at <= UTC_TIMESTAMP(6)";

	private final String peekSql;

	private final String insertFreeSql;

	private final String tokenSql;

	private final String announceSql;

	private final String successorSql;

	private final String withdrawSql;

	/**
	 * Whether the driver has returned a fencing token through the generated keys of a statement (see
	 * {@link #fencingToken}): only then can a release read a waiter's announcement the same way.
	 */
	private volatile boolean generatedKeysSeen;

	LockRows(LockTable table) {
		String t = table.quoted();
		this.peekSql = "SELECT holder, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at),"
				+ " TIMESTAMPDIFF(MICROSECOND, acquired_at, UTC_TIMESTAMP(6)), waiting_owner,"
				+ " TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), waiting_until) FROM " + t + " WHERE resource = ?";
		this.insertFreeSql = "INSERT INTO " + t + " (resource, owner_token, holder, fencing_token, acquired_at, expires_at)"
				+ " VALUES (?, NULL, NULL, " + SERVER_MICROS + ", UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))";
		this.tokenSql = "SELECT fencing_token FROM " + t + " WHERE resource = ? AND owner_token = ?";
		this.announceSql = "UPDATE " + t + " SET waiting_until = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND"
				+ " WHERE resource = ? AND expires_at > UTC_TIMESTAMP(6)";
		this.successorSql = "UPDATE " + t + " SET waiting_owner = ?, waiting_until = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND"
				+ " WHERE resource = ? AND expires_at > UTC_TIMESTAMP(6) AND (owner_token IS NULL OR owner_token <> ?)"
				+ " AND (waiting_owner IS NULL OR waiting_owner = ? OR waiting_until IS NULL"
				+ " OR waiting_until <= UTC_TIMESTAMP(6))";
		// assignments run left to right and later ones see earlier results (MySQL and MariaDB without
		// SIMULTANEOUS_ASSIGNMENT): expires_at and owner_token are only read before they change
		this.withdrawSql = "UPDATE " + t + " SET expires_at = IF(owner_token = ?, UTC_TIMESTAMP(6), expires_at),"
				+ " owner_token = IF(owner_token = ?, NULL, owner_token),"
				+ " waiting_until = IF(waiting_owner = ?, NULL, waiting_until),"
				+ " waiting_owner = IF(waiting_owner = ?, NULL, waiting_owner)"
				+ " WHERE resource = ? AND (owner_token = ? OR waiting_owner = ?)";
	}

	/**
	 * Whether a release hands the lease to the waiter next in line ({@code waiting_owner}): one is set, its
	 * announcement has not run out, and the holder's minimum hold time has passed. One bind parameter: the minimum
	 * hold time in microseconds. Reads only columns that {@link #RELEASE_ASSIGNMENTS} changes after reading them.
	 */
	private static final String HAND_OVER = "(waiting_owner IS NOT NULL AND waiting_until > UTC_TIMESTAMP(6)"
			+ " AND acquired_at + INTERVAL ? MICROSECOND <= UTC_TIMESTAMP(6))";

	/**
	 * The assignments of a LEASE release ({@code UPDATE t SET ... WHERE resource = ? AND owner_token = ? AND lease
	 * running}). With a live waiter next in line ({@link #HAND_OVER}) the lease goes straight to it: its owner token
	 * becomes the row's, with a lease until its announcement runs out plus a second, and its next attempt takes the
	 * row as its own (a take matches a row that carries its owner token), so nobody else can take the lock in between
	 * and no local thread of the releasing JVM has to hold back. Otherwise the row is freed ({@code expires_at} = now,
	 * or the end of the minimum hold time). Either way the announcement is cleared, and the client learns in the same
	 * round trip, through {@code LAST_INSERT_ID(expr)} (read with {@link #announcedWaitNanos}): 1 for a hand-over,
	 * else the microseconds until the attempt a waiter announced (at least 2; a PESSIMISTIC waiter, which cannot be
	 * handed a lease, or one next in line while the minimum hold time runs), or 0 if none did.
	 * <p>
	 * Bind parameters: the minimum hold time in microseconds, four times. Assignments run left to right and later
	 * ones see earlier results (MySQL, and MariaDB without {@code SIMULTANEOUS_ASSIGNMENT}; with it every one reads
	 * the old row, which gives the same result): each column is read only by assignments before its own.
	 */
	static final String RELEASE_ASSIGNMENTS = "expires_at = IF(" + HAND_OVER
			+ ", waiting_until + INTERVAL 1 SECOND, GREATEST(UTC_TIMESTAMP(6), acquired_at + INTERVAL ? MICROSECOND)),"
			+ " owner_token = IF(" + HAND_OVER + ", waiting_owner, NULL),"
			+ " waiting_until = IF(LAST_INSERT_ID(IF(" + HAND_OVER + ", 1, IF(waiting_until > UTC_TIMESTAMP(6),"
			+ " GREATEST(2, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), waiting_until)), 0))) > 0, NULL, NULL),"
			+ " waiting_owner = NULL";

	/**
	 * Announces that a waiter will try again within {@code nanos}, on a row whose lease still runs (a free row is left
	 * alone), as its own autocommit statement. A hint for the holder's JVM (see {@link #RELEASE_ASSIGNMENTS}); the
	 * caller may ignore a failure.
	 */
	void announceWaiter(Connection connection, String resource, long nanos, int timeoutSeconds) throws SQLException {
		try (PreparedStatement ps = JdbcLockSupport.prepareBounded(connection, this.announceSql, timeoutSeconds, false)) {
			ps.setLong(1, Math.max(1, TimeUnit.NANOSECONDS.toMicros(nanos)));
			ps.setBytes(2, bytes(resource));
			ps.executeUpdate();
			JdbcLockSupport.commitIfNeeded(connection);
		}
	}

	/**
	 * Makes a LEASE waiter the next in line for a row whose lease still runs and whose holder is not the waiter
	 * itself, unless another live waiter already is: {@code waiting_owner} = its owner token and {@code waiting_until}
	 * = now + {@code nanos}. The holder's release then hands the lease straight to it (see
	 * {@link #RELEASE_ASSIGNMENTS}). A waiter that is already next in line extends its announcement.
	 * @return whether the waiter is next in line now
	 */
	boolean announceSuccessor(Connection connection, String resource, String owner, long nanos, int timeoutSeconds)
			throws SQLException {
		try (PreparedStatement ps = JdbcLockSupport.prepareBounded(connection, this.successorSql, timeoutSeconds, false)) {
			ps.setString(1, owner);
			ps.setLong(2, Math.max(1, TimeUnit.NANOSECONDS.toMicros(nanos)));
			ps.setBytes(3, bytes(resource));
			ps.setString(4, owner);
			ps.setString(5, owner);
			int matched = ps.executeUpdate();
			JdbcLockSupport.commitIfNeeded(connection);
			return matched == 1;
		}
	}

	/**
	 * Withdraws a waiter that gives up: frees the row if a release handed the lease to it meanwhile, and takes it
	 * out of line. Safe to run when neither applies (it then matches nothing).
	 */
	void withdraw(Connection connection, String resource, String owner, int timeoutSeconds) throws SQLException {
		try (PreparedStatement ps = JdbcLockSupport.prepareBounded(connection, this.withdrawSql, timeoutSeconds, false)) {
			ps.setString(1, owner);
			ps.setString(2, owner);
			ps.setString(3, owner);
			ps.setString(4, owner);
			ps.setBytes(5, bytes(resource));
			ps.setString(6, owner);
			ps.setString(7, owner);
			ps.executeUpdate();
			JdbcLockSupport.commitIfNeeded(connection);
		}
	}

	/** What {@link #announcedWaitNanos} returns when the release handed the lease to the waiter next in line. */
	static final long HANDED_OVER = -2;

	/**
	 * What a release with {@link #RELEASE_ASSIGNMENTS} (prepared with {@code RETURN_GENERATED_KEYS}) learned:
	 * {@link #HANDED_OVER} if it handed the lease to the waiter next in line; else nanoseconds until the attempt a
	 * waiter announced, 0 if nobody did; -1 if this driver does not return such values (then nobody can be known to
	 * wait).
	 */
	long announcedWaitNanos(PreparedStatement executed) throws SQLException {
		if (!this.generatedKeysSeen) {
			return -1;
		}
		try (ResultSet keys = executed.getGeneratedKeys()) {
			long value = keys.next() ? keys.getLong(1) : 0;
			return (value == 1) ? HANDED_OVER : TimeUnit.MICROSECONDS.toNanos(Math.max(0, value));
		}
	}

	/** {@code INSERT} of a free row; its one parameter is the resource. */
	String insertFreeSql() {
		return this.insertFreeSql;
	}

	/** Resource names are stored as their UTF-8 bytes in a {@code VARBINARY} column: exact comparison. */
	static byte[] bytes(String resource) {
		return resource.getBytes(StandardCharsets.UTF_8);
	}

	/**
	 * The holder and remaining lease of a resource's row (committed state), or {@code null} if there is no row.
	 */
	@Nullable
	Peek peek(Connection connection, String resource, int timeoutSeconds) throws SQLException {
		try (PreparedStatement ps = JdbcLockSupport.prepareBounded(connection, this.peekSql, timeoutSeconds, false)) {
			ps.setBytes(1, bytes(resource));
			try (ResultSet rs = JdbcLockSupport.query(ps)) {
				if (!rs.next()) {
					return null;
				}
				return new Peek(rs.getString(1), TimeUnit.MICROSECONDS.toNanos(Math.max(0, rs.getLong(2))),
						TimeUnit.MICROSECONDS.toNanos(Math.max(0, rs.getLong(3))), rs.getString(4),
						TimeUnit.MICROSECONDS.toNanos(Math.max(0, rs.getLong(5))));
			}
			finally {
				JdbcLockSupport.commitIfNeeded(connection);
			}
		}
	}

	/**
	 * Creates a free row for a never-seen resource, as its own statement.
	 * @return {@code false} if the row already existed (another node created it first)
	 */
	boolean insertFree(Connection connection, String resource, int timeoutSeconds) throws SQLException {
		try (PreparedStatement ps = JdbcLockSupport.prepareBounded(connection, this.insertFreeSql, timeoutSeconds, false)) {
			ps.setBytes(1, bytes(resource));
			ps.executeUpdate();
			JdbcLockSupport.commitIfNeeded(connection);
			return true;
		}
		catch (SQLException ex) {
			if (JdbcLockSupport.lostInsertRace(connection, ex)) {
				return false;
			}
			throw ex;
		}
	}

	/**
	 * The fencing token set by {@link #NEXT_TOKEN} in the statement just executed: read from the OK packet's insert
	 * id, or, for drivers that do not expose it, queried by owner token (visible to the statement's own
	 * transaction).
	 */
	long fencingToken(Connection connection, PreparedStatement executed, String resource, String owner,
			int timeoutSeconds) throws SQLException {
		long token = JdbcLockSupport.lastInsertId(executed);
		if (token > 0) {
			this.generatedKeysSeen = true;
			return token;
		}
		try (PreparedStatement query = JdbcLockSupport.prepareBounded(connection, this.tokenSql, timeoutSeconds, false)) {
			query.setBytes(1, bytes(resource));
			query.setString(2, owner);
			try (ResultSet rs = JdbcLockSupport.query(query)) {
				if (!rs.next()) {
					throw new SQLException("lock row for '" + resource + "' vanished right after it was taken");
				}
				return rs.getLong(1);
			}
		}
	}

	/**
	 * The committed state of a row.
	 * @param holder the (last) holder's description
	 * @param leaseRemainingNanos time until the lease ends on the server's clock, zero if it has ended
	 * @param heldForNanos time since the row was last taken ({@code acquired_at}) on the server's clock
	 * @param waitingOwner the owner token of the LEASE waiter next in line, if any (see {@link #announceSuccessor})
	 * @param waitingRemainingNanos time until the announcement in {@code waiting_until} runs out, zero if it has
	 */
	record Peek(@Nullable String holder, long leaseRemainingNanos, long heldForNanos, @Nullable String waitingOwner,
			long waitingRemainingNanos) {

		/** Whether the given owner is next in line for at least {@code nanos} more. */
		boolean nextInLine(String owner, long nanos) {
			return owner.equals(this.waitingOwner) && this.waitingRemainingNanos > nanos;
		}

		@Nullable
		String holderDescription() {
			if (this.holder == null) {
				return null;
			}
			return this.holder + " (lease ends in " + TimeUnit.NANOSECONDS.toMillis(this.leaseRemainingNanos) + " ms)";
		}

	}

}
