package io.github.dblock.jdbc.lease;

import io.github.dblock.jdbc.sql.JdbcLockSupport;
import io.github.dblock.jdbc.sql.LockRows;
import io.github.dblock.jdbc.sql.LockSchema;
import io.github.dblock.jdbc.sql.LockStatements;
import io.github.dblock.jdbc.sql.SqlErrors;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Map;

import org.jspecify.annotations.Nullable;
import org.springframework.dao.DataAccessException;

/**
 * The pool rows of {@link JdbcSemaphoreProvider} ({@code <table>_sem}: one per semaphore, its permit count and
 * fencing token): created from the configured initial counts, changed at run time, read. A pool's row is created
 * from the configured count the first time it is needed (a plain {@code INSERT}; a duplicate-key error means another
 * node created it first), never overwritten by it. Every statement by primary key, every value a bind parameter.
 * Thread-safe.
 */
final class SemaphorePools {

	/** The configuration property holding a pool's initial permit count, with {@code %s} for the name. */
	static final String PERMITS_PROPERTY = "distributed-lock.semaphores.%s.permits";

	private final JdbcLockSupport jdbc;

	private final LockStatements sql;

	private final Map<String, Integer> configuredPermits;

	private final String poolTable;

	/**
	 * @param configuredPermits initial permit counts per pool name, each at least 1 (copied)
	 * @throws IllegalArgumentException if a configured count is below 1
	 */
	SemaphorePools(JdbcLockSupport jdbc, LockStatements sql, Map<String, Integer> configuredPermits, String poolTable) {
		configuredPermits.forEach(SemaphorePools::checkPermits);
		this.jdbc = jdbc;
		this.sql = sql;
		this.configuredPermits = Map.copyOf(configuredPermits);
		this.poolTable = poolTable;
	}

	static void checkPermits(String name, Integer permits) {
		if (permits == null || permits < 1) {
			throw new IllegalArgumentException("Semaphore '" + name + "' must have at least 1 permit, was " + permits
					+ " (" + PERMITS_PROPERTY.formatted(name) + ")");
		}
	}

	/** See {@link JdbcSemaphoreProvider#createConfiguredPools()}. */
	void createConfigured() {
		try {
			this.configuredPermits.forEach((name, permits) -> this.jdbc.execute("create semaphore '" + name + "'",
					(connection) -> insert(connection, name, permits, this.jdbc.statementTimeoutSeconds())));
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

	/**
	 * Creates a pool row as its own statement.
	 * @return {@code false} if it existed already (a duplicate key: another node created it first)
	 */
	boolean insert(Connection connection, String name, int permits, int timeout) throws SQLException {
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.semaphore.semInsertPool, timeout, false)) {
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
	int configured(String name) {
		Integer permits = this.configuredPermits.get(name);
		if (permits == null) {
			throw new IllegalArgumentException("Semaphore '" + name + "' is unknown: it has no row in the database and "
					+ "no configured permit count. Set " + PERMITS_PROPERTY.formatted(name) + " (use "
					+ "distributed-lock.semaphores[" + name + "].permits for a name with characters other than letters, "
					+ "digits and '-'), or call SemaphoreTemplate.setPermits(\"" + name + "\", n) first");
		}
		return permits;
	}

	@SuppressWarnings("NullAway") // a lambda returns null for ConnectionWork<T extends @Nullable Object>: see pom.xml
	void setPermits(String name, int permits) {
		checkPermits(name, permits);
		this.jdbc.execute("set the permits of semaphore '" + name + "'", (connection) -> {
			int timeout = this.jdbc.statementTimeoutSeconds();
			// 0 matched rows means either no row or (with useAffectedRows=true) an unchanged value: the insert tells
			// the two apart, and after a duplicate key the update is repeated in case another node inserted first
			if (updatePermits(connection, name, permits, timeout) == 0 && !insert(connection, name, permits, timeout)) {
				updatePermits(connection, name, permits, timeout);
			}
			return null;
		});
	}

	private int updatePermits(Connection connection, String name, int permits, int timeout) throws SQLException {
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.semaphore.semUpdatePermits, timeout, false)) {
			ps.setInt(1, permits);
			ps.setBytes(2, LockRows.bytes(name));
			int matched = ps.executeUpdate();
			JdbcLockSupport.commitIfNeeded(connection);
			return matched;
		}
	}

	int getPermits(String name) {
		Integer permits = readInt("read the permits", this.sql.semaphore.semPermits, name);
		return (permits != null) ? permits : configured(name);
	}

	int availablePermits(String name) {
		Integer available = readInt("count the free permits", this.sql.semaphore.semAvailable, name);
		return Math.max(0, (available != null) ? available : configured(name));
	}

	/** A read outside a transaction: committed at once on a pool that hands out connections without autocommit. */
	@Nullable
	@SuppressWarnings("NullAway") // a lambda returns null for ConnectionWork<T extends @Nullable Object>: see pom.xml
	private Integer readInt(String task, String statement, String name) {
		return this.jdbc.execute(task + " of semaphore '" + name + "'", (connection) -> {
			Integer value = queryInt(connection, statement, this.jdbc.statementTimeoutSeconds(), name);
			JdbcLockSupport.commitIfNeeded(connection);
			return value;
		});
	}

	@Nullable
	Integer queryInt(Connection connection, String statement, int timeout, String name) throws SQLException {
		Long value = queryLong(connection, statement, timeout, name);
		return (value != null) ? Math.toIntExact(value) : null;
	}

	/** The first column of the first row, by the name and further string parameters; {@code null} for no row. */
	@Nullable
	Long queryLong(Connection connection, String statement, int timeout, String name, String... more)
			throws SQLException {
		try (PreparedStatement ps = this.sql.prepareBounded(connection, statement, timeout, false)) {
			ps.setBytes(1, LockRows.bytes(name));
			for (int i = 0; i < more.length; i++) {
				ps.setString(i + 2, more[i]);
			}
			try (ResultSet rs = JdbcLockSupport.query(ps)) {
				return rs.next() ? rs.getLong(1) : null;
			}
		}
	}

}
