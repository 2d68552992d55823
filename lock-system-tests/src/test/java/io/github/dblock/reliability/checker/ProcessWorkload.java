package io.github.dblock.reliability.checker;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.reliability.checker.History.Observed;
import io.github.dblock.reliability.checker.History.Op;
import io.github.dblock.test.EmbeddedMariaDb;
import io.github.dblock.test.FaultProxy;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.jspecify.annotations.Nullable;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The checker's {@link Workload} in worker processes: {@link Settings#processes()} {@link CheckerWorker} JVMs × {@link
 * Settings#threads()} threads, each JVM one node reached through a {@link FaultProxy} of its own in this JVM, all
 * recording into one {@link History} on the server (or, with a {@link Cluster}, on a server of its own, while the
 * workers lock on the cluster's nodes and the cluster restarts one node once). This JVM runs the cleanup job and,
 * every 1 to 3 s, one fault of a random kind on a random worker: SIGKILL (a new worker, a new node, replaces it),
 * SIGSTOP for 0.5 to 3 s then SIGCONT, {@code KILL CONNECTION} of one of its sessions, a blackhole of its proxy for
 * 0.5 to 3 s (then passed on, or every connection reset), late replies (100 to 700 ms) for 1 to 3 s, and, with a
 * server of the test's own, a restart of the server at most every {@link Settings#restartEvery()}. A SIGKILLed
 * node's server time of death goes into the history ({@link Observed#killed()}). Not thread-safe: one {@link #run()}
 * per instance.
 */
final class ProcessWorkload {

	/**
	 * What to run.
	 * @param seed the seed of every random choice (the workers' threads derive theirs from it)
	 * @param duration how long the workers make calls
	 * @param processes how many worker JVMs at once
	 * @param threads threads per worker
	 * @param server a server of the test's own, which the run may restart; {@code null}: the test database, no restart
	 * @param restartEvery at most one restart per this much time ({@code null}: none)
	 * @param defect the name of a {@link Defects} switch for the first worker ({@code p0}) and each worker that
	 * replaces it after a SIGKILL, or {@code null}
	 * @param cluster the nodes of a cluster on which the workers lock (worker {@code i} on node {@code i} modulo their
	 * number), the history on a server of its own; {@code null}: locks and history on one server
	 */
	record Settings(long seed, Duration duration, int processes, int threads, @Nullable EmbeddedMariaDb server,
			@Nullable Duration restartEvery, @Nullable String defect, @Nullable Cluster cluster) {

		Settings(long seed, Duration duration, int processes, int threads, @Nullable EmbeddedMariaDb server,
				@Nullable Duration restartEvery) {
			this(seed, duration, processes, threads, server, restartEvery, null, null);
		}

		Settings(long seed, Duration duration, int processes, int threads, @Nullable EmbeddedMariaDb server,
				@Nullable Duration restartEvery, @Nullable String defect) {
			this(seed, duration, processes, threads, server, restartEvery, defect, null);
		}

	}

	/**
	 * A multi-primary cluster whose nodes hold the locks, with the history's records on a server outside it (as
	 * {@link Workload.Servers} for a run in one JVM). The run restarts one of its nodes once, a third of the way in.
	 */
	interface Cluster {

		/** The URL of the history's server (never faulted); user root, no password, as for the nodes. */
		String historyUrl();

		/** The URL of the cluster node on which worker {@code index} locks. */
		String lockUrl(int index);

		/**
		 * This JVM's pool for the lock-side work: the lock table's migration, the session table, the row triggers,
		 * the cleanup job, the rows written in the locks' transactions and the leftovers check.
		 */
		HikariDataSource lockPool();

		/** Once the tables made through {@link #lockPool()} exist: waits until every node has them. */
		void tablesCreated();

		/** A pool on the node of worker {@code index}, to find and kill its sessions there. */
		javax.sql.DataSource sessions(int index);

		/** Kills one node other than the lock pool's (SIGKILL), starts it again, and returns once it is in sync. */
		void restartOneNode(Random random);

	}

	private final Settings settings;

	private final String prefix;

	private final String directUrl;

	private final String user;

	private final String password;

	private final Map<String, AtomicLong> faults = new ConcurrentHashMap<>();

	private final ConcurrentLinkedQueue<String> harnessErrors = new ConcurrentLinkedQueue<>();

	private final Map<String, LocalDateTime> killed = new LinkedHashMap<>();

	private final Workload.Pools pools;

	private volatile boolean stopping;

	private volatile boolean serverDown;

	private int nextIndex;

	ProcessWorkload(Settings settings) {
		this.settings = settings;
		this.prefix = Workload.newPrefix(settings.seed());
		if (settings.server() != null || settings.cluster() != null) {
			this.directUrl = (settings.cluster() != null) ? settings.cluster().historyUrl()
					: settings.server().jdbcUrl() + "?sslMode=DISABLED&allowPublicKeyRetrieval=true";
			this.user = "root";
			this.password = "";
			this.pools = (url, size, customizer) -> {
				com.zaxxer.hikari.HikariConfig config = new com.zaxxer.hikari.HikariConfig();
				config.setJdbcUrl((url != null) ? url : this.directUrl);
				config.setUsername(this.user);
				config.setPassword(this.password);
				config.setMaximumPoolSize(size);
				config.setMinimumIdle(0);
				customizer.accept(config);
				return new HikariDataSource(config);
			};
		}
		else {
			TestDatabase db = TestDatabase.get();
			this.directUrl = db.jdbcUrl();
			this.user = (db.username() != null) ? db.username() : "root";
			this.password = (db.password() != null) ? db.password() : "";
			this.pools = Workload.testDatabase();
		}
	}

	/** One worker JVM, its node's proxy and its output. */
	private final class Worker {

		final String node;

		final int index;

		/** Whether this worker runs with {@link Settings#defect()}: the first one, and each that replaces it. */
		final boolean defective;

		final FaultProxy proxy;

		final Process process;

		final StringBuffer output = new StringBuffer();

		final CountDownLatch started = new CountDownLatch(1);

		final CountDownLatch finished = new CountDownLatch(1);

		Worker(int index, boolean defective) throws Exception {
			this.node = "p" + index;
			this.index = index;
			this.defective = defective;
			Cluster cluster = ProcessWorkload.this.settings.cluster();
			String lockUrl = (cluster != null) ? cluster.lockUrl(index) : ProcessWorkload.this.directUrl;
			this.proxy = FaultProxy.forJdbcUrl(lockUrl);
			List<String> cmd = List.of(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java",
					"-Xmx160m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", System.getProperty("java.class.path"),
					"-Dlock.checker.virtual-threads=" + Boolean.getBoolean("lock.checker.virtual-threads"),
					CheckerWorker.class.getName(), ProcessWorkload.this.prefix, String.valueOf(ProcessWorkload.this.settings.seed()),
					String.valueOf(index), String.valueOf(ProcessWorkload.this.settings.threads()),
					this.proxy.jdbcUrl(lockUrl), ProcessWorkload.this.directUrl, ProcessWorkload.this.user,
					ProcessWorkload.this.password.isEmpty() ? "-" : ProcessWorkload.this.password,
					defective ? ProcessWorkload.this.settings.defect() : "-", String.valueOf(cluster != null));
			this.process = new ProcessBuilder(cmd).redirectErrorStream(true).start();
			Thread reader = new Thread(() -> {
				try (BufferedReader in = new BufferedReader(
						new InputStreamReader(this.process.getInputStream(), StandardCharsets.UTF_8))) {
					for (String line = in.readLine(); line != null; line = in.readLine()) {
						this.output.append(line).append('\n');
						if (line.equals("STARTED")) {
							this.started.countDown();
						}
						else if (line.startsWith("E ")) {
							ProcessWorkload.this.harnessErrors.add(this.node + ": " + line.substring(2));
						}
						else if (line.startsWith("RESULT")) {
							this.finished.countDown();
						}
					}
				}
				catch (java.io.IOException ex) {
					// killed
				}
			}, "checker-output-" + this.node);
			reader.setDaemon(true);
			reader.start();
		}

		String tail() {
			String text = this.output.toString();
			return text.substring(Math.max(0, text.length() - 4_000));
		}

	}

	/** Runs the workers for the duration under faults, lets every call end, and returns the history. */
	Workload.Result run() throws Exception {
		Cluster cluster = this.settings.cluster();
		HikariDataSource historyPool = this.pools.pool(null, 6, (config) -> config.setPoolName("checker-history"));
		HikariDataSource lockPool = (cluster != null) ? cluster.lockPool() : historyPool;
		if (this.settings.server() != null || cluster != null) {
			LockNodes.migrate(lockPool);
		}
		else {
			LockNodes.migrateOnce(lockPool);
		}
		History history = new History(historyPool, lockPool, this.prefix);
		JdbcTemplate lockSide = new JdbcTemplate(lockPool);
		recordRowChanges(lockSide);
		try {
			Workload.createSessionTable(lockSide);
			if (cluster != null) {
				cluster.tablesCreated();
			}
			return run(lockPool, history, new JdbcTemplate(historyPool), lockSide);
		}
		finally {
			if (this.settings.server() == null && cluster == null) {
				// the shared test database: its lock table goes back to how the other tests know it
				dropTriggers(lockSide);
			}
			historyPool.close();
		}
	}

	/**
	 * @param lockPool the lock-side pool (the history's own on one server)
	 * @param direct the history's records
	 * @param lockSide the lock-side work through {@code lockPool}
	 */
	private Workload.Result run(HikariDataSource lockPool, History history, JdbcTemplate direct, JdbcTemplate lockSide)
			throws Exception {
		Map<String, Integer> permits = new LinkedHashMap<>();
		Workload.SEMAPHORES.forEach((name, n) -> permits.put(this.prefix + name, n));
		List<Worker> workers = new ArrayList<>();
		for (int i = 0; i < this.settings.processes(); i++) {
			workers.add(new Worker(this.nextIndex++, i == 0 && this.settings.defect() != null));
		}
		for (Worker worker : workers) {
			awaitStarted(worker);
		}
		Random random = new Random(this.settings.seed() + 2);
		Thread cleanup = new Thread(() -> Workload.cleanup(lockPool, new Random(this.settings.seed() + 1),
				() -> this.stopping, () -> this.serverDown, this.faults, this.harnessErrors), "checker-cleanup");
		cleanup.start();
		long started = System.nanoTime();
		long deadline = started + this.settings.duration().toNanos();
		long lastRestart = started;
		boolean clusterRestarted = false;
		List<Worker> all = new ArrayList<>(workers);
		List<Integer> round = new ArrayList<>();
		while (true) {
			Thread.sleep(1_000 + random.nextInt(2_000));
			if (System.nanoTime() >= deadline) {
				break;
			}
			int victim = random.nextInt(workers.size());
			Worker worker = workers.get(victim);
			if (!worker.process.isAlive()) {
				this.harnessErrors.add(worker.node + " exited by itself: " + worker.tail());
				break;
			}
			boolean restart = this.settings.server() != null && this.settings.restartEvery() != null
					&& System.nanoTime() - lastRestart >= this.settings.restartEvery().toNanos()
					&& deadline - System.nanoTime() > Duration.ofSeconds(30).toNanos();
			boolean clusterRestart = this.settings.cluster() != null && !clusterRestarted
					&& System.nanoTime() - started >= this.settings.duration().toNanos() / 3;
			if (round.isEmpty()) {
				// every kind once in a random order, then again: each kind at least once in a short run
				round.addAll(List.of(0, 1, 2, 3, 4));
				java.util.Collections.shuffle(round, random);
			}
			int kind = clusterRestart ? -2 : restart ? -1 : round.remove(0);
			try {
				switch (kind) {
					case -2 -> {
						clusterRestarted = true;
						this.serverDown = true;
						try {
							this.settings.cluster().restartOneNode(random);
						}
						finally {
							this.serverDown = false;
						}
						count("cluster node SIGKILL and restart");
					}
					case -1 -> {
						lastRestart = System.nanoTime();
						this.serverDown = true;
						this.settings.server().stop();
						this.settings.server().restart();
						awaitServer(lockSide);
						this.serverDown = false;
						count("server restart");
					}
					case 0 -> {
						awaitOpenSection(direct, worker.node);
						LocalDateTime at = serverNow(lockSide);
						worker.process.destroyForcibly();
						if (!worker.process.waitFor(30, TimeUnit.SECONDS)) {
							this.harnessErrors.add(worker.node + " did not die of SIGKILL");
						}
						this.killed.put(worker.node, at);
						worker.proxy.close();
						Worker replacement = new Worker(this.nextIndex++, worker.defective);
						workers.set(victim, replacement);
						all.add(replacement);
						count("SIGKILL");
					}
					case 1 -> {
						signal("STOP", worker.process.pid());
						Thread.sleep(500 + random.nextInt(2_500));
						signal("CONT", worker.process.pid());
						count("SIGSTOP");
					}
					case 2 -> {
						JdbcTemplate server = (this.settings.cluster() != null)
								? new JdbcTemplate(this.settings.cluster().sessions(worker.index)) : lockSide;
						List<Long> sessions = server.queryForList("SELECT s.id FROM checker_session s JOIN"
								+ " information_schema.PROCESSLIST p ON p.ID = s.id WHERE s.run = ? AND s.node = ?",
								Long.class, this.prefix, worker.node);
						if (!sessions.isEmpty()) {
							try {
								server.update("KILL CONNECTION ?", sessions.get(random.nextInt(sessions.size())));
								count("KILL CONNECTION");
							}
							catch (org.springframework.dao.DataAccessException ex) {
								// the session ended meanwhile
							}
						}
					}
					case 3 -> {
						worker.proxy.blackhole(FaultProxy.Direction.BOTH);
						Thread.sleep(500 + random.nextInt(2_500));
						if (random.nextBoolean()) {
							worker.proxy.reset();
						}
						worker.proxy.passThrough();
						count("blackhole");
					}
					default -> {
						worker.proxy.delay(Duration.ofMillis(100 + random.nextInt(600)));
						Thread.sleep(1_000 + random.nextInt(2_000));
						worker.proxy.passThrough();
						count("late replies");
					}
				}
			}
			catch (RuntimeException ex) {
				this.harnessErrors.add("fault injector: " + ex);
			}
		}
		for (Worker worker : workers) {
			worker.proxy.passThrough();
			worker.process.getOutputStream().close(); // every worker finishes its calls and reports
		}
		for (Worker worker : workers) {
			if (!worker.finished.await(3, TimeUnit.MINUTES) || !worker.process.waitFor(60, TimeUnit.SECONDS)) {
				this.harnessErrors.add(worker.node + " did not finish: " + worker.tail());
				worker.process.destroyForcibly();
			}
			else if (worker.process.exitValue() != 0) {
				this.harnessErrors.add(worker.node + " exited with " + worker.process.exitValue() + ": " + worker.tail());
			}
		}
		this.stopping = true;
		cleanup.join(10_000);
		// the longest lease of the run (idempotency claims: 2 s) ends; then nothing of the run may be held
		Thread.sleep(2_500);
		List<String> leftovers = Workload.leftovers(lockPool, this.prefix);
		Observed observed = history.observed(permits, leftovers, this.killed, rowChanges(lockSide));
		for (Worker worker : all) {
			worker.proxy.close();
		}
		Map<String, Long> calls = new TreeMap<>();
		for (Op op : observed.ops()) {
			calls.merge(op.call(), 1L, Long::sum);
		}
		Map<String, Long> faultCounts = new TreeMap<>();
		this.faults.forEach((k, v) -> faultCounts.put(k, v.get()));
		faultCounts.put("worker JVMs", (long) all.size());
		return new Workload.Result(observed, calls, faultCounts, List.copyOf(this.harnessErrors));
	}

	/**
	 * Triggers on the lock table record every change of a lock row, on the clock of the lock's own statement (a
	 * trigger's {@code UTC_TIMESTAMP(6)} is its statement's), in the statement's transaction. On the shared test
	 * database they are dropped after the run (tests run one at a time).
	 */
	private static void recordRowChanges(JdbcTemplate direct) {
		dropTriggers(direct);
		direct.execute("CREATE TABLE IF NOT EXISTS checker_row_change (id BIGINT AUTO_INCREMENT PRIMARY KEY, resource"
				+ " VARBINARY(1020) NOT NULL, at DATETIME(6) NOT NULL, old_owner CHAR(36) NULL, old_expires DATETIME(6)"
				+ " NULL, old_waiting_owner CHAR(36) NULL, new_owner CHAR(36) NULL, new_token BIGINT NOT NULL)");
		String table = LockNodes.TABLE.quoted();
		direct.execute("CREATE TRIGGER checker_row_insert AFTER INSERT ON " + table + " FOR EACH ROW"
				+ " INSERT INTO checker_row_change (resource, at, new_owner, new_token) VALUES (NEW.resource,"
				+ " UTC_TIMESTAMP(6), NEW.owner_token, NEW.fencing_token)");
		direct.execute("CREATE TRIGGER checker_row_update AFTER UPDATE ON " + table + " FOR EACH ROW"
				+ " INSERT INTO checker_row_change (resource, at, old_owner, old_expires, old_waiting_owner, new_owner,"
				+ " new_token) VALUES (NEW.resource, UTC_TIMESTAMP(6), OLD.owner_token, OLD.expires_at,"
				+ " OLD.waiting_owner, NEW.owner_token, NEW.fencing_token)");
	}

	private static void dropTriggers(JdbcTemplate direct) {
		direct.execute("DROP TRIGGER IF EXISTS checker_row_insert");
		direct.execute("DROP TRIGGER IF EXISTS checker_row_update");
	}

	private List<History.RowChange> rowChanges(JdbcTemplate direct) {
		return direct.query("SELECT id, resource, at, old_owner, old_expires, old_waiting_owner, new_owner, new_token"
				+ " FROM checker_row_change WHERE resource LIKE ? ORDER BY id",
				(rs, n) -> new History.RowChange(rs.getLong(1), new String(rs.getBytes(2), StandardCharsets.UTF_8),
						rs.getObject(3, LocalDateTime.class), rs.getString(4), rs.getObject(5, LocalDateTime.class),
						rs.getString(6), rs.getString(7), rs.getLong(8)),
				(Object) (this.prefix + "%").getBytes(StandardCharsets.UTF_8));
	}

	/** Up to 2 s until the node is inside a critical section, so that the SIGKILL cuts one short. */
	private void awaitOpenSection(JdbcTemplate direct, String node) throws InterruptedException {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
		while (System.nanoTime() < deadline) {
			Integer open = direct.queryForObject("SELECT COUNT(*) FROM checker_section WHERE run = ? AND node = ? AND"
					+ " exited_at IS NULL", Integer.class, this.prefix, node);
			if (open != null && open > 0) {
				return;
			}
			Thread.sleep(20);
		}
	}

	private void awaitStarted(Worker worker) throws InterruptedException {
		if (!worker.started.await(2, TimeUnit.MINUTES)) { // JVM start-up is slow on a loaded machine
			throw new IllegalStateException(worker.node + " did not start: " + worker.tail());
		}
	}

	private void count(String what) {
		this.faults.computeIfAbsent(what, (k) -> new AtomicLong()).incrementAndGet();
	}

	private static LocalDateTime serverNow(JdbcTemplate direct) {
		return direct.queryForObject("SELECT UTC_TIMESTAMP(6)", LocalDateTime.class);
	}

	/** Until the restarted server answers (the pool's old connections fail first), up to 2 minutes. */
	private static void awaitServer(JdbcTemplate direct) throws InterruptedException {
		long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
		while (true) {
			try {
				serverNow(direct);
				return;
			}
			catch (org.springframework.dao.DataAccessException ex) {
				if (System.nanoTime() > deadline) {
					throw ex;
				}
				Thread.sleep(100);
			}
		}
	}

	private static void signal(String signal, long pid) throws Exception {
		Process kill = new ProcessBuilder("kill", "-" + signal, String.valueOf(pid)).inheritIO().start();
		if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
			throw new IllegalStateException("kill -" + signal + " " + pid + " failed");
		}
	}

}
