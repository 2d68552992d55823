package io.github.dblock.jdbc.admin;

import io.github.dblock.jdbc.sql.InsertIds;
import io.github.dblock.jdbc.sql.JdbcLockSupport;
import io.github.dblock.jdbc.sql.LockRows;
import io.github.dblock.jdbc.sql.LockStatements;
import io.github.dblock.jdbc.sql.LockTable;
import io.github.dblock.jdbc.sql.SqlErrors;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import io.github.dblock.LockTemplate;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * Operator access to the lock table: what is held now, one resource's row, and forcing a stuck lock free. Used
 * by the Actuator {@code locks} endpoint and the lock-table health indicator; the SQL lives here, next to the
 * providers' statements, so that the endpoint needs no SQL of its own.
 * <p>
 * Only committed state is visible: a {@link io.github.dblock.LockMode#PESSIMISTIC PESSIMISTIC} holder's row
 * changes are uncommitted while it holds the lock, so it is not listed as held. After it commits, its row shows
 * as held during its minimum hold time, if it had one. A LEASE lock released with a minimum hold keeps its
 * resource busy until the hold ends, but its owner is already cleared, so it is not listed either.
 * <p>
 * Every value is a bind parameter; the validated table name is the only identifier spliced into SQL. Statements
 * run on connections taken directly from the data source, never in a caller's transaction, with the statement
 * timeout as query timeout. Thread-safe.
 */
public final class LockTableAdmin {

	/** The most rows {@link #listHeld(int)} returns. */
	public static final int MAX_LIST_LIMIT = 10_000;

	private static final Log logger = LogFactory.getLog(LockTableAdmin.class);

	private final JdbcLockSupport jdbc;

	private final LockTable table;

	/** Every statement (none of them bounded by the dialect's means: each has the driver's query timeout). */
	private final LockStatements sql;

	/**
	 * @param dataSource the data source holding the lock table
	 * @param table the lock table
	 * @param statementTimeout the query timeout of every statement (whole seconds, at least one)
	 */
	public LockTableAdmin(DataSource dataSource, LockTable table, Duration statementTimeout) {
		this.jdbc = new JdbcLockSupport(dataSource, statementTimeout);
		this.table = table;
		this.sql = LockStatements.of(table, null);
	}

	/** The lock table. */
	public LockTable table() {
		return this.table;
	}

	/**
	 * The locks held now according to the committed rows: an owner and a lease ending after the server's current
	 * time, soonest expiry first.
	 * @param limit the most rows to return, 1 to {@value #MAX_LIST_LIMIT}
	 * @throws org.springframework.dao.DataAccessException if the table cannot be read
	 */
	public HeldLocks listHeld(int limit) {
		if (limit < 1 || limit > MAX_LIST_LIMIT) {
			throw new IllegalArgumentException("limit must be between 1 and " + MAX_LIST_LIMIT + ", was " + limit);
		}
		return this.jdbc.execute("list held locks in " + this.table, (connection) -> {
			Instant now = serverTime(connection);
			List<LockRow> rows = new ArrayList<>();
			boolean truncated = false;
			try (PreparedStatement ps = connection.prepareStatement(this.sql.adminList)) {
				ps.setQueryTimeout(this.jdbc.statementTimeoutSeconds());
				ps.setInt(1, limit + 1);
				try (ResultSet rs = ps.executeQuery()) {
					while (rs.next()) {
						if (rows.size() == limit) {
							truncated = true;
							break;
						}
						rows.add(row(rs));
					}
				}
			}
			JdbcLockSupport.commitIfNeeded(connection);
			return new HeldLocks(now, List.copyOf(rows), truncated);
		});
	}

	/**
	 * The committed row of a resource, held or not.
	 * @throws IllegalArgumentException if the resource name is invalid
	 */
	public Optional<LockRow> find(String resource) {
		LockTemplate.validateResource(resource);
		return this.jdbc.execute("read the lock row of '" + resource + "' in " + this.table, (connection) -> {
			try (PreparedStatement ps = connection.prepareStatement(this.sql.adminFind)) {
				ps.setQueryTimeout(this.jdbc.statementTimeoutSeconds());
				ps.setBytes(1, LockRows.bytes(resource));
				Optional<LockRow> row;
				try (ResultSet rs = ps.executeQuery()) {
					row = rs.next() ? Optional.of(row(rs)) : Optional.<LockRow>empty();
				}
				JdbcLockSupport.commitIfNeeded(connection); // on success only: a failed read reports its own error
				return row;
			}
		});
	}

	/**
	 * Whether the resource is locked now, judged by the database server's clock: its committed row's lease has not
	 * ended ({@code expires_at > UTC_TIMESTAMP(6)}), so an acquisition would be refused. Unlike {@link LockRow#held()}
	 * this includes a lock already released whose minimum hold time still runs (ShedLock's {@code lockAtLeastFor}).
	 * One primary-key read; for the holder, the fencing token and the lease end use {@link #find(String)}. A
	 * {@link io.github.dblock.LockMode#PESSIMISTIC} hold taken inside a transaction shows only once that transaction
	 * has committed (its row lock is not visible to a reader), as it does in {@link #find(String)}. Thread-safe; the
	 * answer may be out of date as soon as it returns.
	 * @param resource the resource name
	 * @return {@code true} if the lock is taken now, {@code false} if it is free or was never used
	 * @throws IllegalArgumentException if the resource name is invalid
	 * @throws org.springframework.dao.DataAccessException if the database could not be reached
	 */
	public boolean isLocked(String resource) {
		LockTemplate.validateResource(resource);
		return this.jdbc.execute("read whether '" + resource + "' is locked in " + this.table, (connection) -> {
			try (PreparedStatement ps = connection.prepareStatement(this.sql.adminLocked)) {
				ps.setQueryTimeout(this.jdbc.statementTimeoutSeconds());
				ps.setBytes(1, LockRows.bytes(resource));
				boolean locked;
				try (ResultSet rs = ps.executeQuery()) {
					locked = rs.next() && rs.getBoolean(1);
				}
				JdbcLockSupport.commitIfNeeded(connection); // on success only: a failed read reports its own error
				return locked;
			}
		});
	}

	/**
	 * The database server's current time (UTC).
	 */
	public Instant serverTime() {
		return this.jdbc.execute("read the server time", LockTableAdmin::serverTime);
	}

	/**
	 * Reads one row of the lock table ({@code SELECT 1 FROM t LIMIT 1}), to check that it exists and can be read.
	 * @throws org.springframework.dao.DataAccessException if it cannot
	 */
	@SuppressWarnings("NullAway") // a lambda returns null for ConnectionWork<T extends @Nullable Object>: see pom.xml
	public void probe() {
		this.jdbc.execute("read the lock table " + this.table, (connection) -> {
			try (PreparedStatement ps = connection.prepareStatement(this.sql.adminProbe)) {
				ps.setQueryTimeout(this.jdbc.statementTimeoutSeconds());
				try (ResultSet rs = ps.executeQuery()) {
					rs.next();
				}
			}
			JdbcLockSupport.commitIfNeeded(connection);
			return null;
		});
	}

	/**
	 * Frees a resource whatever its owner: clears the owner, ends the lease now and advances the fencing token (to
	 * at least the server time in microseconds), so that the former holder's release and renewal fail with a lost
	 * lock and writes guarded by its fencing token are rejected. Runs as one short transaction that first locks the
	 * row, and is logged at WARN with the requester.
	 * <p>
	 * A {@code PESSIMISTIC} holder keeps its row locked in an open transaction; this call then waits up to the
	 * statement timeout and fails with {@link IllegalStateException}: such a lock ends only with its transaction
	 * (or by killing that connection on the server).
	 * <p>
	 * A transaction that the database rolls back with a deadlock or a snapshot-isolation conflict (on Galera and
	 * multi-primary group replication: a certification conflict with a take on another node) changed nothing and
	 * runs again, up to 8 more times (as a LEASE statement does).
	 * @param resource the resource name
	 * @param requestedBy who asked, for the log
	 * @return what was changed, or empty if the table has no row for the resource
	 * @throws IllegalArgumentException if the resource name is invalid
	 * @throws IllegalStateException if the row stayed locked by another transaction for the statement timeout
	 * @throws org.springframework.dao.DataAccessException if the database fails it, or rolled it back with a
	 * conflict every time; nothing was changed then
	 */
	public Optional<ForceRelease> forceRelease(String resource, String requestedBy) {
		LockTemplate.validateResource(resource);
		for (int conflicts = 0;; conflicts++) {
			try {
				return forceReleaseOnce(resource, requestedBy);
			}
			catch (org.springframework.dao.DataAccessException ex) {
				if (conflicts >= JdbcLockSupport.MAX_TRANSIENT_RETRIES || !SqlErrors.isRolledBackConflict(ex)) {
					throw ex;
				}
			}
		}
	}

	private Optional<ForceRelease> forceReleaseOnce(String resource, String requestedBy) {
		String task = "force-release '" + resource + "' in " + this.table;
		try (Connection connection = this.jdbc.rawConnection(
				TimeUnit.SECONDS.toNanos(this.jdbc.statementTimeoutSeconds()))) {
			boolean autoCommit = connection.getAutoCommit();
			int previousReads = JdbcLockSupport.boundReads(connection, this.jdbc.statementTimeoutSeconds());
			try {
				connection.setAutoCommit(false);
				Optional<ForceRelease> result = forceRelease(connection, resource);
				connection.commit();
				result.ifPresent((released) -> log(released, requestedBy));
				return result;
			}
			catch (SQLException | RuntimeException ex) {
				try {
					connection.rollback();
				}
				catch (SQLException ignored) {
					// the original failure is reported
				}
				throw ex;
			}
			finally {
				JdbcLockSupport.restoreAutoCommit(connection, autoCommit);
				JdbcLockSupport.restoreReads(connection, previousReads);
			}
		}
		catch (SQLException ex) {
			if (SqlErrors.isBusy(ex)) {
				throw new IllegalStateException("Could not force-release '" + resource + "': its row in " + this.table
						+ " stayed locked by another transaction (a PESSIMISTIC holder?) for "
						+ this.jdbc.statementTimeoutSeconds() + " s; that lock ends with its transaction", ex);
			}
			throw this.jdbc.translate(task, ex);
		}
	}

	private Optional<ForceRelease> forceRelease(Connection connection, String resource) throws SQLException {
		byte[] key = LockRows.bytes(resource);
		LockRow before;
		try (PreparedStatement ps = connection.prepareStatement(this.sql.adminLockRow)) {
			ps.setQueryTimeout(this.jdbc.statementTimeoutSeconds());
			ps.setBytes(1, key);
			try (ResultSet rs = ps.executeQuery()) {
				if (!rs.next()) {
					return Optional.empty();
				}
				before = row(rs);
			}
		}
		long token = 0;
		try (PreparedStatement ps = connection.prepareStatement(this.sql.adminForceRelease, Statement.RETURN_GENERATED_KEYS)) {
			ps.setQueryTimeout(this.jdbc.statementTimeoutSeconds());
			ps.setBytes(1, key);
			ps.executeUpdate();
			token = InsertIds.lastInsertId(ps);
		}
		if (token <= 0) {
			try (PreparedStatement ps = connection.prepareStatement(this.sql.adminToken)) {
				ps.setQueryTimeout(this.jdbc.statementTimeoutSeconds());
				ps.setBytes(1, key);
				try (ResultSet rs = ps.executeQuery()) {
					rs.next();
					token = rs.getLong(1);
				}
			}
		}
		return Optional.of(new ForceRelease(resource, before.held(), before.holder(), before.fencingToken(), token));
	}

	private void log(ForceRelease released, String requestedBy) {
		logger.warn("Lock '" + released.resource() + "' in " + this.table + " force-released at the request of "
				+ requestedBy + ": it was " + (released.wasHeld() ? "held by " + released.previousHolder()
						: "not held (last holder " + released.previousHolder() + ")")
				+ ", fencing token " + released.previousFencingToken() + " -> " + released.fencingToken());
	}

	private static Instant serverTime(Connection connection) throws SQLException {
		try (Statement statement = connection.createStatement();
				ResultSet rs = statement.executeQuery(LockStatements.SERVER_TIME)) {
			rs.next();
			return instant(rs, 1);
		}
	}

	private static LockRow row(ResultSet rs) throws SQLException {
		return new LockRow(new String(rs.getBytes(1), StandardCharsets.UTF_8), rs.getString(2), rs.getLong(3),
				instant(rs, 4), instant(rs, 5), rs.getBoolean(6));
	}

	/** {@code DATETIME(6)} columns hold UTC server time with no zone; read without any time-zone conversion. */
	private static Instant instant(ResultSet rs, int column) throws SQLException {
		return rs.getObject(column, LocalDateTime.class).toInstant(ZoneOffset.UTC);
	}

	/**
	 * One row of the lock table.
	 * @param resource the lock name
	 * @param holder the (last) holder's description
	 * @param fencingToken the highest fencing token handed out for the resource: the token of the (last) acquisition,
	 * or for LEASE the last of the block of tokens its take reserved for hand-offs inside the holder's JVM
	 * @param acquiredAt when the (last) acquisition happened, on the server's clock
	 * @param expiresAt when the lease ends or ended, on the server's clock
	 * @param held whether the row has an owner and its lease has not ended
	 */
	public record LockRow(String resource, @Nullable String holder, long fencingToken, Instant acquiredAt,
			Instant expiresAt, boolean held) {
	}

	/**
	 * The locks held now.
	 * @param serverTime the server's current time when the list was read
	 * @param locks the held locks, soonest expiry first
	 * @param truncated whether more locks are held than were returned
	 */
	public record HeldLocks(Instant serverTime, List<LockRow> locks, boolean truncated) {
	}

	/**
	 * The result of a forced release.
	 * @param resource the lock name
	 * @param wasHeld whether the row had an owner with a running lease before
	 * @param previousHolder the (last) holder before
	 * @param previousFencingToken the fencing token before
	 * @param fencingToken the fencing token now; every later acquisition gets a greater one
	 */
	public record ForceRelease(String resource, boolean wasHeld, @Nullable String previousHolder,
			long previousFencingToken, long fencingToken) {
	}

}
