package io.github.dblock.jdbc.sql;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.concurrent.TimeUnit;

import org.jspecify.annotations.Nullable;

/**
 * The operations on lock rows that the providers share (statements in {@link LockStatements}). Rows are addressed by
 * primary key only; every value is a bind parameter; instants are computed by the server.
 * <p>
 * Internal machinery of the JDBC engine, public only so that the other {@code io.github.dblock.jdbc} packages
 * can use it: not API, may change in any release.
 */
public final class LockRows {

	private final LockStatements sql;

	/**
	 * Whether the driver has returned a fencing token through the generated keys of a statement (see
	 * {@link #fencingToken}): only then can a release read a waiter's announcement the same way.
	 */
	private volatile boolean generatedKeysSeen;

	/** Rows of the lock table, with the statements of a provider (in its dialect). */
	public LockRows(LockStatements sql) {
		this.sql = sql;
	}

	/** Rows of the lock table, with statements in the dialect of the first connection that runs one. */
	public LockRows(LockTable table) {
		this(LockStatements.of(table, null));
	}

	/**
	 * Announces that a waiter will try again within {@code nanos}, on a row whose lease still runs (a free row is left
	 * alone), as its own autocommit statement. A hint for the holder's JVM (see {@link LeaseStatements#leaseRelease}); the
	 * caller may ignore a failure.
	 */
	public void announceWaiter(Connection connection, String resource, long nanos, int timeoutSeconds) throws SQLException {
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.lease.rowAnnounce, timeoutSeconds, false)) {
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
	 * {@link LeaseStatements#leaseRelease}). A waiter that is already next in line extends its announcement.
	 * @return whether the waiter is next in line now
	 */
	public boolean announceSuccessor(Connection connection, String resource, String owner, long nanos, int timeoutSeconds)
			throws SQLException {
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.lease.rowSuccessor, timeoutSeconds, false)) {
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
	public void withdraw(Connection connection, String resource, String owner, int timeoutSeconds) throws SQLException {
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.lease.rowWithdraw, timeoutSeconds, false)) {
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
	public static final long HANDED_OVER = -2;

	/**
	 * What a release with {@link LeaseStatements#leaseRelease} (prepared with {@code RETURN_GENERATED_KEYS}) learned:
	 * {@link #HANDED_OVER} if it handed the lease to the waiter next in line; else nanoseconds until the attempt a
	 * waiter announced, 0 if nobody did; -1 if this driver does not return such values (then nobody can be known to
	 * wait).
	 */
	public long announcedWaitNanos(PreparedStatement executed) throws SQLException {
		if (!this.generatedKeysSeen) {
			return -1;
		}
		long value = InsertIds.generatedKey(executed);
		return (value == 1) ? HANDED_OVER : TimeUnit.MICROSECONDS.toNanos(Math.max(0, value));
	}

	/** Resource names are stored as their UTF-8 bytes in a {@code VARBINARY} column: exact comparison. */
	public static byte[] bytes(String resource) {
		return resource.getBytes(StandardCharsets.UTF_8);
	}

	/**
	 * The holder and remaining lease of a resource's row (committed state), or {@code null} if there is no row.
	 */
	@Nullable
	public Peek peek(Connection connection, String resource, int timeoutSeconds) throws SQLException {
		@Nullable Peek peek = null;
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.lease.rowPeek, timeoutSeconds, false)) {
			ps.setBytes(1, bytes(resource));
			try (ResultSet rs = JdbcLockSupport.query(ps)) {
				if (rs.next()) {
					peek = new Peek(rs.getString(1), TimeUnit.MICROSECONDS.toNanos(Math.max(0, rs.getLong(2))),
							TimeUnit.MICROSECONDS.toNanos(Math.max(0, rs.getLong(3))), rs.getString(4),
							TimeUnit.MICROSECONDS.toNanos(Math.max(0, rs.getLong(5))));
				}
			}
		}
		// on success only: a failed read's own error is the one to report (the pool may have closed the connection)
		JdbcLockSupport.commitIfNeeded(connection);
		return peek;
	}

	/**
	 * Creates a free row for a never-seen resource, as its own statement.
	 * @return {@code false} if the row already existed (another node created it first)
	 */
	public boolean insertFree(Connection connection, String resource, int timeoutSeconds) throws SQLException {
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.lease.rowInsertFree, timeoutSeconds, false)) {
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
	public long fencingToken(Connection connection, PreparedStatement executed, String resource, String owner,
			int timeoutSeconds) throws SQLException {
		long token = InsertIds.lastInsertId(executed);
		if (token > 0) {
			this.generatedKeysSeen = true;
			return token;
		}
		try (PreparedStatement query = this.sql.prepareBounded(connection, this.sql.lease.rowToken, timeoutSeconds, false)) {
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
	public record Peek(@Nullable String holder, long leaseRemainingNanos, long heldForNanos, @Nullable String waitingOwner,
			long waitingRemainingNanos) {

		/** Whether the given owner is next in line for at least {@code nanos} more. */
		public boolean nextInLine(String owner, long nanos) {
			return owner.equals(this.waitingOwner) && this.waitingRemainingNanos > nanos;
		}

		@Nullable
		public String holderDescription() {
			if (this.holder == null) {
				return null;
			}
			return this.holder + " (lease ends in " + TimeUnit.NANOSECONDS.toMillis(this.leaseRemainingNanos) + " ms)";
		}

	}

}
