package io.github.dblock.autoconfigure;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import javax.sql.DataSource;

import io.github.dblock.LockMode;
import io.github.dblock.jdbc.sql.DatabaseServer;
import io.github.dblock.jdbc.admin.DatabaseTopology;
import io.github.dblock.jdbc.sql.LockSchema;
import io.github.dblock.jdbc.sql.LockTable;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.flywaydb.core.api.FlywayException;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.InitializingBean;
import org.springframework.jdbc.CannotGetJdbcConnectionException;

/**
 * Runs at start-up, before any lock bean is used:
 * <ol>
 * <li>checks that the lock data source is MySQL or MariaDB ({@link DatabaseServer});</li>
 * <li>checks its topology ({@link DatabaseTopology}): a read-only server or connection, or a replica, stops
 * start-up; on a Galera cluster or a multi-primary group it warns once and refuses {@link LockMode#PESSIMISTIC};
 * with {@code distributed-lock.topology.enforce=false} both are only logged;</li>
 * <li>migrates the lock table, on the lock data source or with the separate migration credentials
 * ({@code distributed-lock.flyway.user}), or validates it when {@code distributed-lock.flyway.enabled=false}. A
 * migration refused for lack of privilege stops start-up naming the privilege and the ways out.</li>
 * </ol>
 * Not thread-safe during {@link #afterPropertiesSet()}; its getters are safe afterwards.
 */
public class LockSchemaInitializer implements InitializingBean {

	/** Server errors meaning "access denied": table (1142), column (1143), database (1044), privilege (1227). */
	private static final Set<Integer> ACCESS_DENIED = Set.of(1142, 1143, 1044, 1227);

	private static final Log logger = LogFactory.getLog(LockSchemaInitializer.class);

	/** The highest version among the library's migration scripts. */
	static final int LATEST_VERSION = latestVersion();

	private final DataSource dataSource;

	private final LockTable table;

	private final boolean migrate;

	private boolean enforceTopology = true;

	private @Nullable String migrationUrl;

	private @Nullable String migrationUser;

	private @Nullable String migrationPassword;

	/** Found by {@link #afterPropertiesSet()}. */
	private @Nullable DatabaseServer server;

	/** Found by {@link #afterPropertiesSet()}. */
	private @Nullable DatabaseTopology topology;

	private Map<LockMode, String> refusedModes = Map.of();

	private @Nullable String schemaStatus;

	public LockSchemaInitializer(DataSource dataSource, LockTable table, boolean migrate) {
		this.dataSource = dataSource;
		this.table = table;
		this.migrate = migrate;
	}

	/**
	 * Whether an unsafe topology stops start-up and refuses PESSIMISTIC mode ({@code true}, the default) or is only
	 * logged at WARN.
	 */
	public void setEnforceTopology(boolean enforceTopology) {
		this.enforceTopology = enforceTopology;
	}

	/**
	 * Runs the migration on a connection of its own with these credentials instead of on the lock data source.
	 * @param url the JDBC URL, or {@code null} for the lock data source's URL (from its connection metadata)
	 * @param user the login user; {@code null} to migrate on the lock data source
	 * @param password the password, or {@code null} for none
	 */
	public void setMigrationCredentials(@Nullable String url, @Nullable String user, @Nullable String password) {
		this.migrationUrl = url;
		this.migrationUser = user;
		this.migrationPassword = password;
	}

	/**
	 * Checks the server and its topology, then migrates or validates the lock table.
	 * @throws IllegalStateException if the server is neither MySQL nor MariaDB, is read-only, a replica, or hands
	 * out read-only connections (with enforcement on); or if the table is missing or incomplete with migrations off
	 * @throws LockTableMigrationDeniedException if the migration lacks a privilege
	 * @throws LockDatabaseUnavailableException if the database cannot be reached, naming its URL
	 * @throws FlywayException if a migration fails for another reason
	 */
	@Override
	public void afterPropertiesSet() {
		DatabaseServer server = detectServer();
		this.server = server;
		if (!server.isSupportedVersion()) {
			logger.warn("Distributed locks are tested on MySQL 8.0+ and MariaDB 10.6+; the lock database is " + server);
		}
		checkTopology(server);
		if (!this.migrate) {
			LockSchema.validate(this.dataSource, this.table, DistributedLockProperties.PREFIX + ".flyway.enabled");
			this.schemaStatus = "schema checked, migrations off";
		}
		else if (isUpToDate()) {
			this.schemaStatus = "schema v" + LATEST_VERSION + ", up to date";
		}
		else {
			migrate();
			this.schemaStatus = "schema migrated to v" + LATEST_VERSION;
		}
		logger.debug("Lock table '" + this.table + "' ready on " + server);
	}

	/**
	 * The server behind the lock data source: the first connection at start-up, so a database that cannot be reached
	 * fails here, as a {@link LockDatabaseUnavailableException} naming the URL (reported by
	 * {@link LockDatabaseUnavailableFailureAnalyzer}).
	 */
	private DatabaseServer detectServer() {
		try {
			return DatabaseServer.detect(this.dataSource);
		}
		catch (RuntimeException ex) {
			if (!(ex instanceof CannotGetJdbcConnectionException) && !hasSqlCause(ex)) {
				throw ex; // not a connection failure (a pool's own configuration error, say): as it is
			}
			throw new LockDatabaseUnavailableException(configuredUrl(this.dataSource), ex);
		}
	}

	private static boolean hasSqlCause(Throwable ex) {
		for (Throwable cause = ex; cause != null && cause.getCause() != cause; cause = cause.getCause()) {
			if (cause instanceof SQLException) {
				return true;
			}
		}
		return false;
	}

	/**
	 * The JDBC URL a data source is configured with ({@code getJdbcUrl()} of HikariCP, {@code getUrl()} of most
	 * others), read without connecting, through Spring's {@code DelegatingDataSource} wrappers; {@code null} if none.
	 */
	static @Nullable String configuredUrl(DataSource dataSource) {
		Object current = dataSource;
		for (int depth = 0; depth < 10 && current != null; depth++) {
			for (String getter : new String[] { "getJdbcUrl", "getUrl" }) {
				java.lang.reflect.Method method = org.springframework.util.ReflectionUtils.findMethod(current.getClass(),
						getter);
				if (method != null && method.getReturnType() == String.class
						&& java.lang.reflect.Modifier.isPublic(method.getModifiers())) {
					try {
						Object url = method.invoke(current);
						if (url != null) {
							return (String) url;
						}
					}
					catch (ReflectiveOperationException | RuntimeException ex) {
						// not readable: try a wrapped data source
					}
				}
			}
			current = (current instanceof org.springframework.jdbc.datasource.DelegatingDataSource delegating)
					? delegating.getTargetDataSource() : null;
		}
		return null;
	}

	private void checkTopology(DatabaseServer server) {
		DatabaseTopology topology = detectTopology(this.dataSource, server);
		this.topology = topology;
		logger.debug("Lock database topology: " + topology);
		if (!topology.replicaStatusKnown()) {
			logger.debug("Replica status of the lock database not checked: the lock DataSource's user may not read it");
		}
		List<String> readOnly = topology.readOnlyReasons();
		if (!readOnly.isEmpty()) {
			String message = "Distributed locks need a writable primary, but on the lock database (" + server + ") "
					+ String.join("; ", readOnly) + ". Every lock is a write: point the lock DataSource at the primary "
					+ "(spring.datasource.url, or a @LockDataSource / distributed-lock.datasource pool) with read-write "
					+ "connections.";
			if (this.enforceTopology) {
				throw new IllegalStateException(message + " Only if a proxy answers this check from another server than "
						+ "the one the lock statements reach, set " + DistributedLockProperties.PREFIX
						+ ".topology.enforce=false.");
			}
			logger.warn(message + " Starting anyway because " + DistributedLockProperties.PREFIX
					+ ".topology.enforce=false.");
		}
		String durability = topology.clusterDurabilityWarning();
		if (durability != null) {
			logger.warn("Lock database: " + durability + ".");
		}
		String reason = topology.pessimisticRefusal();
		if (reason != null) {
			String relies = " LEASE and OPTIMISTIC locks rely on the cluster aborting the later of two conflicting "
					+ "commits on the lock row, and LEASE expiry on the nodes' clocks agreeing (keep them synchronized). "
					+ "Galera clusters have been seen to lose committed transactions (Jepsen): protect data with fencing "
					+ "tokens.";
			if (this.enforceTopology) {
				Map<LockMode, String> refused = new EnumMap<>(LockMode.class);
				refused.put(LockMode.PESSIMISTIC, reason);
				this.refusedModes = Collections.unmodifiableMap(refused);
				logger.warn("PESSIMISTIC locks are refused: " + reason + relies);
			}
			else {
				logger.warn("PESSIMISTIC locks are unsafe here, but allowed because " + DistributedLockProperties.PREFIX
						+ ".topology.enforce=false: " + reason + relies);
			}
		}
	}

	/**
	 * Reads the topology of the lock database; {@link DatabaseTopology#detect} unless overridden (tests describe
	 * clusters that are not at hand this way).
	 */
	protected DatabaseTopology detectTopology(DataSource dataSource, DatabaseServer server) {
		return DatabaseTopology.detect(dataSource, server);
	}

	/**
	 * Whether the history table records every migration of this library as applied and none as failed: one query,
	 * and then Flyway (about a second of start-up: it loads, scans and validates) is not run at all. Checksums of the
	 * applied scripts are not compared on this path. Any error (no history table yet, no SELECT privilege on it)
	 * means "not known to be up to date" and leaves the work to Flyway.
	 */
	boolean isUpToDate() {
		try {
			return LockSchema.isUpToDate(this.dataSource, this.table, LATEST_VERSION);
		}
		catch (SQLException ex) {
			logger.debug("Lock table history not read (" + ex.getMessage() + "); running the migrations");
			return false;
		}
	}

	/** The highest version among the library's migration scripts ({@code V<n>__*.sql}). */
	static int latestVersion() {
		try {
			int latest = 0;
			org.springframework.core.io.Resource[] scripts = new org.springframework.core.io.support.PathMatchingResourcePatternResolver(
					LockSchemaInitializer.class.getClassLoader())
				.getResources(LockSchema.MIGRATION_LOCATION.replace("classpath:", "classpath*:") + "/V*__*.sql");
			for (org.springframework.core.io.Resource script : scripts) {
				String name = String.valueOf(script.getFilename());
				latest = Math.max(latest, Integer.parseInt(name.substring(1, name.indexOf("__"))));
			}
			return latest;
		}
		catch (java.io.IOException | RuntimeException ex) {
			return Integer.MAX_VALUE; // unknown: never "up to date", Flyway decides
		}
	}

	/** What start-up did with the lock table, for the start-up summary line; {@code null} before start-up. */
	public @Nullable String getSchemaStatus() {
		return this.schemaStatus;
	}

	private void migrate() {
		DatabaseServer server = getServer();
		logger.info("Migrating lock table '" + this.table + "' to v" + LATEST_VERSION + " on " + server
				+ ((server.product() == DatabaseServer.Product.MARIADB) ? " (Flyway's own log line names the server as "
						+ "the JDBC driver reports it: 'MySQL 5.5' is this MariaDB through MySQL Connector/J)" : ""));
		try {
			if (this.migrationUser != null) {
				String url = (this.migrationUrl != null) ? this.migrationUrl : dataSourceUrl();
				logger.debug("Migrating lock table '" + this.table + "' as '" + this.migrationUser + "' on " + url);
				LockSchema.migrate(url, this.migrationUser, this.migrationPassword, this.table);
			}
			else {
				LockSchema.migrate(this.dataSource, this.table);
			}
		}
		catch (FlywayException ex) {
			SQLException denied = accessDenied(ex);
			if (denied == null) {
				throw ex;
			}
			String who = (this.migrationUser != null) ? "The migration user '" + this.migrationUser
					+ "' (distributed-lock.flyway.user)" : "The lock DataSource's user";
			throw new LockTableMigrationDeniedException(who, this.table, String.valueOf(denied.getMessage()), ex);
		}
	}

	/** The URL of the lock data source, as its driver reports it. */
	private String dataSourceUrl() {
		try (Connection connection = this.dataSource.getConnection()) {
			return connection.getMetaData().getURL();
		}
		catch (SQLException ex) {
			throw new CannotGetJdbcConnectionException("Could not read the lock DataSource's URL", ex);
		}
	}

	private static @Nullable SQLException accessDenied(Throwable ex) {
		for (Throwable cause = ex; cause != null; cause = cause.getCause()) {
			if (cause instanceof SQLException sql) {
				for (SQLException next = sql; next != null; next = next.getNextException()) {
					if (ACCESS_DENIED.contains(next.getErrorCode())) {
						return next;
					}
				}
			}
			if (cause.getCause() == cause) {
				break;
			}
		}
		return null;
	}

	/**
	 * The server found at start-up.
	 * @throws IllegalStateException before {@link #afterPropertiesSet()} has run
	 */
	public DatabaseServer getServer() {
		return checked(this.server);
	}

	/**
	 * The topology found at start-up.
	 * @throws IllegalStateException before {@link #afterPropertiesSet()} has run
	 */
	public DatabaseTopology getTopology() {
		return checked(this.topology);
	}

	private static <T> T checked(@Nullable T found) {
		if (found == null) {
			throw new IllegalStateException("The lock database has not been checked yet (afterPropertiesSet)");
		}
		return found;
	}

	/**
	 * The lock modes refused on this database, with the reason (PESSIMISTIC on a Galera cluster or a multi-primary
	 * group, unless enforcement is off); empty otherwise.
	 */
	public Map<LockMode, String> getRefusedModes() {
		return this.refusedModes;
	}

	/** The data source holding the lock table. */
	public DataSource getDataSource() {
		return this.dataSource;
	}

	/** The lock table. */
	public LockTable getTable() {
		return this.table;
	}

}
