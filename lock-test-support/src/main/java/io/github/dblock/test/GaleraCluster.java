package io.github.dblock.test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
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
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A real MariaDB Galera cluster of the test's own: {@code size} {@code mariadbd} nodes of the machine's MariaDB
 * with Debian's Galera 4 provider ({@link #PROVIDER}, package {@code galera-4}), on free loopback ports below the
 * kernel's ephemeral range ({@link #listenPort}), each with
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
			Set<Integer> taken = new HashSet<>();
			for (int i = 0; i < size; i++) {
				sqlPorts[i] = listenPort(taken);
				groupPorts[i] = listenPort(taken);
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
								+ ";ist.recv_addr=127.0.0.1:" + listenPort(taken)
								+ ";gcache.size=32M;pc.recovery=false;evs.suspect_timeout=PT3S;evs.inactive_timeout=PT6S",
						"--wsrep-sst-method=rsync", "--wsrep-sst-receive-address=127.0.0.1:" + listenPort(taken),
						"--binlog-format=ROW", "--default-storage-engine=InnoDB", "--innodb-autoinc-lock-mode=2"));
				MariaDbProcess node = new MariaDbProcess(name, dataDir, sqlPorts[i], options);
				nodes.add(node);
				node.start((i == 0) ? List.of("--wsrep-new-cluster") : List.of());
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
	 * Starts a stopped or killed node again while the others have a primary component; it rejoins from the
	 * position its storage engine recovered ({@link MariaDbProcess#recoverWsrepPosition()}, as
	 * {@code galera_recovery} does), by incremental state transfer from a donor's write-set cache when the
	 * donor still has what it missed, else by a full rsync transfer. Returns once the server is started; see
	 * {@link #awaitState}.
	 * @return the recovered position it started from
	 */
	public String restart(int i) {
		MariaDbProcess node = this.nodes.get(i);
		String position = node.recoverWsrepPosition();
		try {
			prepareForRsyncTransfer(node.dataDir());
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		node.start(List.of("--wsrep-start-position=" + position));
		return position;
	}

	/**
	 * After every node was killed at once (a coordinated crash): recovers each node's position, bootstraps a new
	 * primary component from the node with the highest seqno (marking it {@code safe_to_bootstrap} in its
	 * {@code grastate.dat}, as an operator does after {@code galera_recovery}), waits until it is Synced, then
	 * starts the others, which rejoin from their positions, and waits until all are Synced in a primary component
	 * of {@link #size()}.
	 * @return each node's recovered seqno, by node index (the highest one bootstrapped)
	 * @throws IllegalStateException with a node's log if the cluster does not form within {@code timeout}
	 */
	public List<Long> restartAfterCrash(Duration timeout) {
		long deadline = System.nanoTime() + timeout.toNanos();
		List<String> positions = new ArrayList<>();
		int most = 0;
		for (int i = 0; i < this.nodes.size(); i++) {
			positions.add(this.nodes.get(i).recoverWsrepPosition());
			if (seqno(positions.get(i)) > seqno(positions.get(most))) {
				most = i;
			}
		}
		MariaDbProcess first = this.nodes.get(most);
		try {
			Path grastate = first.dataDir().resolve("grastate.dat");
			Files.writeString(grastate, Files.readString(grastate).replace("safe_to_bootstrap: 0", "safe_to_bootstrap: 1"));
			for (MariaDbProcess node : this.nodes) {
				prepareForRsyncTransfer(node.dataDir());
			}
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		first.start(List.of("--wsrep-new-cluster", "--wsrep-start-position=" + positions.get(most)));
		awaitState(first, 1, remaining(deadline));
		for (int i = 0; i < this.nodes.size(); i++) {
			if (i != most) {
				this.nodes.get(i).start(List.of("--wsrep-start-position=" + positions.get(i)));
			}
		}
		for (MariaDbProcess node : this.nodes) {
			awaitState(node, this.nodes.size(), remaining(deadline));
		}
		System.out.println("[lock tests] Galera cluster restarted after a crash of every node, bootstrapped from "
				+ first.name() + "; recovered positions " + positions);
		return positions.stream().map(GaleraCluster::seqno).toList();
	}

	private static Duration remaining(long deadline) {
		return Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
	}

	private static long seqno(String position) {
		return Long.parseLong(position.substring(position.lastIndexOf(':') + 1));
	}

	/**
	 * A free port on the loopback interface below the kernel's ephemeral range
	 * ({@code net.ipv4.ip_local_port_range}), not in {@code taken}: a node binds its ports again when it is
	 * restarted, and a port of the ephemeral range may by then be the local end of some outgoing connection (the
	 * nodes' own reconnection attempts to the dead node's address included), which would keep the restarted node
	 * from binding it.
	 */
	static int listenPort(Set<Integer> taken) {
		int below = 32768;
		try {
			// (Files.readString reads a procfs file short: its size is 0)
			below = Integer.parseInt(Files.readAllLines(Path.of("/proc/sys/net/ipv4/ip_local_port_range")).get(0)
				.trim().split("\\s+")[0]);
		}
		catch (IOException | RuntimeException ex) {
			// the Linux default
		}
		below = Math.max(below, 2048);
		int from = Math.max(1024, below - 12000);
		for (int attempt = 0; attempt < 1000; attempt++) {
			int port = from + ThreadLocalRandom.current().nextInt(below - from);
			if (taken.contains(port)) {
				continue;
			}
			try (ServerSocket socket = new ServerSocket()) {
				socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 1);
				taken.add(port);
				return port;
			}
			catch (IOException ex) {
				// in use: try another
			}
		}
		throw new IllegalStateException("no free loopback port in [" + from + ", " + below + ")");
	}

	/**
	 * The lines of every node's error log that tell what the cluster did (views, primary or not, state changes and
	 * transfers, suspicions, errors), prefixed by the node's name: for the message of a test that failed.
	 */
	public String events() {
		StringBuilder events = new StringBuilder();
		for (MariaDbProcess node : this.nodes) {
			Path log = node.dataDir().resolveSibling(node.dataDir().getFileName() + ".err");
			try {
				for (String line : Files.readAllLines(log, StandardCharsets.UTF_8)) {
					if (line.matches(".*(view\\(view_id|New COMPONENT|Shifting|SST|IST|suspect|inactive|partition|"
							+ "Quorum|\\[ERROR\\]|\\[Warning\\] WSREP).*")) {
						events.append(node.name()).append(": ").append(line).append('\n');
					}
				}
			}
			catch (IOException | UncheckedIOException ex) {
				events.append(node.name()).append(": no log at ").append(log).append('\n');
			}
		}
		return events.toString();
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

	/**
	 * Kills every node and deletes every data directory, after copying the nodes' error logs to
	 * {@code target/galera-logs/<cluster directory>/} (relative to the working directory) for failures to be read.
	 */
	@Override
	public void close() {
		this.nodes.forEach(MariaDbProcess::kill);
		try {
			Path logs = Files.createDirectories(Path.of("target", "galera-logs", this.baseDir.getFileName().toString()));
			for (MariaDbProcess node : this.nodes) {
				Path log = node.dataDir().resolveSibling(node.dataDir().getFileName() + ".err");
				if (Files.exists(log)) {
					Files.copy(log, logs.resolve(log.getFileName()));
				}
			}
		}
		catch (IOException ex) {
			// the logs are a help for failures; the cluster is deleted anyway
		}
		MariaDbProcess.deleteTree(this.baseDir);
	}

}
