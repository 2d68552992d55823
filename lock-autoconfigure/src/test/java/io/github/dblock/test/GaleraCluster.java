package io.github.dblock.test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A real MariaDB Galera cluster of the test's own: {@code size} {@code mariadbd} nodes of the machine's MariaDB
 * with Debian's Galera 4 provider ({@link #PROVIDER}, package {@code galera-4}), on free loopback ports, each with
 * its own data directory under one temporary directory that {@link #close()} deletes.
 * <p>
 * The first node is installed with {@code mariadb-install-db} and bootstraps the cluster
 * ({@code --wsrep-new-cluster}); the others start from empty data directories and receive a full state transfer
 * with {@code wsrep_sst_method=rsync}. The joiner's side of that transfer is an {@code rsync} daemon which, started
 * by root, runs as {@code nobody}: so the joiners' data directories belong to {@code nobody} (their parents are
 * world-traversable), or the transfer fails with "Permission denied" (rsync code 3 or 23). The
 * {@code mariabackup} method was tried too: it sleeps 10 s per joiner by design and rejects the server's
 * {@code --innodb-buffer-pool-size} option.
 * <p>
 * Group communication time-outs are shortened ({@code evs.suspect_timeout=PT3S}, {@code evs.inactive_timeout=PT6S})
 * so that a killed node is evicted, or a lost quorum noticed, within seconds. {@code pc.recovery=false}: a
 * cluster is never restarted from its saved view. Not thread-safe: one test class drives it; every process is
 * killed when the JVM exits even if {@link #close()} is not reached.
 */
public final class GaleraCluster implements AutoCloseable {

	/** The Galera provider library; when it is missing no cluster can start. */
	public static final Path PROVIDER = Path.of("/usr/lib/galera/libgalera_smm.so");

	/** The database the tests use, created on the first node before the others join. */
	public static final String DATABASE = "locks";

	private final Path baseDir;

	private final List<MariaDbProcess> nodes;

	private final Duration startTime;

	private GaleraCluster(Path baseDir, List<MariaDbProcess> nodes, Duration startTime) {
		this.baseDir = baseDir;
		this.nodes = nodes;
		this.startTime = startTime;
	}

	/**
	 * Starts a cluster of {@code size} nodes and waits until every node is {@code Synced} in a primary component of
	 * that size.
	 * @throws IllegalStateException with the failing node's error log if the cluster does not form within 3 minutes;
	 * everything started is killed and deleted then
	 */
	public static GaleraCluster start(int size) {
		if (!Files.isRegularFile(PROVIDER)) {
			throw new IllegalStateException("No Galera provider at " + PROVIDER + ": install Debian's galera-4 package "
					+ "(apt-get install -y galera-4 mariadb-backup; .ci/run does)");
		}
		long started = System.nanoTime();
		Path base;
		try {
			base = Files.createTempDirectory("lock-galera-");
			Files.setPosixFilePermissions(base, PosixFilePermissions.fromString("rwxr-xr-x"));
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		List<MariaDbProcess> nodes = new ArrayList<>();
		try {
			int[] sqlPorts = new int[size];
			int[] groupPorts = new int[size];
			List<String> members = new ArrayList<>();
			for (int i = 0; i < size; i++) {
				sqlPorts[i] = MariaDbProcess.freePort();
				groupPorts[i] = MariaDbProcess.freePort();
				members.add("127.0.0.1:" + groupPorts[i]);
			}
			for (int i = 0; i < size; i++) {
				String name = "galera" + (i + 1);
				Path dataDir = base.resolve(name);
				Files.createDirectories(dataDir);
				if (i == 0) {
					MariaDbProcess.install(dataDir);
				}
				else {
					prepareForRsyncTransfer(dataDir);
				}
				List<String> options = new ArrayList<>(List.of("--wsrep-on=ON", "--wsrep-provider=" + PROVIDER,
						"--wsrep-cluster-name=lock-tests", "--wsrep-cluster-address=gcomm://" + String.join(",", members),
						"--wsrep-node-name=" + name, "--wsrep-node-address=127.0.0.1:" + groupPorts[i],
						"--wsrep-provider-options=gmcast.listen_addr=tcp://127.0.0.1:" + groupPorts[i]
								+ ";ist.recv_addr=127.0.0.1:" + MariaDbProcess.freePort()
								+ ";gcache.size=32M;pc.recovery=false;evs.suspect_timeout=PT3S;evs.inactive_timeout=PT6S",
						"--wsrep-sst-method=rsync", "--wsrep-sst-receive-address=127.0.0.1:" + MariaDbProcess.freePort(),
						"--binlog-format=ROW", "--default-storage-engine=InnoDB", "--innodb-autoinc-lock-mode=2"));
				if (i == 0) {
					options.add("--wsrep-new-cluster");
				}
				MariaDbProcess node = new MariaDbProcess(name, dataDir, sqlPorts[i], options);
				nodes.add(node);
				node.start();
				if (i == 0) {
					node.awaitConnectable(Duration.ofMinutes(1));
					awaitState(node, 1, Duration.ofMinutes(1));
					node.execute(null, "CREATE DATABASE " + DATABASE);
				}
			}
			for (MariaDbProcess node : nodes) {
				node.awaitConnectable(Duration.ofMinutes(3));
				awaitState(node, size, Duration.ofMinutes(1));
			}
			Duration took = Duration.ofNanos(System.nanoTime() - started);
			System.out.println("[lock tests] Galera cluster of " + size + " nodes Synced in " + took.toMillis() + " ms: "
					+ nodes);
			return new GaleraCluster(base, nodes, took);
		}
		catch (IOException | RuntimeException ex) {
			nodes.forEach(MariaDbProcess::kill);
			MariaDbProcess.deleteTree(base);
			throw (ex instanceof RuntimeException rex) ? rex : new UncheckedIOException((IOException) ex);
		}
	}

	/**
	 * The joiner's rsync daemon runs as {@code nobody} when started by root; the data directory, and everything the
	 * server has created in it since an earlier transfer, must be its own.
	 */
	private static void prepareForRsyncTransfer(Path dataDir) throws IOException {
		if ("root".equals(System.getProperty("user.name"))) {
			UserPrincipal nobody = dataDir.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("nobody");
			try (var paths = Files.walk(dataDir)) {
				for (Path path : (Iterable<Path>) paths::iterator) {
					Files.setOwner(path, nobody);
				}
			}
		}
	}

	/**
	 * Starts a stopped or killed joiner (not the first node) again; it rejoins by state transfer. Returns at once;
	 * see {@link #awaitState}.
	 */
	public void restart(int i) {
		if (i == 0) {
			throw new IllegalArgumentException("the first node bootstraps the cluster; restart another one");
		}
		MariaDbProcess node = this.nodes.get(i);
		try {
			prepareForRsyncTransfer(node.dataDir());
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		node.start();
	}

	/**
	 * Waits until {@code node} is {@code Synced} in a primary component of {@code size} nodes.
	 * @throws IllegalStateException with the node's log if it is not within {@code timeout}
	 */
	public static void awaitState(MariaDbProcess node, int size, Duration timeout) {
		long deadline = System.nanoTime() + timeout.toNanos();
		String seen = "";
		while (System.nanoTime() < deadline) {
			try {
				String state = node.status("wsrep_local_state_comment");
				String status = node.status("wsrep_cluster_status");
				String clusterSize = node.status("wsrep_cluster_size");
				seen = state + ", " + status + ", size " + clusterSize;
				if ("Synced".equals(state) && "Primary".equals(status) && String.valueOf(size).equals(clusterSize)) {
					return;
				}
			}
			catch (SQLException ex) {
				seen = ex.toString();
			}
			Pauses.sleep(200);
		}
		throw new IllegalStateException(node + " not Synced in a primary component of " + size + " within " + timeout
				+ " (last seen: " + seen + "):\n" + node.logTail());
	}

	/**
	 * Waits until every node has applied the schema of {@code database} as the first node has it (its tables and
	 * their columns). DDL runs in total order isolation: the node that ran it returns once it has, while the others
	 * apply it from their queues, so right after a migration a statement sent to another node can still meet a
	 * missing table or column (a "bad SQL grammar" error). Each node reads the schema with
	 * {@code wsrep_sync_wait = 1} (the read waits until the node has applied what the cluster had committed) and
	 * compares it with the first node's, polling until {@code timeout}.
	 * @throws IllegalStateException naming the node and both schemas if one still differs at the timeout
	 */
	public void awaitSchema(String database, Duration timeout) throws SQLException {
		String expected = schema(this.nodes.get(0), database);
		long deadline = System.nanoTime() + timeout.toNanos();
		for (MariaDbProcess node : this.nodes) {
			String seen = schema(node, database);
			while (!expected.equals(seen)) {
				if (System.nanoTime() - deadline > 0) {
					throw new IllegalStateException(node + " has not applied the schema of " + database + " within "
							+ timeout + ": expected " + expected + ", seen " + seen);
				}
				Pauses.sleep(100);
				seen = schema(node, database);
			}
		}
	}

	private static String schema(MariaDbProcess node, String database) throws SQLException {
		try (Connection c = node.connect(database); Statement statement = c.createStatement()) {
			statement.execute("SET SESSION wsrep_sync_wait = 1");
			StringBuilder schema = new StringBuilder();
			try (ResultSet rs = statement.executeQuery("SELECT table_name, column_name FROM information_schema.columns "
					+ "WHERE table_schema = DATABASE() ORDER BY table_name, ordinal_position")) {
				while (rs.next()) {
					schema.append(rs.getString(1)).append('.').append(rs.getString(2)).append(' ');
				}
			}
			return schema.toString().trim();
		}
	}

	/** Node {@code i}, counted from 0. */
	public MariaDbProcess node(int i) {
		return this.nodes.get(i);
	}

	public int size() {
		return this.nodes.size();
	}

	/** How long {@link #start} took until every node was Synced. */
	public Duration startTime() {
		return this.startTime;
	}

	/** The sum over the running nodes of a numeric global status variable, e.g. {@code wsrep_local_cert_failures}. */
	public long sumOfStatus(String variable) throws SQLException {
		long sum = 0;
		for (MariaDbProcess node : this.nodes) {
			if (node.isAlive()) {
				sum += Long.parseLong(Objects.requireNonNullElse(node.status(variable), "0"));
			}
		}
		return sum;
	}

	/** Kills every node and deletes every data directory. */
	@Override
	public void close() {
		this.nodes.forEach(MariaDbProcess::kill);
		MariaDbProcess.deleteTree(this.baseDir);
	}

}
