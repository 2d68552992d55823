package io.github.dblock.jdbc.sql;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import javax.sql.DataSource;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.configuration.FluentConfiguration;
import org.jspecify.annotations.Nullable;
import org.springframework.jdbc.CannotGetJdbcConnectionException;

/**
 * Makes sure the lock table exists before any lock is taken: either by running this library's own Flyway
 * migrations, or, when migrations are switched off, by checking that the table has the expected columns.
 * <p>
 * The migrations run on a private {@link Flyway} instance (never a Spring bean, so Spring Boot's own Flyway
 * auto-configuration is not affected) with their own location ({@value #MIGRATION_LOCATION}) and their own
 * schema-history table ({@code <table>_schema_history}), so they never collide with the application's
 * migrations. A schema that already has other tables is baselined at version 0 for this history table, so that
 * all of the library's migrations apply.
 */
public final class LockSchema {

	/** Where the library's migrations live on the classpath. */
	public static final String MIGRATION_LOCATION = "classpath:io/github/dblock/db/migration";

	/** Columns the lock providers need. */
	static final Set<String> REQUIRED_COLUMNS = Set.of("resource", "owner_token", "holder", "fencing_token",
			"acquired_at", "expires_at", "waiting_until", "waiting_owner");

	private static final Log logger = LogFactory.getLog(LockSchema.class);

	private LockSchema() {
	}

	/**
	 * Creates or upgrades the lock table with the library's Flyway migrations.
	 * @param dataSource the lock data source; its user needs DDL rights (CREATE, ALTER, INDEX) and DML on the lock
	 * and history tables
	 * @param table the lock table
	 * @throws org.flywaydb.core.api.FlywayException if a migration fails
	 */
	public static void migrate(DataSource dataSource, LockTable table) {
		migrate(Flyway.configure(LockSchema.class.getClassLoader()).dataSource(dataSource), table);
	}

	/**
	 * Creates or upgrades the lock table with the library's Flyway migrations on a connection of its own, with
	 * credentials that may differ from the lock data source's (a DDL-capable account used only for the migration).
	 * @param url the JDBC URL of the database holding the lock table
	 * @param user the login user; needs DDL rights (CREATE, ALTER, INDEX) and DML on the lock and history tables
	 * @param password the login password, or {@code null} for none
	 * @param table the lock table
	 * @throws org.flywaydb.core.api.FlywayException if the connection or a migration fails
	 */
	public static void migrate(String url, String user, @Nullable String password, LockTable table) {
		migrate(Flyway.configure(LockSchema.class.getClassLoader()).dataSource(url, user, password), table);
	}

	/**
	 * Whether Flyway's history table of this lock table records every migration up to {@code latestVersion} as
	 * applied and none as failed: one query, so that a start-up can skip Flyway (about a second: it loads, scans and
	 * validates) when nothing is to be done. Checksums of the applied scripts are not compared.
	 * @param dataSource the lock data source; its user needs SELECT on the history table
	 * @param table the lock table, whose history table is read
	 * @param latestVersion the highest version among the library's migration scripts
	 * @return whether the schema is known to be up to date
	 * @throws SQLException if the history table cannot be read (it does not exist yet, or no SELECT privilege)
	 */
	public static boolean isUpToDate(DataSource dataSource, LockTable table, int latestVersion) throws SQLException {
		try (Connection connection = dataSource.getConnection();
				java.sql.Statement statement = connection.createStatement();
				ResultSet rs = statement.executeQuery(LockTableSql.migrationHistory(table))) {
			return rs.next() && rs.getInt(1) == latestVersion && rs.getInt(2) == 0;
		}
	}

	private static void migrate(FluentConfiguration configuration, LockTable table) {
		Flyway flyway = configuration
			.locations(MIGRATION_LOCATION)
			.table(table.historyTableName())
			.placeholders(Map.of("lock_table", table.name()))
			.baselineOnMigrate(true)
			.baselineVersion("0")
			.cleanDisabled(true)
			.load();
		int applied = flyway.migrate().migrationsExecuted;
		if (applied > 0) {
			logger.info("Applied " + applied + " migration(s) to lock table '" + table + "'");
		}
	}

	/**
	 * Checks that the lock table exists in the connection's current schema with every column the providers
	 * use.
	 * @param property the configuration property that switches migrations on, named in the error message
	 * @throws IllegalStateException naming the table, the missing columns and the property, if the check fails
	 */
	public static void validate(DataSource dataSource, LockTable table, String property) {
		Set<String> present = new LinkedHashSet<>();
		String schema;
		try (Connection connection = dataSource.getConnection()) {
			schema = connection.getCatalog();
			try (PreparedStatement ps = connection.prepareStatement(LockStatements.TABLE_COLUMNS)) {
				ps.setString(1, table.name());
				try (ResultSet rs = ps.executeQuery()) {
					while (rs.next()) {
						present.add(rs.getString(1));
					}
				}
			}
		}
		catch (SQLException ex) {
			throw new CannotGetJdbcConnectionException("Could not check the lock table '" + table + "'", ex);
		}
		if (present.isEmpty()) {
			throw new IllegalStateException("Lock table '" + table + "' does not exist in schema '" + schema
					+ "' and migrations are switched off (" + property + "=false). Create it with "
					+ MIGRATION_LOCATION + "/V1__create_lock_table.sql and the later scripts there in version order "
					+ "(V2 for READ and WRITE locks, V3 for semaphores, V4 for idempotency keys, V5__add_waiting_until.sql, V6__add_waiting_owner.sql), "
					+ "or set " + property + "=true.");
		}
		List<String> missing = new ArrayList<>();
		for (String column : REQUIRED_COLUMNS.stream().sorted().toList()) {
			if (!present.contains(column)) {
				missing.add(column);
			}
		}
		if (!missing.isEmpty()) {
			throw new IllegalStateException("Lock table '" + table + "' in schema '" + schema
					+ "' lacks the columns " + missing + " and migrations are switched off (" + property
					+ "=false). Apply " + MIGRATION_LOCATION + " or set " + property + "=true.");
		}
	}

}
