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

	/**
	 * Whether the driver has returned a fencing token through the generated keys of a statement (see
	 * {@link #fencingToken}): only then can a release read a waiter's announcement the same way.
	 */
	private volatile boolean generatedKeysSeen;

	LockRows(LockTable table) {
		String t = table.quoted();
		this.peekSql = "SELECT holder, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at),"
				+ " TIMESTAMPDIFF(MICROSECOND, acquired_at, UTC_TIMESTAMP(6)) FROM " + t + " WHERE resource = ?";
		this.insertFreeSql = "INSERT INTO " + t + " (resource, owner_token, holder, fencing_token, acquired_at, expires_at)"
				+ " VALUES (?, NULL, NULL, " + SERVER_MICROS + ", UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))";
		this.tokenSql = "SELECT fencing_token FROM " + t + " WHERE resource = ? AND owner_token = ?";
		this.announceSql = "UPDATE " + t + " SET waiting_until = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND"
				+ " WHERE resource = ? AND expires_at > UTC_TIMESTAMP(6)";
	}

	/**
	 * The assignment a release adds to learn, in the same round trip, whether a waiter on another node announced
	 * itself: it clears {@code waiting_until} and hands the microseconds until the announced attempt (0 if none or
	 * past) to the client through {@code LAST_INSERT_ID(expr)}, like the fencing token of a take; read it with
	 * {@link #announcedWaitNanos}. The {@code IF} only evaluates that call: both branches clear the column.
	 */
	static final String READ_AND_CLEAR_WAITER = "waiting_until = IF(LAST_INSERT_ID(GREATEST(0, COALESCE("
			+ "TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), waiting_until), 0))) > 0, NULL, NULL)";

	/**
	 * Announces that a waiter will try again within {@code nanos}, on a row whose lease still runs (a free row is left
	 * alone), as its own autocommit statement. A hint for the holder's JVM (see {@link #READ_AND_CLEAR_WAITER}); the
	 * caller may ignore a failure.
	 */
	void announceWaiter(Connection connection, String resource, long nanos, int timeoutSeconds) throws SQLException {
		try (PreparedStatement ps = connection.prepareStatement(this.announceSql)) {
			ps.setQueryTimeout(timeoutSeconds);
			ps.setLong(1, Math.max(1, TimeUnit.NANOSECONDS.toMicros(nanos)));
			ps.setBytes(2, bytes(resource));
			ps.executeUpdate();
			JdbcLockSupport.commitIfNeeded(connection);
		}
	}

	/**
	 * The wait a waiter announced, read from a statement with {@link #READ_AND_CLEAR_WAITER} (prepared with
	 * {@code RETURN_GENERATED_KEYS}): nanoseconds until its announced attempt, 0 if nobody announced one; -1 if this
	 * driver does not return such values (then nobody can be known to wait).
	 */
	long announcedWaitNanos(PreparedStatement executed) throws SQLException {
		if (!this.generatedKeysSeen) {
			return -1;
		}
		try (ResultSet keys = executed.getGeneratedKeys()) {
			return keys.next() ? TimeUnit.MICROSECONDS.toNanos(Math.max(0, keys.getLong(1))) : 0;
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
		try (PreparedStatement ps = connection.prepareStatement(this.peekSql)) {
			ps.setQueryTimeout(timeoutSeconds);
			ps.setBytes(1, bytes(resource));
			try (ResultSet rs = ps.executeQuery()) {
				if (!rs.next()) {
					return null;
				}
				return new Peek(rs.getString(1), TimeUnit.MICROSECONDS.toNanos(Math.max(0, rs.getLong(2))),
						TimeUnit.MICROSECONDS.toNanos(Math.max(0, rs.getLong(3))));
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
		try (PreparedStatement ps = connection.prepareStatement(this.insertFreeSql)) {
			ps.setQueryTimeout(timeoutSeconds);
			ps.setBytes(1, bytes(resource));
			ps.executeUpdate();
			JdbcLockSupport.commitIfNeeded(connection);
			return true;
		}
		catch (SQLException ex) {
			if (JdbcLockSupport.isDuplicateKey(ex)) {
				if (!connection.getAutoCommit()) {
					connection.rollback();
				}
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
		try (PreparedStatement query = connection.prepareStatement(this.tokenSql)) {
			query.setQueryTimeout(timeoutSeconds);
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

	/**
	 * The committed state of a row.
	 * @param holder the (last) holder's description
	 * @param leaseRemainingNanos time until the lease ends on the server's clock, zero if it has ended
	 * @param heldForNanos time since the row was last taken ({@code acquired_at}) on the server's clock
	 */
	record Peek(@Nullable String holder, long leaseRemainingNanos, long heldForNanos) {

		@Nullable
		String holderDescription() {
			if (this.holder == null) {
				return null;
			}
			return this.holder + " (lease ends in " + TimeUnit.NANOSECONDS.toMillis(this.leaseRemainingNanos) + " ms)";
		}

	}

}
