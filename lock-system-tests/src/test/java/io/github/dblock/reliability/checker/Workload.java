package io.github.dblock.reliability.checker;

import io.github.dblock.jdbc.sql.LockDialect;
import io.github.dblock.jdbc.pessimistic.PessimisticLockProvider;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

import com.zaxxer.hikari.HikariDataSource;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import io.github.dblock.CurrentLock;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.LockType;
import io.github.dblock.actuate.ForceReleasingLocksEndpoint;
import io.github.dblock.idempotency.IdempotencyOptions;
import io.github.dblock.integration.DistributedLockRegistry;
import io.github.dblock.jdbc.lease.LeaseLockProvider;
import io.github.dblock.jdbc.admin.LockTableAdmin;
import io.github.dblock.jdbc.admin.LockTableCleaner;
import io.github.dblock.reliability.checker.History.Family;
import io.github.dblock.reliability.checker.History.Observed;
import io.github.dblock.semaphore.PermitHandle;
import io.github.dblock.semaphore.SemaphoreOptions;
import io.github.dblock.semaphore.SemaphoreTemplate;
import io.github.dblock.shedlock.DistributedLockShedLockProvider;
import io.github.dblock.spi.LockProvider;
import io.github.dblock.test.FaultProxy;
import io.github.dblock.test.nodes.IdempotencyNodes;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.nodes.SemaphoreNodes;
import io.github.dblock.test.TestDatabase;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * A seeded random mixed workload on the test database (or, with {@link #run(Servers)}, one server per node):
 * {@link Settings#nodes()} nodes, each a {@link LockTemplate} (LEASE, PESSIMISTIC and OPTIMISTIC providers), a
 * {@link SemaphoreTemplate} and an idempotency template on a
 * HikariCP pool of its own reached through a {@link FaultProxy} of its own, × {@link Settings#threads()} threads
 * calling at random on a few shared resources: {@code tryAcquire}/{@code acquire}/{@code execute} in LEASE (default
 * renewed lease of 1 s, or a short explicit one of 200 to 800 ms that a long hold outlives), PESSIMISTIC (on a
 * connection of its own, and {@code execute} in a transaction of its own) and OPTIMISTIC ({@code execute}); READ and
 * WRITE; semaphore permits; idempotency keys (the work writes its effect in the call's transaction); re-entry (the
 * token must not change); {@code extend}; {@code @DistributedLock} methods ({@link LockedMethods}: alone, in a
 * caller's transaction, {@code REQUIRES_NEW} in a caller's transaction); the Spring Integration
 * {@link DistributedLockRegistry}; the {@link DistributedLockShedLockProvider}; and, on one resource
 * ({@link #MIXED}), LEASE and PESSIMISTIC calls of every node and thread together, {@code @DistributedLock(mode =
 * PESSIMISTIC)} among them, alone or inside a caller's transaction; WRITE locks checked at commit on {@code rw0}
 * whose transaction outlives the lease ({@link #writeCheckedAtCommit}), among expired reader rows
 * ({@link #expiredReaders}); and bursts of PESSIMISTIC calls on a small pool ({@link #bursts}), half of them on a
 * fresh resource with a wait time of 10 s through a small pool without faults, where every call must be served in
 * turn ({@link Checker#TURN_CALL}). A cleanup thread runs
 * {@link LockTableCleaner} every 100 to 400 ms with the shortest retention (1 s). With faults, every 1 to 3 s one
 * node gets one of: {@code KILL CONNECTION} of one of its sessions, a blackhole of its proxy for 0.5 to 3 s (then
 * passed on, or every connection reset), or late replies (every chunk delayed 100 to 700 ms) for 1 to 3 s; and every
 * 1.5 to 4 s the Actuator's {@link ForceReleasingLocksEndpoint} forces a random exclusive resource free. On
 * {@link Servers} that name {@link Servers#restartable()} nodes, one of their servers also gets SIGKILL once and is
 * started again.
 * <p>
 * Every call goes into the {@link History}, every critical section into its tables. The seed fixes each thread's
 * sequence of calls and the faults' choices (not the interleaving, which the machine decides). Not thread-safe: one
 * {@link #run()} per instance.
 */
public final class Workload {

	/**
	 * A worker thread: a virtual one when {@code lock.checker.virtual-threads=true} (CI's JDK 25 step), found
	 * through reflection because the tests compile for Java 17.
	 * @throws IllegalStateException if virtual threads are asked for on a JDK before 21
	 */
	static Thread workerThread(Runnable task, String name) {
		if (!Boolean.getBoolean("lock.checker.virtual-threads")) {
			return new Thread(task, name);
		}
		try {
			Class<?> ofVirtual = Class.forName("java.lang.Thread$Builder$OfVirtual");
			Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
			builder = ofVirtual.getMethod("name", String.class).invoke(builder, name);
			return (Thread) ofVirtual.getMethod("unstarted", Runnable.class).invoke(builder, task);
		}
		catch (ReflectiveOperationException ex) {
			throw new IllegalStateException("lock.checker.virtual-threads=true needs JDK 21 or later", ex);
		}
	}

	/**
	 * What to run.
	 * @param seed the seed of every random choice
	 * @param duration how long the threads start new calls
	 * @param nodes how many nodes
	 * @param threads threads per node
	 * @param faults whether to inject faults
	 * @param defect a test-only switch that breaks one guarantee on one node (null: none)
	 */
	public record Settings(long seed, Duration duration, int nodes, int threads, boolean faults,
			@org.jspecify.annotations.Nullable Function<LockProvider, LockProvider> defect) {
	}

	/**
	 * The outcome of a run.
	 * @param observed the history
	 * @param calls how many calls were made, per kind
	 * @param faults how many faults were injected, per kind
	 * @param harnessErrors errors of the workload itself (history writes), which make the run void
	 */
	public record Result(Observed observed, Map<String, Long> calls, Map<String, Long> faults,
			List<String> harnessErrors) {
	}

	/** The statement timeout of every provider ({@link LockNodes#provider}). */
	static final Duration STATEMENT_TIMEOUT = Duration.ofSeconds(5);

	/** Bound of a release, a renewal and {@code extend}: the statement timeout + 2 s (docs/reference/limits.md). */
	static final Duration RELEASE_BOUND = STATEMENT_TIMEOUT.plusSeconds(2);

	static final int EXCLUSIVE = 3;

	static final int READ_WRITE = 2;

	static final int KEYS = 30;

	/**
	 * The resource that LEASE and PESSIMISTIC calls share (durable fencing; no OPTIMISTIC work, no forced release):
	 * the seam where a lock must never pass between modes inside the JVM.
	 */
	static final String MIXED = "xm0";

	static final Map<String, Integer> SEMAPHORES = Map.of("s0", 2, "s1", 1);

	private final Settings settings;

	private final String prefix;

	private final List<Node> nodes = new ArrayList<>();

	private final Map<String, AtomicLong> calls = new ConcurrentHashMap<>();

	private final Map<String, AtomicLong> faults = new ConcurrentHashMap<>();

	private final ConcurrentLinkedQueue<String> harnessErrors = new ConcurrentLinkedQueue<>();

	private HikariDataSource historyPool;

	/** The lock-side pool ({@link Servers#lockPool()}); the history pool itself on one server. */
	private HikariDataSource lockPool;

	private History history;

	private volatile boolean stopping;

	/** Where the run is; the test database unless {@link #run(Servers)} says otherwise. */
	private Servers servers;

	/** In a worker process: whether its server is a node of a multi-primary cluster. */
	private boolean multiPrimaryNode;

	/** The node whose server is killed or restarting, or -1. */
	private volatile int serverDown = -1;

	public Workload(Settings settings) {
		this(settings, newPrefix(settings.seed()));
	}

	/** A workload whose resources start with {@code prefix} (a worker process joins the run of that prefix). */
	Workload(Settings settings, String prefix) {
		this.settings = settings;
		this.prefix = prefix;
	}

	/** A new run's prefix: its resources' names start with it, and it names the run in the history tables. */
	static String newPrefix(long seed) {
		return "chk" + Long.toHexString(seed & 0xffffff) + "-" + UUID.randomUUID().toString().substring(0, 6) + "-";
	}

	/** Makes a node's pools: of the test database in one JVM, of the URLs it was given in a worker process. */
	interface Pools {

		/** A pool on {@code jdbcUrl} ({@code null}: the database itself, not through a proxy). */
		HikariDataSource pool(@org.jspecify.annotations.Nullable String jdbcUrl, int size,
				java.util.function.Consumer<com.zaxxer.hikari.HikariConfig> customizer);

	}

	/**
	 * Where a run's nodes and its history are: the test database, or one server per node (the nodes of a Galera
	 * cluster).
	 */
	interface Servers {

		/** Makes the nodes' pools. */
		Pools pools();

		/**
		 * A new pool for the history's records ({@code checker_section}, {@code checker_fenced}), which faults never
		 * touch; also the lock-side pool unless {@link #lockPool()} gives one.
		 */
		HikariDataSource historyPool();

		/**
		 * A new pool on the lock servers, not through a proxy, for the lock-side work: the lock tables' migration, the
		 * cleanup job, the forced releases, the leftovers check, the session table, and the history's rows written in
		 * the lock's own transactions ({@code checker_commit}, {@code checker_effect}); {@code null}: the history pool
		 * plays both roles (one server).
		 */
		default @org.jspecify.annotations.Nullable HikariDataSource lockPool() {
			return null;
		}

		/** The server node {@code index} reaches through its fault proxy. */
		String nodeUrl(int index);

		/**
		 * A pool on the server of node {@code index}, without a proxy, on which its sessions are listed and killed
		 * ({@code null}: the lock-side pool).
		 */
		javax.sql.@org.jspecify.annotations.Nullable DataSource sessions(int index);

		/** Creates the lock tables on the lock-side pool's database if needed. */
		void migrate(javax.sql.DataSource lockPool);

		/** Called once the run's tables exist, before any node connects (DDL reaches another server later). */
		void tablesCreated();

		/**
		 * Whether the servers are the nodes of a multi-primary cluster: the LEASE providers then validate at commit by
		 * writing the lock row, as the auto-configuration sets them up there, and no PESSIMISTIC call is made, since
		 * the library refuses that mode there (docs/reference/topology.md).
		 */
		boolean multiPrimary();

		/** The dialect of the nodes' server ({@code null}: the test database's, as detected). */
		io.github.dblock.jdbc.sql.@org.jspecify.annotations.Nullable LockDialect dialect();

		/**
		 * The nodes whose server a run with faults kills once (SIGKILL) and starts again; none by default. Never the
		 * history's server.
		 */
		default List<Integer> restartable() {
			return List.of();
		}

		/** Kills the server of node {@code index} with SIGKILL. */
		default void killServer(int index) {
			throw new UnsupportedOperationException();
		}

		/**
		 * Starts the killed server of node {@code index} again and waits until it serves again.
		 * @throws IllegalStateException if it does not within {@code timeout}
		 */
		default void restartServer(int index, Duration timeout) {
			throw new UnsupportedOperationException();
		}

	}

	/** The test database: every node and the history on it. */
	static Servers testDatabaseServers() {
		TestDatabase db = TestDatabase.get();
		Pools pools = testDatabase();
		return new Servers() {

			@Override
			public Pools pools() {
				return pools;
			}

			@Override
			public HikariDataSource historyPool() {
				return db.newDataSource(12, (config) -> config.setPoolName("checker-history"));
			}

			@Override
			public String nodeUrl(int index) {
				return db.jdbcUrl();
			}

			@Override
			public javax.sql.DataSource sessions(int index) {
				return null;
			}

			@Override
			public void migrate(javax.sql.DataSource lockPool) {
				LockNodes.migrateOnce(lockPool);
			}

			@Override
			public void tablesCreated() {
			}

			@Override
			public boolean multiPrimary() {
				return false;
			}

			@Override
			public io.github.dblock.jdbc.sql.LockDialect dialect() {
				return null;
			}

		};
	}

	/** The test database's pools. */
	static Pools testDatabase() {
		TestDatabase db = TestDatabase.get();
		return (url, size, customizer) -> db.newDataSource(size, (config) -> {
			if (url != null) {
				config.setJdbcUrl(url);
			}
			customizer.accept(config);
		});
	}

	/**
	 * Runs one node, {@link Settings#threads()} threads of the workload's random calls, in this (worker) process
	 * until {@code going} turns false, records into {@code history}, and returns once every call has ended. No
	 * cleanup and no faults: the test process runs those.
	 * @param index the node's index: its name is {@code p<index>}, its threads' seeds follow from the run's seed and it
	 * @param lockUrl the URL of the node's pool (the test's fault proxy for this process)
	 * @param multiPrimary whether the server is a node of a multi-primary cluster (as {@link Servers#multiPrimary()})
	 * @return the errors of the workload itself
	 */
	List<String> runNode(int index, String lockUrl, boolean multiPrimary, Pools pools, History history,
			java.util.function.BooleanSupplier going) throws InterruptedException {
		this.history = history;
		this.multiPrimaryNode = multiPrimary;
		Map<String, Integer> permits = new LinkedHashMap<>();
		SEMAPHORES.forEach((name, n) -> permits.put(this.prefix + name, n));
		boolean validateAtCommit = new Random(this.settings.seed() + index).nextBoolean();
		// the providers ask the server for its version: a worker may start while the server restarts
		Node node = CheckerWorker.whenReachable(
				() -> node("p" + index, pools, null, lockUrl, permits, validateAtCommit, true));
		List<Thread> workers = new ArrayList<>();
		for (int t = 0; t < this.settings.threads(); t++) {
			Random random = new Random(this.settings.seed() * 31 + node.name().hashCode() * 7L + t);
			workers.add(workerThread(() -> work(node, random, going), "checker-" + node.name() + "-" + t));
		}
		workers.forEach(Thread::start);
		for (Thread worker : workers) {
			worker.join();
		}
		node.methods().close();
		node.idempotency().close();
		node.leaseProviders().forEach(LeaseLockProvider::close);
		node.pool().close();
		return List.copyOf(this.harnessErrors);
	}

	/** Whether the nodes' server is a multi-primary cluster, in this JVM's run or in a worker process. */
	private boolean multiPrimary() {
		return (this.servers != null && this.servers.multiPrimary()) || this.multiPrimaryNode;
	}

	/** One node: its pool behind its proxy, and its templates. */
	private record Node(String name, @org.jspecify.annotations.Nullable FaultProxy proxy, HikariDataSource pool,
			LockTemplate locks, LockTemplate serverClockLocks,
			List<LeaseLockProvider> leaseProviders, SemaphoreTemplate semaphores, IdempotencyNodes.Node idempotency,
			TransactionTemplate transactions, JdbcTemplate jdbc, LockedMethods methods,
			DistributedLockRegistry registry, DistributedLockShedLockProvider shedLock, boolean validateAtCommit,
			HoldObservations holds) {
	}

	/** Runs the workload on the test database for its duration, lets every call finish, and returns the history. */
	public Result run() throws Exception {
		return run(testDatabaseServers());
	}

	/** Runs the workload on {@code servers} for its duration, lets every call finish, and returns the history. */
	Result run(Servers servers) throws Exception {
		this.servers = servers;
		Pools pools = servers.pools();
		this.historyPool = servers.historyPool();
		HikariDataSource ownLockPool = servers.lockPool();
		this.lockPool = (ownLockPool != null) ? ownLockPool : this.historyPool;
		servers.migrate(this.lockPool);
		this.history = new History(this.historyPool, this.lockPool, this.prefix);
		JdbcTemplate direct = new JdbcTemplate(this.lockPool);
		createSessionTable(direct);
		servers.tablesCreated();
		Random setup = new Random(this.settings.seed());
		Map<String, Integer> permits = new LinkedHashMap<>();
		SEMAPHORES.forEach((name, n) -> permits.put(this.prefix + name, n));
		List<JdbcTemplate> sessions = new ArrayList<>();
		List<SmallPool> smallPools = new ArrayList<>();
		SmallPool turnPool = null;
		for (int i = 0; i < this.settings.nodes(); i++) {
			String url = servers.nodeUrl(i);
			FaultProxy proxy = FaultProxy.forJdbcUrl(url);
			// node 0 always has the commit check, on which writeCheckedAtCommit relies
			boolean validateAtCommit = setup.nextBoolean() || i == 0;
			this.nodes.add(node("n" + i, pools, proxy, proxy.jdbcUrl(url), permits, validateAtCommit, i == 0));
			if (!servers.multiPrimary()) {
				HikariDataSource nodePool = this.nodes.get(i).pool();
				io.github.dblock.jdbc.sql.LockDialect dialect = (servers.dialect() != null) ? servers.dialect()
						: LockNodes.dialect(nodePool);
				smallPools.add(smallPool("n" + i, pools, proxy.jdbcUrl(url), dialect));
				if (i == 0) {
					// on the server itself, not through the proxy: faults would refuse calls legitimately
					turnPool = smallPool("n0-turn", pools, url, dialect);
				}
			}
			javax.sql.DataSource own = servers.sessions(i);
			sessions.add((own != null) ? new JdbcTemplate(own) : direct);
		}
		List<Thread> workers = new ArrayList<>();
		long until = System.nanoTime() + this.settings.duration().toNanos();
		for (Node node : this.nodes) {
			for (int t = 0; t < this.settings.threads(); t++) {
				Random random = new Random(this.settings.seed() * 31 + node.name().hashCode() * 7L + t);
				Thread worker = workerThread(() -> work(node, random, () -> System.nanoTime() < until),
						"checker-" + node.name() + "-" + t);
				workers.add(worker);
			}
		}
		// while a server is killed or restarting, a cluster's other nodes stall until it is evicted and refuse
		// statements during the view changes (Galera: "WSREP has not yet prepared node for application use")
		Thread cleanup = new Thread(() -> cleanup(this.lockPool, new Random(this.settings.seed() + 1),
				() -> this.stopping, () -> this.serverDown >= 0, this.faults, this.harnessErrors), "checker-cleanup");
		Thread injector = new Thread(() -> inject(new Random(this.settings.seed() + 2), sessions), "checker-faults");
		Thread forcer = new Thread(() -> forceReleases(new Random(this.settings.seed() + 3)), "checker-force-release");
		Thread restarter = new Thread(() -> restartServer(new Random(this.settings.seed() + 4)),
				"checker-server-restart");
		SmallPool turn = turnPool;
		Thread burster = new Thread(() -> bursts(new Random(this.settings.seed() + 5), smallPools, turn),
				"checker-bursts");
		Thread expiredReaders = new Thread(this::expiredReaders, "checker-expired-readers");
		if (!servers.multiPrimary()) {
			expiredReaders.start();
		}
		workers.forEach(Thread::start);
		cleanup.start();
		if (!smallPools.isEmpty()) {
			burster.start();
		}
		if (this.settings.faults()) {
			injector.start();
			forcer.start();
			if (!servers.restartable().isEmpty()) {
				restarter.start();
			}
		}
		for (Thread worker : workers) {
			worker.join(TimeUnit.MINUTES.toMillis(5) + this.settings.duration().toMillis());
			if (worker.isAlive()) {
				this.harnessErrors.add(worker.getName() + " did not finish");
			}
		}
		restarter.join(TimeUnit.MINUTES.toMillis(3));
		if (restarter.isAlive()) {
			this.harnessErrors.add("the server restart did not finish");
		}
		this.stopping = true;
		expiredReaders.join(30_000);
		burster.join(TimeUnit.MINUTES.toMillis(3));
		if (burster.isAlive()) {
			this.harnessErrors.add("the last burst did not finish");
		}
		injector.join(10_000);
		forcer.join(10_000);
		cleanup.join(10_000);
		for (SmallPool small : smallPools) {
			small.methods().close();
		}
		if (turnPool != null) {
			turnPool.methods().close();
		}
		for (Node node : this.nodes) {
			node.methods().close();
			node.proxy().passThrough();
			node.idempotency().close();
			node.leaseProviders().forEach(LeaseLockProvider::close);
		}
		// the longest lease of the run (idempotency claims: 2 s) ends; then nothing of the run may be held
		Thread.sleep(2_500);
		List<String> leftovers = leftovers(this.lockPool, this.prefix);
		Observed observed = this.history.observed(permits, leftovers);
		for (SmallPool small : smallPools) {
			small.pool().close();
		}
		if (turnPool != null) {
			turnPool.pool().close();
		}
		for (Node node : this.nodes) {
			node.pool().close();
			node.proxy().close();
		}
		this.historyPool.close();
		if (this.lockPool != this.historyPool) {
			this.lockPool.close();
		}
		Map<String, Long> callCounts = new java.util.TreeMap<>();
		this.calls.forEach((k, v) -> callCounts.put(k, v.get()));
		Map<String, Long> faultCounts = new java.util.TreeMap<>();
		this.faults.forEach((k, v) -> faultCounts.put(k, v.get()));
		return new Result(observed, callCounts, faultCounts, List.copyOf(this.harnessErrors));
	}

	/** The table in which each node's sessions say who they are. */
	static void createSessionTable(JdbcTemplate direct) {
		direct.execute("CREATE TABLE IF NOT EXISTS checker_session (run VARCHAR(64) NOT NULL, node VARCHAR(32) NOT NULL,"
				+ " id BIGINT NOT NULL, PRIMARY KEY (run, node, id))");
	}

	private Node node(String name, Pools pools, @org.jspecify.annotations.Nullable FaultProxy proxy, String poolUrl,
			Map<String, Integer> permits, boolean validateAtCommit, boolean withDefect) {
		String run = this.prefix;
		HikariDataSource pool = pools.pool(poolUrl, 12, (config) -> {
			config.setPoolName("checker-" + name);
			config.setValidationTimeout(250);
			// each session of the node says who it is, so that the fault injector can kill one of them
			config.setConnectionInitSql("INSERT IGNORE INTO checker_session (run, node, id) VALUES ('" + run + "', '"
					+ name + "', CONNECTION_ID())");
		});
		io.github.dblock.jdbc.sql.LockDialect dialect = (this.servers != null && this.servers.dialect() != null)
				? this.servers.dialect() : LockNodes.dialect(pool);
		boolean multiPrimary = multiPrimary();
		LockProvider lease = LockNodes.provider(LockMode.LEASE, pool, dialect);
		LockProvider pessimistic = LockNodes.provider(LockMode.PESSIMISTIC, pool, dialect);
		LockProvider optimistic = LockNodes.provider(LockMode.OPTIMISTIC, pool, dialect);
		((LeaseLockProvider) lease).setMultiPrimary(multiPrimary);
		List<LeaseLockProvider> leaseProviders = new ArrayList<>();
		leaseProviders.add((LeaseLockProvider) lease);
		if (withDefect && this.settings.defect() != null) {
			lease = this.settings.defect().apply(lease);
		}
		LockTemplate locks = new LockTemplate(List.of(lease, pessimistic, optimistic), LockMode.LEASE, Duration.ZERO,
				Duration.ofSeconds(1), name);
		locks.setValidateAtCommit(validateAtCommit);
		HoldObservations holds = new HoldObservations();
		locks.setObservationRegistry(HoldObservations.registry(holds));
		if (multiPrimary) {
			locks.refuseMode(LockMode.PESSIMISTIC, "a multi-primary cluster (as DatabaseTopology reports Galera)");
		}
		// PESSIMISTIC with fencing: server-clock, on the PESSIMISTIC-only resource (see pessimistic(Random, String))
		io.github.dblock.jdbc.pessimistic.PessimisticLockProvider serverClock = (io.github.dblock.jdbc.pessimistic.PessimisticLockProvider) LockNodes
			.provider(LockMode.PESSIMISTIC, pool, dialect);
		serverClock.setFencing(io.github.dblock.jdbc.pessimistic.PessimisticLockProvider.Fencing.SERVER_CLOCK);
		LockTemplate serverClockLocks = new LockTemplate(List.of(serverClock), LockMode.PESSIMISTIC, Duration.ZERO,
				Duration.ofSeconds(1), name);
		serverClockLocks.setValidateAtCommit(validateAtCommit);
		SemaphoreTemplate semaphores = SemaphoreNodes.node(name, pool, Duration.ofSeconds(1), permits);
		IdempotencyNodes.Node idempotency = IdempotencyNodes.node(pool, name, Duration.ofSeconds(2));
		return new Node(name, proxy, pool, locks, serverClockLocks, leaseProviders, semaphores, idempotency,
				new TransactionTemplate(new DataSourceTransactionManager(pool)), new JdbcTemplate(pool),
				new LockedMethods(locks, pool), new DistributedLockRegistry(locks, null),
				new DistributedLockShedLockProvider(lease, name), validateAtCommit, holds);
	}

	private static void count(Map<String, AtomicLong> counts, String what) {
		counts.computeIfAbsent(what, (k) -> new AtomicLong()).incrementAndGet();
	}

	private void work(Node node, Random random, java.util.function.BooleanSupplier going) {
		boolean multiPrimary = multiPrimary();
		while (going.getAsBoolean()) {
			int pick = random.nextInt(166);
			if (multiPrimary && ((pick >= 30 && pick < 50) || (pick >= 118 && (pick - 118) % 16 >= 6))) {
				// the PESSIMISTIC kinds: refused on a multi-primary cluster (docs/reference/topology.md, "Why
				// PESSIMISTIC is refused on Galera"); the thread draws again among the other kinds
				continue;
			}
			String x = this.prefix + "x" + random.nextInt(EXCLUSIVE);
			String rw = this.prefix + "rw" + random.nextInt(READ_WRITE);
			try {
				if (pick < 20) {
					lockCall(node, random, x, LockMode.LEASE, LockType.EXCLUSIVE, random.nextBoolean());
				}
				else if (pick < 30) {
					executeLease(node, random, x);
				}
				else if (pick < 40) {
					lockCall(node, random, pessimistic(random, x), LockMode.PESSIMISTIC, LockType.EXCLUSIVE,
							random.nextBoolean());
				}
				else if (pick < 50) {
					executeTransactional(node, random, pessimistic(random, x), LockMode.PESSIMISTIC);
				}
				else if (pick < 58) {
					executeTransactional(node, random, x, LockMode.OPTIMISTIC);
				}
				else if (pick < 68) {
					lockCall(node, random, rw, LockMode.LEASE, LockType.READ, random.nextBoolean());
					noHoldLeftOpen(node, rw);
				}
				else if (pick < 76) {
					if (rw.endsWith("rw0") && node.validateAtCommit() && !multiPrimary) {
						writeCheckedAtCommit(node, random, rw);
					}
					else {
						lockCall(node, random, rw, LockMode.LEASE, LockType.WRITE, random.nextBoolean());
					}
					noHoldLeftOpen(node, rw);
				}
				else if (pick < 88) {
					permit(node, random, this.prefix + (random.nextBoolean() ? "s0" : "s1"));
				}
				else if (pick < 100) {
					idempotent(node, random, this.prefix + "k" + random.nextInt(KEYS));
				}
				else if (pick < 106) {
					annotated(node, random, x);
				}
				else if (pick < 112) {
					registry(node, random, x);
				}
				else if (pick < 118) {
					shedLock(node, random, x);
				}
				else {
					mixed(node, random, (pick - 118) % 16);
				}
			}
			catch (Throwable ex) {
				this.harnessErrors.add(Thread.currentThread().getName() + ": " + ex);
			}
		}
	}

	/**
	 * A call on {@link #MIXED}, which LEASE and PESSIMISTIC callers of every node and thread share: LEASE
	 * {@code tryAcquire}/{@code acquire} or {@code execute}, PESSIMISTIC {@code tryAcquire}/{@code acquire},
	 * {@code execute} or {@code @DistributedLock(mode = PESSIMISTIC)}. A LEASE holder that releases while a local
	 * thread of the other mode is next in line must not hand its lease to it.
	 * @param pick 0 to 15
	 */
	private void mixed(Node node, Random random, int pick) {
		String resource = this.prefix + MIXED;
		if (pick < 4) {
			lockCall(node, random, resource, LockMode.LEASE, LockType.EXCLUSIVE, random.nextBoolean());
		}
		else if (pick < 6) {
			executeLease(node, random, resource);
		}
		else if (pick < 8) {
			lockCall(node, random, resource, LockMode.PESSIMISTIC, LockType.EXCLUSIVE, random.nextBoolean());
		}
		else if (pick < 9) {
			executeTransactional(node, random, resource, LockMode.PESSIMISTIC);
		}
		else if (pick < 10) {
			annotatedPessimistic(node, random, resource);
		}
		else {
			pessimisticInCallersTransaction(node, random, resource, random.nextBoolean());
		}
	}

	/**
	 * PESSIMISTIC {@code execute} or a {@code @DistributedLock(mode = PESSIMISTIC)} method (wait 1 s) inside a
	 * caller's transaction: the lock is the row lock of that transaction, held until it completes, so the section
	 * goes on for 20 to 100 ms after the call returned, in the same transaction, and its exit is written just before
	 * the commit. The commit marker is written in that transaction: the section counts only if it committed.
	 */
	private void pessimisticInCallersTransaction(Node node, Random random, String resource, boolean annotated) {
		String call = annotated ? "@DistributedLock PESSIMISTIC in caller's tx" : "PESSIMISTIC execute in caller's tx";
		count(this.calls, call);
		long invoked = System.nanoTime();
		long[] entered = new long[3]; // granted (JVM clock), op id, token
		Runnable section = () -> {
			LockHandle lock = CurrentLock.get(resource).orElseThrow();
			entered[0] = System.nanoTime();
			entered[1] = this.history.nextId();
			entered[2] = lock.fencingToken();
			this.history.enter(entered[1], node.name(), resource, Family.EXCLUSIVE, call, entered[2], true, true);
			this.history.timing(entered[1], entered[0], null, null, false);
			this.history.commitMarker(node.jdbc(), entered[1]);
			hold(random);
		};
		TransactionTemplate transactions = annotated ? node.methods().transactions() : node.transactions();
		try {
			transactions.executeWithoutResult((status) -> {
				if (annotated) {
					node.methods().service().lockedPessimistic(resource, section);
				}
				else {
					node.locks()
						.execute(resource,
								LockOptions.defaults().withMode(LockMode.PESSIMISTIC).withWaitTime(Duration.ofSeconds(1)),
								(lock) -> {
									section.run();
									return null;
								});
				}
				// still the caller's transaction: the row lock is held until its commit, for 20 to 100 ms more, which
				// lets other nodes' waiters try the lock in that time
				try {
					Thread.sleep(20 + random.nextInt(80));
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
				this.history.exit(entered[1], resource, entered[2], true);
			});
		}
		catch (RuntimeException ex) {
			// a busy lock, a lost connection: the section (if any) rolled back and does not count
		}
		if (entered[0] != 0) {
			this.history.op(0, node.name(), call + " (acquisition)", resource, invoked, entered[0],
					Duration.ofSeconds(1).plus(STATEMENT_TIMEOUT).plusSeconds(2).toNanos(), "ok");
		}
	}

	/**
	 * A {@code @DistributedLock(mode = PESSIMISTIC)} method (wait 1 s) called on its own: the method runs in the
	 * attempt's transaction, which writes the section's commit marker, so the section counts only if it committed.
	 */
	private void annotatedPessimistic(Node node, Random random, String resource) {
		annotatedPessimistic(node.name(), node.methods(), node.jdbc(), random, resource, "@DistributedLock PESSIMISTIC",
				false);
	}

	/**
	 * {@link #annotatedPessimistic(Node, Random, String)} through the given methods and their pool ({@code jdbc});
	 * the acquisition is recorded against its bound whether or not it got the lock.
	 */
	private void annotatedPessimistic(String nodeName, LockedMethods methods, JdbcTemplate jdbc, Random random,
			String resource, String call, boolean patient) {
		count(this.calls, call);
		long invoked = System.nanoTime();
		long[] first = new long[1];
		String outcome = "ok";
		java.util.function.BiConsumer<String, Runnable> method = patient ? methods.service()::lockedPessimisticPatiently
				: methods.service()::lockedPessimistic;
		try {
			method.accept(resource, () -> {
				if (first[0] == 0) {
					first[0] = System.nanoTime();
				}
				LockHandle lock = CurrentLock.get(resource).orElseThrow();
				long id = this.history.nextId();
				this.history.enter(id, nodeName, resource, Family.EXCLUSIVE, call, lock.fencingToken(), true, true);
				this.history.timing(id, System.nanoTime(), null, null, false);
				this.history.commitMarker(jdbc, id);
				if (patient) {
					shortHold(random);
				}
				else {
					hold(random);
				}
				this.history.exit(id, resource, lock.fencingToken(), true);
			});
		}
		catch (RuntimeException ex) {
			// a busy lock, a lost connection: the section (if any) rolled back and does not count
			outcome = outcome(ex);
		}
		long bound = (patient ? Checker.TURN_WAIT : Duration.ofSeconds(1)).plus(STATEMENT_TIMEOUT).plusSeconds(2)
			.toNanos();
		this.history.op(0, nodeName, call + " (acquisition)", resource, invoked,
				(first[0] != 0) ? first[0] : System.nanoTime(), bound, (first[0] != 0) ? "ok" : outcome);
	}

	/** A node's second pool of 2 connections, with a PESSIMISTIC-only template and its annotated methods. */
	private record SmallPool(String name, HikariDataSource pool, LockedMethods methods, JdbcTemplate jdbc) {
	}

	/** How many threads call at once in a {@link #bursts burst}. */
	static final int BURST = 6;

	/** The size of a node's {@link SmallPool}: fewer connections than a burst's callers. */
	static final int SMALL_POOL = 2;

	private SmallPool smallPool(String name, Pools pools, String poolUrl, io.github.dblock.jdbc.sql.LockDialect dialect) {
		String run = this.prefix;
		HikariDataSource pool = pools.pool(poolUrl, SMALL_POOL, (config) -> {
			config.setPoolName("checker-" + name + "-small");
			config.setValidationTimeout(250);
			config.setConnectionInitSql("INSERT IGNORE INTO checker_session (run, node, id) VALUES ('" + run + "', '"
					+ name + "', CONNECTION_ID())");
		});
		LockTemplate locks = new LockTemplate(List.of(LockNodes.provider(LockMode.PESSIMISTIC, pool, dialect)),
				LockMode.PESSIMISTIC, Duration.ZERO, Duration.ofSeconds(1), name);
		return new SmallPool(name, pool, new LockedMethods(locks, pool), new JdbcTemplate(pool));
	}

	/**
	 * Every 1 to 3 s until {@code stopping}: {@link #BURST} threads call {@code @DistributedLock(mode = PESSIMISTIC)}
	 * at once on {@link #MIXED} through one node's {@link SmallPool} of {@link #SMALL_POOL} connections. The local
	 * callers must queue in the JVM before they take a connection, so that every call runs or is refused within its
	 * bound. Every other burst on average goes instead to a resource of its own, new to the database, through
	 * {@code turn} (a small pool on the server without faults), with a wait time of {@link Checker#TURN_WAIT} and
	 * holds of 0 to 20 ms: the small pool must serve every caller in turn ({@link Checker#servedInTurn}).
	 */
	private void bursts(Random random, List<SmallPool> smallPools, @org.jspecify.annotations.Nullable SmallPool turn) {
		int turns = 0;
		while (!this.stopping) {
			try {
				Thread.sleep(1_000 + random.nextInt(2_000));
				if (this.stopping) {
					return;
				}
				boolean patient = turn != null && random.nextBoolean();
				SmallPool small = patient ? turn : smallPools.get(random.nextInt(smallPools.size()));
				String resource = patient ? this.prefix + "turn" + turns++ : this.prefix + MIXED;
				String call = patient ? Checker.TURN_CALL : "@DistributedLock PESSIMISTIC (pool of " + SMALL_POOL + ")";
				List<Thread> callers = new ArrayList<>();
				for (int i = 0; i < BURST; i++) {
					Random own = new Random(random.nextLong());
					callers.add(workerThread(() -> annotatedPessimistic(small.name(), small.methods(), small.jdbc(), own,
							resource, call, patient), "checker-burst-" + small.name() + "-" + i));
				}
				callers.forEach(Thread::start);
				for (Thread caller : callers) {
					caller.join(TimeUnit.MINUTES.toMillis(2));
					if (caller.isAlive()) {
						this.harnessErrors.add(caller.getName() + " did not finish");
					}
				}
				count(this.faults, "burst of " + BURST + " on a pool of " + SMALL_POOL);
			}
			catch (InterruptedException ex) {
				return;
			}
			catch (RuntimeException ex) {
				this.harnessErrors.add("burst: " + ex);
			}
		}
	}

	/**
	 * A WRITE lock on a short lease (300 to 600 ms, not renewed) taken inside a transaction of a node with the commit
	 * check: the section writes its commit marker in the transaction, and after the commit check (which locks the
	 * resource's row until the commit) the transaction waits until the lease has ended by this JVM's clock, plus
	 * 300 to 700 ms, then writes the exit and commits. A competing reader or writer must wait for that transaction
	 * (safety.md); the section counts only if the transaction committed.
	 */
	private void writeCheckedAtCommit(Node node, Random random, String resource) {
		String call = "LEASE WRITE in tx (commit check)";
		count(this.calls, call);
		Duration lease = Duration.ofMillis(300 + random.nextInt(300));
		LockOptions options = LockOptions.defaults()
			.withType(LockType.WRITE)
			.withWaitTime(Duration.ofSeconds(1))
			.withLeaseTime(lease);
		long bound = Duration.ofSeconds(1).plus(STATEMENT_TIMEOUT).plusSeconds(2).toNanos();
		long invoked = System.nanoTime();
		long[] section = new long[3]; // granted, op id, token
		long past = TimeUnit.MILLISECONDS.toNanos(300 + random.nextInt(400));
		try {
			node.transactions().executeWithoutResult((status) -> {
				LockHandle lock = node.locks().acquire(resource, options);
				try {
					section[0] = System.nanoTime();
					section[1] = this.history.nextId();
					section[2] = lock.fencingToken();
					this.history.op(section[1], node.name(), call, resource, invoked, section[0], bound, "ok");
					this.history.enter(section[1], node.name(), resource, Family.WRITE, call, section[2], true, true);
					this.history.timing(section[1], section[0], null, null, false);
					this.history.commitMarker(node.jdbc(), section[1]);
					hold(random);
				}
				finally {
					// the release waits for the transaction to complete; a handle left open when the section fails
					// (its transaction's connection broken) would stay this thread's hold, and the thread's next READ or
					// WRITE of the resource would re-enter it with the same token instead of being granted
					lock.close();
				}
				org.springframework.transaction.support.TransactionSynchronizationManager
					.registerSynchronization(new org.springframework.transaction.support.TransactionSynchronization() {
						@Override
						public void beforeCommit(boolean readOnly) {
							// after the commit check, registered before this
							long until = section[0] + lease.toNanos() + past;
							long left = until - System.nanoTime();
							if (left > 0) {
								try {
									TimeUnit.NANOSECONDS.sleep(left);
								}
								catch (InterruptedException ex) {
									Thread.currentThread().interrupt();
								}
							}
							Workload.this.history.exit(section[1], resource, section[2], true);
						}
					});
			});
		}
		catch (RuntimeException ex) {
			if (section[0] == 0) {
				this.history.op(this.history.nextId(), node.name(), call, resource, invoked, System.nanoTime(), bound,
						outcome(ex));
			}
			// else: the commit check failed or the connection was lost: rolled back, the section does not count
		}
	}

	/**
	 * A read/write call must leave no hold of the resource to its thread once it has returned (its transaction, if
	 * any, completed): a hold left open would be re-entered by the thread's next READ or WRITE of the resource, with
	 * the same fencing token and no grant, which the history would take for a new acquisition.
	 */
	private void noHoldLeftOpen(Node node, String resource) {
		String thread = "[" + Thread.currentThread().getName() + "]";
		for (io.github.dblock.LockIntrospection.LocalHold hold : node.locks().introspection().localHolds()) {
			if (hold.type() != LockType.EXCLUSIVE && hold.resource().equals(resource) && hold.holder().endsWith(thread)) {
				this.harnessErrors.add(Thread.currentThread().getName() + ": a " + hold.type() + " hold of " + resource
						+ " (fencing token " + hold.fencingToken() + ", hold count " + hold.holdCount()
						+ ") left open by the workload");
			}
		}
	}

	/** How many expired reader rows {@link #expiredReaders} keeps on {@code rw0}. */
	static final int EXPIRED_READERS = 20_000;

	/**
	 * Until {@code stopping}: keeps at least half of {@link #EXPIRED_READERS} expired reader rows on {@code rw0}
	 * (the cleanup job deletes them), checking every second: with that many, the optimizer reads the holder query
	 * through the {@code expires_at} index, which never visits an expired writer's row.
	 */
	private void expiredReaders() {
		JdbcTemplate jdbc = new JdbcTemplate(this.lockPool);
		byte[] key = (this.prefix + "rw0").getBytes(StandardCharsets.UTF_8);
		String digits = "(SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4"
				+ " UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) ";
		while (!this.stopping) {
			try {
				Long expired = jdbc.queryForObject("SELECT COUNT(*) FROM distributed_lock_rw_hold WHERE resource = ?"
						+ " AND expires_at <= UTC_TIMESTAMP(6)", Long.class, (Object) key);
				if (expired == null || expired < EXPIRED_READERS / 2) {
					jdbc.update("INSERT INTO distributed_lock_rw_hold (resource, owner_token, kind, holder, fencing_token,"
							+ " acquired_at, expires_at) SELECT ?, UUID(), 'R', 'expired reader', 1,"
							+ " UTC_TIMESTAMP(6) - INTERVAL 10 MINUTE, UTC_TIMESTAMP(6) - INTERVAL n * 1000 MICROSECOND"
							+ " FROM (SELECT a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d + 1 AS n FROM "
							+ digits + "a CROSS JOIN " + digits + "b CROSS JOIN " + digits + "c CROSS JOIN " + digits
							+ "e CROSS JOIN " + digits + "f) numbers WHERE n <= " + EXPIRED_READERS, (Object) key);
					count(this.faults, EXPIRED_READERS + " expired readers inserted");
				}
				Thread.sleep(1_000);
			}
			catch (InterruptedException ex) {
				return;
			}
			catch (RuntimeException ex) {
				this.harnessErrors.add("expired readers: " + ex);
				return;
			}
		}
	}

	/** Mostly a few ms; one in 20 a long hold of 300 to 1,200 ms, which outlives a short explicit lease. */
	/** A hold of 0 to 20 ms. */
	private static void shortHold(Random random) {
		try {
			Thread.sleep(random.nextInt(21));
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	private static void hold(Random random) {
		long millis = (random.nextInt(20) == 0) ? 300 + random.nextInt(900) : random.nextInt(8);
		try {
			Thread.sleep(millis);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	private static Family family(LockType type) {
		return switch (type) {
			case READ -> Family.READ;
			case WRITE -> Family.WRITE;
			default -> Family.EXCLUSIVE;
		};
	}

	private static String outcome(Throwable ex) {
		return ex.getClass().getSimpleName();
	}

	/** {@code tryAcquire} (wait 0 to 300 ms) or {@code acquire} (wait 2 s), then the section, re-entry, extend. */
	private void lockCall(Node node, Random random, String resource, LockMode mode, LockType type, boolean tryAcquire) {
		boolean serverClock = mode == LockMode.PESSIMISTIC && isServerClockResource(resource) && random.nextBoolean();
		LockTemplate locks = serverClock ? node.serverClockLocks() : node.locks();
		Duration wait = tryAcquire ? Duration.ofMillis(random.nextInt(300)) : Duration.ofSeconds(2);
		LockOptions options = LockOptions.defaults().withMode(mode).withType(type).withWaitTime(wait);
		boolean shortLease = mode == LockMode.LEASE && random.nextInt(4) == 0;
		if (shortLease) {
			options = options.withLeaseTime(Duration.ofMillis(200 + random.nextInt(600)));
		}
		String call = mode + (type == LockType.EXCLUSIVE ? "" : " " + type) + (tryAcquire ? " tryAcquire" : " acquire")
				+ (shortLease ? " (short lease)" : "") + (serverClock ? " server-clock" : "");
		count(this.calls, call);
		long id = this.history.nextId();
		long bound = wait.plus(STATEMENT_TIMEOUT).plusSeconds(2).toNanos();
		long invoked = System.nanoTime();
		Optional<LockHandle> handle;
		try {
			handle = tryAcquire ? locks.tryAcquire(resource, options) : Optional.of(locks.acquire(resource, options));
		}
		catch (RuntimeException ex) {
			this.history.op(id, node.name(), call, resource, invoked, System.nanoTime(), bound, outcome(ex));
			return;
		}
		long granted = System.nanoTime();
		this.history.op(id, node.name(), call, resource, invoked, granted, bound, handle.isPresent() ? "ok" : "busy");
		if (handle.isEmpty()) {
			return;
		}
		LockHandle lock = handle.get();
		AtomicBoolean lost = new AtomicBoolean();
		AtomicLong lostAt = new AtomicLong();
		lock.onLost((l) -> {
			lostAt.compareAndSet(0, System.nanoTime());
			lost.set(true);
		});
		long token = lock.fencingToken();
		boolean watched = mode == LockMode.LEASE && !shortLease;
		try {
			this.history.enter(id, node.name(), resource, family(type), call, token, false, true);
			if (random.nextInt(5) == 0) {
				reenter(node, locks, resource, options, id, lock, lost);
			}
			if (mode == LockMode.LEASE && type == LockType.EXCLUSIVE && random.nextInt(6) == 0) {
				Duration leaseTime = Duration.ofMillis(500 + random.nextInt(1_500));
				if (!releaseStep(node, id, "extend", resource, System.nanoTime(), () -> lock.extend(leaseTime))) {
					lost.set(true);
				}
			}
			hold(random);
			if (!lock.isHeld()) {
				lost.set(true);
			}
			this.history.exit(id, resource, token, true);
		}
		finally {
			long started = System.nanoTime();
			if (!releaseStep(node, id, "close", resource, started, lock::close)) {
				lost.set(true);
			}
			if (lost.get()) {
				this.history.lost(id);
			}
			this.history.timing(id, granted, started, nanosOrNull(lostAt), watched);
		}
	}

	private static Long nanosOrNull(AtomicLong nanos) {
		long value = nanos.get();
		return (value == 0) ? null : value;
	}

	/**
	 * Re-enters the held lock: the same token. A hold that was lost meanwhile (a take that waited behind a row lock
	 * for most of its lease is declared lost at once) is not re-entered: the call takes the lock anew, with a new
	 * token, and the section counts as lost. A new token while the hold is still held is an error of the run.
	 */
	private void reenter(Node node, LockTemplate locks, String resource, LockOptions options, long id,
			LockHandle outer, AtomicBoolean lost) {
		long token = outer.fencingToken();
		long started = System.nanoTime();
		try (LockHandle again = locks.acquire(resource, options)) {
			boolean same = again.fencingToken() == token;
			this.history.op(id, node.name(), "re-enter", resource, started, System.nanoTime(), 0,
					same ? "ok" : "new token " + again.fencingToken());
			if (!same) {
				if (lost.get() || !outer.isHeld()) {
					lost.set(true);
				}
				else {
					this.harnessErrors.add("op " + id + " on " + resource + ": re-entry gave token "
							+ again.fencingToken() + " while the hold of token " + token + " was held");
				}
			}
		}
		catch (RuntimeException ex) {
			lost.set(true);
			this.history.op(id, node.name(), "re-enter", resource, started, System.nanoTime(), 0, outcome(ex));
		}
	}

	/** {@code execute} in LEASE (wait 1 s): the section in the callback. */
	private void executeLease(Node node, Random random, String resource) {
		String call = "LEASE execute";
		count(this.calls, call);
		long id = this.history.nextId();
		long invoked = System.nanoTime();
		long[] entered = new long[2];
		AtomicBoolean lost = new AtomicBoolean();
		AtomicLong lostAt = new AtomicLong();
		Duration wait = Duration.ofSeconds(1);
		try {
			node.locks().execute(resource, LockOptions.defaults().withWaitTime(wait), (lock) -> {
				entered[0] = System.nanoTime();
				lock.onLost((l) -> {
					lostAt.compareAndSet(0, System.nanoTime());
					lost.set(true);
				});
				this.history.enter(id, node.name(), resource, Family.EXCLUSIVE, call, lock.fencingToken(), false, true);
				hold(random);
				if (!lock.isHeld()) {
					lost.set(true);
				}
				this.history.exit(id, resource, lock.fencingToken(), true);
				entered[1] = System.nanoTime();
				return null;
			});
			record(node, id, call, resource, invoked, entered, wait, "ok");
		}
		catch (RuntimeException ex) {
			lost.set(true);
			record(node, id, call, resource, invoked, entered, wait, outcome(ex));
		}
		if (lost.get() && entered[0] != 0) {
			this.history.lost(id);
		}
		if (entered[0] != 0) {
			this.history.timing(id, entered[0], (entered[1] != 0) ? entered[1] : null, nanosOrNull(lostAt), true);
		}
	}

	/** The acquisition (call to callback) and the release (callback's end to return) of an {@code execute}. */
	private void record(Node node, long id, String call, String resource, long invoked, long[] callback,
			Duration wait, String outcome) {
		long now = System.nanoTime();
		long acquireBound = wait.plus(STATEMENT_TIMEOUT).plusSeconds(2).toNanos();
		if (callback[0] == 0) {
			this.history.op(id, node.name(), call, resource, invoked, now, acquireBound, outcome);
			return;
		}
		this.history.op(id, node.name(), call + " (acquisition)", resource, invoked, callback[0], acquireBound, "ok");
		this.history.op(id, node.name(), call + " (release)", resource, callback[1], now, RELEASE_BOUND.toNanos(),
				outcome);
	}

	/**
	 * PESSIMISTIC or OPTIMISTIC {@code execute} (wait 1 s): the section runs in the lock's transaction and writes its
	 * commit marker there, so it counts only if that transaction committed. OPTIMISTIC work may run several times:
	 * each run is a section of its own. Their commits are the business transaction, which has no bound.
	 */
	private void executeTransactional(Node node, Random random, String resource, LockMode mode) {
		boolean serverClock = mode == LockMode.PESSIMISTIC && isServerClockResource(resource) && random.nextBoolean();
		LockTemplate locks = serverClock ? node.serverClockLocks() : node.locks();
		String call = mode + " execute" + (serverClock ? " server-clock" : "");
		count(this.calls, call);
		long invoked = System.nanoTime();
		boolean fenced = mode != LockMode.OPTIMISTIC;
		long[] first = new long[1];
		try {
			locks.execute(resource, LockOptions.defaults().withMode(mode).withWaitTime(Duration.ofSeconds(1)),
					(lock) -> {
						if (first[0] == 0) {
							first[0] = System.nanoTime();
						}
						long granted = System.nanoTime();
						long id = this.history.nextId();
						this.history.enter(id, node.name(), resource, Family.EXCLUSIVE, call, lock.fencingToken(), true,
								fenced);
						this.history.timing(id, granted, null, null, false);
						this.history.commitMarker(node.jdbc(), id);
						hold(random);
						this.history.exit(id, resource, lock.fencingToken(), fenced);
						return null;
					});
		}
		catch (RuntimeException ex) {
			// a conflict, a busy lock, a lost connection: the section (if any) rolled back and does not count
		}
		if (mode == LockMode.PESSIMISTIC && first[0] != 0) {
			this.history.op(0, node.name(), call + " (acquisition)", resource, invoked, first[0],
					Duration.ofSeconds(1).plus(STATEMENT_TIMEOUT).plusSeconds(2).toNanos(), "ok");
		}
	}

	/**
	 * The resource of a PESSIMISTIC call: one of the PESSIMISTIC-only resources {@code xp0} and {@code xp1}, where
	 * holders use {@code fencing: durable} or {@code server-clock} at random. The docs ask for "one mode per resource"
	 * and allow "durable and server-clock holders may share a resource" (docs/reference/lock-modes.md): a PESSIMISTIC
	 * holder that dies before its release has its token write rolled back, after which a LEASE take or an OPTIMISTIC
	 * commit that waited for its row lock no longer sees it (seen with SIGKILL: an OPTIMISTIC commit beside it).
	 */
	private String pessimistic(Random random, String x) {
		return this.prefix + "xp" + random.nextInt(2);
	}

	/** Whether PESSIMISTIC calls on the resource may use server-clock fencing: the PESSIMISTIC-only ones. */
	private boolean isServerClockResource(String resource) {
		return resource.startsWith(this.prefix + "xp");
	}

	/** A semaphore permit: {@code tryAcquire} with a wait of 0 to 500 ms, sometimes a short explicit lease. */
	private void permit(Node node, Random random, String name) {
		Duration wait = Duration.ofMillis(random.nextInt(500));
		SemaphoreOptions options = SemaphoreOptions.defaults().withWaitTime(wait);
		if (random.nextInt(4) == 0) {
			options = options.withLeaseTime(Duration.ofMillis(200 + random.nextInt(600)));
		}
		String call = "permit tryAcquire";
		count(this.calls, call);
		long id = this.history.nextId();
		long invoked = System.nanoTime();
		long bound = wait.plus(STATEMENT_TIMEOUT).plusSeconds(2).toNanos();
		Optional<PermitHandle> handle;
		try {
			handle = node.semaphores().tryAcquire(name, options);
		}
		catch (RuntimeException ex) {
			this.history.op(id, node.name(), call, name, invoked, System.nanoTime(), bound, outcome(ex));
			return;
		}
		this.history.op(id, node.name(), call, name, invoked, System.nanoTime(), bound,
				handle.isPresent() ? "ok" : "busy");
		if (handle.isEmpty()) {
			return;
		}
		PermitHandle permit = handle.get();
		AtomicBoolean lost = new AtomicBoolean();
		permit.onLost((p) -> lost.set(true));
		try {
			this.history.enter(id, node.name(), name, Family.PERMIT, call, permit.fencingToken(), false, false);
			hold(random);
			if (!permit.isHeld()) {
				lost.set(true);
			}
			this.history.exit(id, name, permit.fencingToken(), false);
		}
		finally {
			if (!releaseStep(node, id, "permit close", name, System.nanoTime(), permit::close)) {
				lost.set(true);
			}
			if (lost.get()) {
				this.history.lost(id);
			}
		}
	}

	/**
	 * Runs a step bounded like a release (a close, an unlock, {@code extend}) and records it as an operation against
	 * {@link #RELEASE_BOUND}, started at {@code started}.
	 * @return whether the step succeeded; a step that threw leaves the section's hold in doubt
	 */
	private boolean releaseStep(Node node, long id, String what, String resource, long started, Runnable step) {
		try {
			step.run();
			this.history.op(id, node.name(), what, resource, started, System.nanoTime(), RELEASE_BOUND.toNanos(), "ok");
			return true;
		}
		catch (RuntimeException ex) {
			this.history.op(id, node.name(), what, resource, started, System.nanoTime(), RELEASE_BOUND.toNanos(),
					outcome(ex));
			return false;
		}
	}

	/** An idempotent call in a transaction of the node's pool; its work writes its effect in that transaction. */
	private void idempotent(Node node, Random random, String key) {
		String call = "idempotent execute";
		count(this.calls, call);
		long id = this.history.nextId();
		long invoked = System.nanoTime();
		try {
			node.transactions().execute((status) -> node.idempotency().template().execute(key,
					IdempotencyOptions.defaults().withWaitTime(Duration.ofSeconds(1)), Long.class, (claim) -> {
						this.history.effect(node.jdbc(), id, key);
						hold(random);
						return id;
					}));
			this.history.succeeded(key);
			this.history.op(id, node.name(), call, key, invoked, System.nanoTime(), 0, "ok");
		}
		catch (RuntimeException ex) {
			this.history.op(id, node.name(), call, key, invoked, System.nanoTime(), 0, outcome(ex));
		}
	}

	/**
	 * A {@code @DistributedLock} method (renewed lease, wait 1 s) called on its own, inside a caller's transaction
	 * (the lock is held until that transaction completes, so the section's exit is written after the method returned,
	 * still in the caller's transaction), or with {@code REQUIRES_NEW} inside a caller's transaction (the exit is
	 * written in the method). The section takes the handle from {@link CurrentLock}. In a caller's transaction on a
	 * node without the commit check, the section is not confirmed (see below).
	 */
	private void annotated(Node node, Random random, String resource) {
		int variant = random.nextInt(3);
		String call = switch (variant) {
			case 0 -> "@DistributedLock";
			case 1 -> "@DistributedLock in caller's tx";
			default -> "@DistributedLock REQUIRES_NEW in caller's tx";
		};
		count(this.calls, call);
		long id = this.history.nextId();
		long[] times = new long[3]; // invoked, granted, released
		long[] token = new long[1];
		LockHandle[] held = new LockHandle[1];
		HoldObservations.Hold[] libraryHold = new HoldObservations.Hold[1];
		AtomicBoolean lost = new AtomicBoolean();
		AtomicLong lostAt = new AtomicLong();
		Runnable section = () -> {
			times[1] = System.nanoTime();
			LockHandle lock = CurrentLock.get(resource).orElseThrow();
			held[0] = lock;
			libraryHold[0] = node.holds().current(resource);
			lock.onLost((l) -> {
				lostAt.compareAndSet(0, System.nanoTime());
				lost.set(true);
			});
			token[0] = lock.fencingToken();
			this.history.enter(id, node.name(), resource, Family.EXCLUSIVE, call, token[0], false, true);
			hold(random);
			if (variant != 1) {
				leave(id, resource, token[0], lock, lost, times);
			}
		};
		Duration wait = Duration.ofSeconds(1);
		String outcome = "ok";
		try {
			if (variant == 0) {
				times[0] = System.nanoTime();
				node.methods().service().locked(resource, section);
			}
			else {
				node.methods().transactions().executeWithoutResult((status) -> {
					times[0] = System.nanoTime();
					if (variant == 1) {
						node.methods().service().locked(resource, section);
						leave(id, resource, token[0], held[0], lost, times);
					}
					else {
						node.methods().service().lockedInNewTransaction(resource, section);
					}
				});
			}
		}
		catch (RuntimeException ex) {
			lost.set(true);
			outcome = outcome(ex);
		}
		long now = System.nanoTime();
		long acquireBound = wait.plus(STATEMENT_TIMEOUT).plusSeconds(2).toNanos();
		if (times[1] == 0) {
			this.history.op(id, node.name(), call, resource, (times[0] != 0) ? times[0] : now, now, acquireBound,
					outcome);
			return;
		}
		this.history.op(id, node.name(), call + " (acquisition)", resource, times[0], times[1], acquireBound, "ok");
		this.history.op(id, node.name(), call + " (return)", resource, times[1], now, 0, outcome);
		// Inside a caller's transaction the lock is released once that transaction has completed, when nothing can be
		// thrown to the caller any more (a failed release is only logged). Without the commit check, nothing the
		// caller sees confirms the hold to its end, so the section is not counted as confirmed.
		if (lost.get() || (variant != 0 && !node.validateAtCommit())) {
			this.history.lost(id);
		}
		// the method runs after the transaction advisor began its transaction: a listener registered then runs at once
		// if the lease ended meanwhile, so the loss time is the library's own (HoldObservations)
		this.history.timing(id, times[1], (times[2] != 0) ? times[2] : null,
				HoldObservations.lostAt(lostAt.get(), libraryHold[0]), true);
	}

	/** The exit of a section whose handle is given: not held any more is lost; the release time is taken after. */
	private void leave(long id, String resource, long token, LockHandle lock, AtomicBoolean lost, long[] times) {
		if (!lock.isHeld()) {
			lost.set(true);
		}
		this.history.exit(id, resource, token, true);
		times[2] = System.nanoTime();
	}

	/**
	 * A lock of the Spring Integration {@link DistributedLockRegistry} of the node: {@code tryLock} with a wait of 0 to
	 * 300 ms, on a renewed lease or (one in 4) with a TTL of 200 to 800 ms that a long hold outlives. The token and
	 * {@code onLost} come from the thread's hold ({@link CurrentLock}); {@code unlock()} of a lock whose lease ended
	 * throws {@link java.util.ConcurrentModificationException}.
	 */
	private void registry(Node node, Random random, String resource) {
		Duration wait = Duration.ofMillis(random.nextInt(300));
		boolean ttl = random.nextInt(4) == 0;
		String call = "registry tryLock" + (ttl ? " (ttl)" : "");
		count(this.calls, call);
		long id = this.history.nextId();
		long bound = wait.plus(STATEMENT_TIMEOUT).plusSeconds(2).toNanos();
		org.springframework.integration.support.locks.DistributedLock lock = node.registry().obtain(resource);
		long invoked = System.nanoTime();
		boolean locked;
		try {
			locked = ttl ? lock.tryLock(wait, Duration.ofMillis(200 + random.nextInt(600)))
					: lock.tryLock(wait.toNanos(), TimeUnit.NANOSECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return;
		}
		catch (RuntimeException ex) {
			this.history.op(id, node.name(), call, resource, invoked, System.nanoTime(), bound, outcome(ex));
			return;
		}
		long granted = System.nanoTime();
		this.history.op(id, node.name(), call, resource, invoked, granted, bound, locked ? "ok" : "busy");
		if (!locked) {
			return;
		}
		AtomicBoolean lost = new AtomicBoolean();
		AtomicLong lostAt = new AtomicLong();
		long released = 0;
		try {
			LockHandle hold = CurrentLock.get(resource).orElseThrow();
			hold.onLost((l) -> {
				lostAt.compareAndSet(0, System.nanoTime());
				lost.set(true);
			});
			this.history.enter(id, node.name(), resource, Family.EXCLUSIVE, call, hold.fencingToken(), false, true);
			hold(random);
			if (!hold.isHeld()) {
				lost.set(true);
			}
			this.history.exit(id, resource, hold.fencingToken(), true);
		}
		finally {
			released = System.nanoTime();
			if (!releaseStep(node, id, "registry unlock", resource, released, lock::unlock)) {
				lost.set(true);
			}
			if (lost.get()) {
				this.history.lost(id);
			}
			this.history.timing(id, granted, released, nanosOrNull(lostAt), !ttl);
		}
	}

	/**
	 * A lock of the node's {@link DistributedLockShedLockProvider}: one attempt, {@code lockAtMostFor} 2 s or (one in
	 * 4) 200 to 800 ms, not renewed. ShedLock exposes no fencing token and tells nothing when the lease ends under the
	 * task, so the section has no token and writes nothing fenced, and counts as lost when its exit was written
	 * {@code lockAtMostFor} or later after the take was sent (the lease, counted on the server from the take, may
	 * have ended inside it).
	 */
	private void shedLock(Node node, Random random, String resource) {
		Duration atMostFor = (random.nextInt(4) == 0) ? Duration.ofMillis(200 + random.nextInt(600))
				: Duration.ofSeconds(2);
		String call = "ShedLock lock" + (atMostFor.getSeconds() < 2 ? " (short lockAtMostFor)" : "");
		count(this.calls, call);
		long id = this.history.nextId();
		long bound = STATEMENT_TIMEOUT.plusSeconds(2).toNanos();
		long invoked = System.nanoTime();
		Optional<SimpleLock> handle;
		try {
			handle = node.shedLock()
				.lock(new LockConfiguration(java.time.Instant.now(), resource, atMostFor, Duration.ZERO));
		}
		catch (RuntimeException ex) {
			this.history.op(id, node.name(), call, resource, invoked, System.nanoTime(), bound, outcome(ex));
			return;
		}
		long granted = System.nanoTime();
		this.history.op(id, node.name(), call, resource, invoked, granted, bound, handle.isPresent() ? "ok" : "busy");
		if (handle.isEmpty()) {
			return;
		}
		boolean lost = false;
		long released = 0;
		try {
			this.history.enter(id, node.name(), resource, Family.EXCLUSIVE, call, History.NO_TOKEN, false, false);
			hold(random);
			this.history.exit(id, resource, History.NO_TOKEN, false);
		}
		finally {
			released = System.nanoTime();
			if (released - invoked >= atMostFor.toNanos()) {
				lost = true;
			}
			if (!releaseStep(node, id, "ShedLock unlock", resource, released, () -> handle.get().unlock())) {
				lost = true;
			}
			if (lost) {
				this.history.lost(id);
			}
			this.history.timing(id, granted, released, null, false);
		}
	}

	/**
	 * Every 1.5 to 4 s, the Actuator's {@link ForceReleasingLocksEndpoint} forces one exclusive resource free (on the
	 * lock-side pool, which the fault proxies never touch); a release that found the lock held goes into the history with the
	 * token it freed.
	 */
	private void forceReleases(Random random) {
		ForceReleasingLocksEndpoint endpoint = new ForceReleasingLocksEndpoint(
				new LockTableAdmin(this.lockPool, LockNodes.TABLE, STATEMENT_TIMEOUT));
		boolean downAtStart = false;
		while (!this.stopping) {
			try {
				Thread.sleep(1_500 + random.nextInt(2_500));
				if (this.stopping) {
					return;
				}
				String resource = this.prefix + "x" + random.nextInt(EXCLUSIVE);
				downAtStart = this.serverDown >= 0;
				long invoked = System.nanoTime();
				Object body = endpoint.forceRelease(null, resource).getBody();
				long completed = System.nanoTime();
				if (body instanceof LockTableAdmin.ForceRelease released) {
					if (released.wasHeld()) {
						this.history.forced(resource, released.previousFencingToken(),
								String.valueOf(released.previousHolder()), invoked, completed);
						count(this.faults, "force-release (held)");
					}
					else {
						count(this.faults, "force-release (not held)");
					}
				}
				else {
					count(this.faults, "force-release (" + ((body == null) ? "no row" : "refused") + ")");
				}
			}
			catch (InterruptedException ex) {
				return;
			}
			catch (RuntimeException ex) {
				if (downAtStart || this.serverDown >= 0) {
					count(this.faults, "force-release failed (a server restarting)");
					continue;
				}
				this.harnessErrors.add("force-release: " + ex);
			}
		}
	}

	/**
	 * The cleanup job, run aggressively: every 100 to 400 ms, with the shortest retention, until {@code stopping}.
	 * While {@code serverDown} is true (a restart of the server the test owns), failures are expected and skipped, and
	 * so are those of a run that began while it was (its wait for a connection may end after the restart).
	 */
	static void cleanup(javax.sql.DataSource pool, Random random, java.util.function.BooleanSupplier stopping,
			Map<String, AtomicLong> counts, java.util.Collection<String> errors) {
		cleanup(pool, random, stopping, () -> false, counts, errors);
	}

	static void cleanup(javax.sql.DataSource pool, Random random, java.util.function.BooleanSupplier stopping,
			java.util.function.BooleanSupplier serverDown, Map<String, AtomicLong> counts,
			java.util.Collection<String> errors) {
		LockTableCleaner cleaner = new LockTableCleaner(pool, LockNodes.TABLE, LockTableCleaner.MIN_RETENTION, 100,
				STATEMENT_TIMEOUT);
		while (!stopping.getAsBoolean()) {
			boolean downAtStart = serverDown.getAsBoolean();
			try {
				cleaner.deleteExpired();
				cleaner.deleteExpiredReadWriteHolds();
				cleaner.deleteExpiredPermits();
				count(counts, "cleanup runs");
				Thread.sleep(100 + random.nextInt(300));
			}
			catch (InterruptedException ex) {
				return;
			}
			catch (RuntimeException ex) {
				if (!downAtStart && !serverDown.getAsBoolean()) {
					errors.add("cleanup: " + ex);
				}
			}
		}
	}

	/**
	 * Once, between a fifth and two fifths of the run: the server of one of {@link Servers#restartable()} gets SIGKILL,
	 * is started again 1 to 3 s later, and the thread waits until it serves again.
	 */
	private void restartServer(Random random) {
		try {
			Thread.sleep(this.settings.duration().toMillis() / 5
					+ (long) (random.nextDouble() * this.settings.duration().toMillis() / 5));
			List<Integer> restartable = this.servers.restartable();
			int index = restartable.get(random.nextInt(restartable.size()));
			this.serverDown = index;
			long killed = System.nanoTime();
			this.servers.killServer(index);
			count(this.faults, "server SIGKILL");
			Thread.sleep(1_000 + random.nextInt(2_000));
			long restarted = System.nanoTime();
			this.servers.restartServer(index, Duration.ofMinutes(2));
			count(this.faults, "server restarted");
			this.serverDown = -1;
			System.out.println("[checker] the server of node n" + index + " got SIGKILL, was started again "
					+ TimeUnit.NANOSECONDS.toMillis(restarted - killed) + " ms later and served again after "
					+ TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - restarted) + " ms");
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		catch (RuntimeException ex) {
			this.harnessErrors.add("server restart: " + ex);
		}
	}

	/** A fault every 1 to 3 s on a random node; {@code killers}: where each node's sessions are killed. */
	private void inject(Random random, List<JdbcTemplate> killers) {
		boolean downAtStart = false;
		while (!this.stopping) {
			try {
				Thread.sleep(1_000 + random.nextInt(2_000));
				if (this.stopping) {
					return;
				}
				int index = random.nextInt(this.nodes.size());
				Node node = this.nodes.get(index);
				JdbcTemplate direct = killers.get(index);
				downAtStart = this.serverDown >= 0;
				switch (random.nextInt(3)) {
					case 0 -> {
						if (this.serverDown == index) {
							count(this.faults, "KILL CONNECTION skipped (server down)");
							continue;
						}
						List<Long> sessions = direct.queryForList("SELECT s.id FROM checker_session s JOIN"
								+ " information_schema.PROCESSLIST p ON p.ID = s.id WHERE s.run = ? AND s.node = ?",
								Long.class, this.prefix, node.name());
						if (!sessions.isEmpty()) {
							try {
								direct.update("KILL CONNECTION ?", sessions.get(random.nextInt(sessions.size())));
								count(this.faults, "KILL CONNECTION");
							}
							catch (org.springframework.dao.DataAccessException ex) {
								// the session ended meanwhile
							}
						}
					}
					case 1 -> {
						node.proxy().blackhole(FaultProxy.Direction.BOTH);
						Thread.sleep(500 + random.nextInt(2_500));
						if (random.nextBoolean()) {
							node.proxy().reset();
						}
						node.proxy().passThrough();
						count(this.faults, "blackhole");
					}
					default -> {
						node.proxy().delay(Duration.ofMillis(100 + random.nextInt(600)));
						Thread.sleep(1_000 + random.nextInt(2_000));
						node.proxy().passThrough();
						count(this.faults, "late replies");
					}
				}
			}
			catch (InterruptedException ex) {
				return;
			}
			catch (RuntimeException ex) {
				if (downAtStart || this.serverDown >= 0) {
					// listing or killing a session of a server that was just killed (the wait for a connection
					// may end after its restart)
					count(this.faults, "KILL CONNECTION failed (server down)");
					continue;
				}
				this.harnessErrors.add("fault injector: " + ex);
			}
		}
	}

	/** What of this run is still held: lock rows (LockTableAdmin), live read/write holders and permits. */
	static List<String> leftovers(javax.sql.DataSource pool, String prefix) {
		JdbcTemplate direct = new JdbcTemplate(pool);
		List<String> leftovers = new ArrayList<>();
		LockTableAdmin admin = new LockTableAdmin(pool, LockNodes.TABLE, STATEMENT_TIMEOUT);
		admin.listHeld(LockTableAdmin.MAX_LIST_LIMIT)
			.locks()
			.stream()
			.filter((row) -> row.resource().startsWith(prefix))
			.forEach((row) -> leftovers.add(row.resource() + " held by " + row.holder() + " (lock table)"));
		byte[] like = (prefix + "%").getBytes(StandardCharsets.UTF_8);
		direct.query("SELECT resource, kind FROM distributed_lock_rw_hold WHERE resource LIKE ?"
				+ " AND expires_at > UTC_TIMESTAMP(6)", (rs) -> {
					leftovers.add(new String(rs.getBytes(1), StandardCharsets.UTF_8) + " " + rs.getString(2)
							+ " holder (distributed_lock_rw_hold)");
				}, (Object) like);
		direct.query("SELECT name FROM distributed_lock_sem_hold WHERE name LIKE ? AND expires_at > UTC_TIMESTAMP(6)",
				(rs) -> {
					leftovers.add(new String(rs.getBytes(1), StandardCharsets.UTF_8) + " permit (distributed_lock_sem_hold)");
				}, (Object) like);
		return leftovers;
	}

	/** The prefix of this run's resources. */
	public String prefix() {
		return this.prefix;
	}

}
