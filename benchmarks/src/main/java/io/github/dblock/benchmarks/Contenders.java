package io.github.dblock.benchmarks;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;

import javax.sql.DataSource;

import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.jdbc.sql.DatabaseServer;
import io.github.dblock.jdbc.lease.JdbcSemaphoreProvider;
import io.github.dblock.jdbc.lease.LeaseLockProvider;
import io.github.dblock.jdbc.sql.LockDialect;
import io.github.dblock.jdbc.sql.LockTable;
import io.github.dblock.jdbc.optimistic.OptimisticLockProvider;
import io.github.dblock.jdbc.pessimistic.PessimisticLockProvider;
import io.github.dblock.semaphore.SemaphoreTemplate;
import io.github.dblock.wait.Backoff;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.provider.jdbctemplate.JdbcTemplateLockProvider;
import org.springframework.integration.jdbc.lock.DefaultLockRepository;
import org.springframework.integration.jdbc.lock.JdbcLockRegistry;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;

/**
 * Builds the contenders of a run on one connection pool, each with its library's defaults except where noted.
 * <ul>
 * <li>Our modes: a {@link LockTemplate} as the auto-configuration builds it (statement timeout 5 s, back-off
 * 10 ms doubling to 200 ms, lease 30 s); {@code pessimistic.max-connections} 64 and {@code optimistic.max-attempts}
 * 1,000 so that 16 threads never hit the per-JVM caps.</li>
 * <li>ShedLock: {@code JdbcTemplateLockProvider} with {@code usingDbTime()}, lockAtMostFor 30 s, lockAtLeastFor 0.
 * ShedLock never waits, so a busy lock is retried after a jittered sleep of 1–3 ms ({@link #SHEDLOCK_RETRY}).</li>
 * <li>Spring Integration: {@code JdbcLockRegistry} over {@code DefaultLockRepository} with its defaults (TTL 10 s,
 * 100 ms between tries of a busy lock); {@code lock()} blocks.</li>
 * <li>Baselines: {@code SELECT 1}; two autocommit writes on a row of a plain table (a conditional take and an
 * owner-checked give-back); and the exact statements of PESSIMISTIC (fencing = durable) in a plain JDBC loop (start
 * transaction, the locking read by primary key, the token write, commit), and the bare row lock that writes nothing (start transaction,
 * {@code SELECT … FOR UPDATE} by primary key, commit).</li>
 * </ul>
 */
public final class Contenders {

	/** How the harness makes ShedLock wait: a retry after a sleep drawn uniformly from this range, in ms. */
	public static final String SHEDLOCK_RETRY = "retry after a uniformly jittered 1–3 ms sleep";

	static final Duration WAIT = Duration.ofMinutes(1);

	static final Duration LEASE = Duration.ofSeconds(30);

	private Contenders() {
	}

	/** The contender of the given kind on the data source and our lock table. */
	public static Contender create(Contender.Kind kind, DataSource dataSource, LockTable table, String node) {
		return switch (kind) {
			case LEASE -> ours(kind, LockMode.LEASE, dataSource, table, node);
			case PESSIMISTIC -> ours(kind, LockMode.PESSIMISTIC, dataSource, table, node);
			case OPTIMISTIC -> ours(kind, LockMode.OPTIMISTIC, dataSource, table, node);
			case SHEDLOCK -> shedLock(dataSource, node);
			case JDBC_LOCK_REGISTRY -> jdbcLockRegistry(dataSource);
			case SELECT_1 -> new Select1(dataSource);
			case TWO_WRITES -> new TwoWrites(dataSource);
			case PLAIN_PESSIMISTIC -> new PlainPessimistic(dataSource, table);
			case SEMAPHORE -> semaphore(dataSource, table, node);
			case PESSIMISTIC_EXECUTE -> ours(kind, LockMode.PESSIMISTIC, dataSource, table, node);
			case PESSIMISTIC_SERVER_CLOCK -> ours(kind, LockMode.PESSIMISTIC, dataSource, table, node);
			case BARE_ROW_LOCK -> new BareRowLock(dataSource, table);
			case RAW_LEASE_UPSERT -> new RawLeaseUpsert(dataSource);
			case MINIMAL_FOR_UPDATE -> new MinimalForUpdate(dataSource, table);
			case GET_LOCK -> new GetLock(dataSource);
			case REDISSON -> redisson(node);
		};
	}

	/**
	 * The Redis server of the Redisson contender, {@code -Dbench.redis-url} (e.g. {@code redis://127.0.0.1:6379}),
	 * or null where none is given (Redisson is then not measured).
	 */
	public static @org.jspecify.annotations.Nullable String redisUrl() {
		String url = System.getProperty("bench.redis-url", "");
		return url.isBlank() ? null : url;
	}

	/** Connections of the Redisson client's pool: as many as each contender's JDBC pool. */
	static final int REDIS_POOL = 20;

	/**
	 * Redisson's {@code RLock} on a client of its own (single server {@link #redisUrl()}, a pool of
	 * {@link #REDIS_POOL} connections): {@code tryLock(wait 1 min, lease 30 s)}, the section, {@code unlock()}; the
	 * client is shut down with the contender. Keys are {@code bench-lock:} + the resource.
	 */
	private static Contender redisson(String node) {
		String url = redisUrl();
		if (url == null) {
			throw new IllegalStateException("Redisson needs -Dbench.redis-url=redis://host:port");
		}
		org.redisson.config.Config config = new org.redisson.config.Config();
		config.useSingleServer()
			.setAddress(url)
			.setConnectionPoolSize(REDIS_POOL)
			.setConnectionMinimumIdleSize(REDIS_POOL)
			.setClientName("bench-" + node);
		org.redisson.api.RedissonClient client = org.redisson.Redisson.create(config);
		return new Contender() {

			@Override
			public Contender.Kind kind() {
				return Contender.Kind.REDISSON;
			}

			@Override
			public void cycle(String resource, Runnable section) throws InterruptedException {
				org.redisson.api.RLock lock = client.getLock("bench-lock:" + resource);
				runTaken("Redisson", resource, lock, lock.tryLock(WAIT.toMillis(), LEASE.toMillis(), TimeUnit.MILLISECONDS),
						section);
			}

			@Override
			public void close() {
				client.shutdown();
			}

		};
	}

	/** A lock template with providers for all three modes and the given default mode. */
	public static LockTemplate template(LockMode mode, DataSource dataSource, LockTable table, String node) {
		return template(mode, PessimisticLockProvider.Fencing.DURABLE, dataSource, table, node);
	}

	/** {@link #template(LockMode, DataSource, LockTable, String)} with the given PESSIMISTIC fencing setting. */
	public static LockTemplate template(LockMode mode, PessimisticLockProvider.Fencing fencing, DataSource dataSource,
			LockTable table, String node) {
		LockDialect dialect = LockDialect.of(DatabaseServer.detect(dataSource));
		Duration statementTimeout = Duration.ofSeconds(5);
		Backoff backoff = new Backoff(Duration.ofMillis(10), Duration.ofMillis(200));
		DataSourceTransactionManager transactions = new DataSourceTransactionManager(dataSource);
		PessimisticLockProvider pessimistic = new PessimisticLockProvider(dataSource, table, dialect, transactions,
				statementTimeout, backoff, 64);
		pessimistic.setFencing(fencing);
		return new LockTemplate(List.of(
				new LeaseLockProvider(dataSource, table, dialect, statementTimeout, backoff.initial(), backoff.max()),
				pessimistic,
				new OptimisticLockProvider(dataSource, table, transactions, statementTimeout, backoff, 1000)), mode,
				WAIT, LEASE, node);
	}

	/**
	 * A {@link SemaphoreTemplate} built as the auto-configuration builds it (same statement timeout, back-off and
	 * renewal scheduler as {@link #template}); the small table's resources {@code r-i} are configured pools of one
	 * permit, created in the database at their first use.
	 */
	public static SemaphoreContender semaphore(DataSource dataSource, LockTable table, String node) {
		Backoff backoff = new Backoff(Duration.ofMillis(10), Duration.ofMillis(200));
		java.util.Map<String, Integer> pools = new java.util.HashMap<>();
		for (String name : Contention.resources(BenchSchema.SMALL_ROWS)) {
			pools.put(name, 1);
		}
		LeaseLockProvider renewals = new LeaseLockProvider(dataSource, table, Duration.ofSeconds(5), backoff.initial(),
				backoff.max());
		return new SemaphoreContender(new SemaphoreTemplate(new JdbcSemaphoreProvider(dataSource, table,
				Duration.ofSeconds(5), backoff, renewals, pools), WAIT, LEASE, node));
	}

	/**
	 * Takes a permit of the semaphore named by the resource, runs the section and gives the permit back, counting how
	 * many sections run at once (which must never exceed the permit count).
	 */
	public static final class SemaphoreContender implements Contender {

		private final SemaphoreTemplate semaphores;

		private final java.util.concurrent.atomic.AtomicInteger inside = new java.util.concurrent.atomic.AtomicInteger();

		private final java.util.concurrent.atomic.AtomicInteger mostInside = new java.util.concurrent.atomic.AtomicInteger();

		SemaphoreContender(SemaphoreTemplate semaphores) {
			this.semaphores = semaphores;
		}

		/** The template, for setting permit counts. */
		public SemaphoreTemplate semaphores() {
			return this.semaphores;
		}

		/** The most sections that ran at once in this JVM so far. */
		public int mostInside() {
			return this.mostInside.get();
		}

		@Override
		public Contender.Kind kind() {
			return Contender.Kind.SEMAPHORE;
		}

		@Override
		public void cycle(String resource, Runnable section) {
			this.semaphores.executeWithoutResult(resource, (permit) -> {
				this.mostInside.accumulateAndGet(this.inside.incrementAndGet(), Math::max);
				try {
					section.run();
				}
				finally {
					this.inside.decrementAndGet();
				}
			});
		}

	}

	/**
	 * One of our modes. LEASE and PESSIMISTIC take the lock with {@code acquire} and give it back with
	 * {@code close} (the operation the scenarios name); OPTIMISTIC has no lock to hold, and
	 * {@link Contender.Kind#PESSIMISTIC_EXECUTE} measures the other way to use PESSIMISTIC, so both run through
	 * {@code execute}, which for PESSIMISTIC runs in a transaction of the data source's transaction manager.
	 */
	private static Contender ours(Contender.Kind kind, LockMode mode, DataSource dataSource, LockTable table,
			String node) {
		LockTemplate template = template(mode, (kind == Contender.Kind.PESSIMISTIC_SERVER_CLOCK)
				? PessimisticLockProvider.Fencing.SERVER_CLOCK : PessimisticLockProvider.Fencing.DURABLE, dataSource, table,
				node);
		LockOptions options = LockOptions.defaults().withWaitTime(WAIT);
		boolean hold = kind == Contender.Kind.LEASE || kind == Contender.Kind.PESSIMISTIC
				|| kind == Contender.Kind.PESSIMISTIC_SERVER_CLOCK;
		return new Contender() {

			@Override
			public Contender.Kind kind() {
				return kind;
			}

			@Override
			@SuppressWarnings("try") // the lock is held for the section, not used in it
			public void cycle(String resource, Runnable section) {
				if (hold) {
					try (LockHandle lock = template.acquire(resource, options)) {
						section.run();
					}
					return;
				}
				template.execute(resource, options, (lock) -> {
					section.run();
					return null;
				});
			}

		};
	}

	private static Contender shedLock(DataSource dataSource, String node) {
		JdbcTemplateLockProvider provider = new JdbcTemplateLockProvider(JdbcTemplateLockProvider.Configuration.builder()
			.withJdbcTemplate(new JdbcTemplate(dataSource))
			.withTableName("shedlock")
			.withLockedByValue(node)
			.usingDbTime()
			.build());
		return new Contender() {

			@Override
			public Contender.Kind kind() {
				return Contender.Kind.SHEDLOCK;
			}

			@Override
			public void cycle(String resource, Runnable section) throws InterruptedException {
				long deadline = System.nanoTime() + WAIT.toNanos();
				while (true) {
					Optional<SimpleLock> lock = provider
						.lock(new LockConfiguration(java.time.Instant.now(), resource, LEASE, Duration.ZERO));
					if (lock.isPresent()) {
						try {
							section.run();
						}
						finally {
							lock.get().unlock();
						}
						return;
					}
					if (System.nanoTime() > deadline) {
						throw new IllegalStateException("ShedLock: '" + resource + "' stayed busy for " + WAIT);
					}
					TimeUnit.MICROSECONDS.sleep(ThreadLocalRandom.current().nextLong(1_000, 3_001));
				}
			}

		};
	}

	private static Contender jdbcLockRegistry(DataSource dataSource) {
		DefaultLockRepository repository = new DefaultLockRepository(dataSource);
		repository.setTransactionManager(new DataSourceTransactionManager(dataSource));
		repository.afterPropertiesSet();
		repository.afterSingletonsInstantiated();
		repository.start();
		JdbcLockRegistry registry = new JdbcLockRegistry(repository);
		return new Contender() {

			@Override
			public Contender.Kind kind() {
				return Contender.Kind.JDBC_LOCK_REGISTRY;
			}

			@Override
			public void cycle(String resource, Runnable section) throws InterruptedException {
				Lock lock = registry.obtain(resource);
				runTaken("JdbcLockRegistry", resource, lock, lock.tryLock(WAIT.toMillis(), TimeUnit.MILLISECONDS), section);
			}

			@Override
			public void close() {
				repository.stop();
				repository.close();
			}

		};
	}

	/** One {@code SELECT 1} round trip around the section: the floor of any lock that asks the server. */
	private record Select1(DataSource dataSource) implements Contender {

		@Override
		public Contender.Kind kind() {
			return Contender.Kind.SELECT_1;
		}

		@Override
		public void cycle(String resource, Runnable section) throws Exception {
			try (Connection c = this.dataSource.getConnection(); Statement s = c.createStatement();
					ResultSet rs = s.executeQuery("SELECT 1")) {
				rs.next();
			}
			section.run();
		}

	}

	/**
	 * The least a durable lease can cost: one conditional autocommit write takes the row, one owner-checked
	 * autocommit write gives it back; each commit pays the server's log flush.
	 */
	private record TwoWrites(DataSource dataSource) implements Contender {

		@Override
		public Contender.Kind kind() {
			return Contender.Kind.TWO_WRITES;
		}

		@Override
		public void cycle(String resource, Runnable section) throws Exception {
			String owner = UUID.randomUUID().toString();
			try (Connection c = this.dataSource.getConnection()) {
				if (update(c, "UPDATE bench_baseline SET owner = ?, expires_at = UTC_TIMESTAMP(6) + INTERVAL 30 SECOND"
						+ " WHERE id = ? AND expires_at <= UTC_TIMESTAMP(6)", owner, resource) != 1) {
					throw new IllegalStateException("baseline row '" + resource + "' missing or taken");
				}
			}
			section.run();
			try (Connection c = this.dataSource.getConnection()) {
				if (update(c, "UPDATE bench_baseline SET owner = NULL, expires_at = UTC_TIMESTAMP(6)"
						+ " WHERE id = ? AND owner = ?", resource, owner) != 1) {
					throw new IllegalStateException("baseline row '" + resource + "' lost");
				}
			}
		}

	}

	/**
	 * PESSIMISTIC's statements with fencing = durable and nothing else: start a transaction, take the row with the
	 * waiting locking read by primary key (bounded lock wait), write the owner and the token (the server clock, read
	 * after the grant, through {@code LAST_INSERT_ID}), run the section, commit. Until 2026-11-26 this loop ran only
	 * the locking {@code UPDATE}, and under contention a second miss of its stale-clock check made it throw, so its
	 * contended rows read 0.
	 */
	private static final class PlainPessimistic implements Contender {

		private final DataSource dataSource;

		private final String readSql;

		private final String lockSql;

		private final String insertSql;

		PlainPessimistic(DataSource dataSource, LockTable table) {
			this.dataSource = dataSource;
			boolean mariaDb = DatabaseServer.detect(dataSource).product() == DatabaseServer.Product.MARIADB;
			String micros = "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))";
			String read = "SELECT fencing_token, expires_at <= UTC_TIMESTAMP(6), " + micros + " FROM " + table.quoted()
					+ " WHERE resource = ? FOR UPDATE";
			this.readSql = waitingUpTo60s(mariaDb, read);
			this.lockSql = "UPDATE " + table.quoted() + " SET owner_token = ?, holder = ?, fencing_token = "
					+ "LAST_INSERT_ID(GREATEST(fencing_token, " + micros + ")), acquired_at = UTC_TIMESTAMP(6),"
					+ " expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND WHERE resource = ? AND expires_at <= "
					+ "UTC_TIMESTAMP(6)";
			this.insertSql = insertFreeRow(table);
		}

		@Override
		public Contender.Kind kind() {
			return Contender.Kind.PLAIN_PESSIMISTIC;
		}

		@Override
		public void cycle(String resource, Runnable section) throws Exception {
			byte[] key = resource.getBytes(java.nio.charset.StandardCharsets.UTF_8);
			try (Connection c = this.dataSource.getConnection(); Statement s = c.createStatement()) {
				lockRow(c, s, this.readSql, this.insertSql, key);
				try (PreparedStatement ps = c.prepareStatement(this.lockSql, Statement.RETURN_GENERATED_KEYS)) {
					ps.setString(1, UUID.randomUUID().toString());
					ps.setString(2, "plain-jdbc");
					ps.setLong(3, 0);
					ps.setBytes(4, key);
					if (ps.executeUpdate() != 1) {
						throw new IllegalStateException("lock row '" + resource + "' leased");
					}
					try (ResultSet keys = ps.getGeneratedKeys()) {
						keys.next();
						keys.getLong(1);
					}
				}
				section.run();
				s.execute("COMMIT");
			}
		}

	}

	/**
	 * The floor of any row-lock mutex: start a transaction, {@code SELECT … FOR UPDATE} the resource's row by primary
	 * key (bounded lock wait), run the section, commit. Nothing is written, so the commit flushes nothing; no fencing
	 * token, no lease check. A missing row is inserted (free, autocommit) and the cycle starts again.
	 */
	private static final class BareRowLock implements Contender {

		private final DataSource dataSource;

		private final String lockSql;

		private final String insertSql;

		BareRowLock(DataSource dataSource, LockTable table) {
			this.dataSource = dataSource;
			boolean mariaDb = DatabaseServer.detect(dataSource).product() == DatabaseServer.Product.MARIADB;
			String select = "SELECT fencing_token FROM " + table.quoted() + " WHERE resource = ? FOR UPDATE";
			this.lockSql = waitingUpTo60s(mariaDb, select);
			this.insertSql = insertFreeRow(table);
		}

		@Override
		public Contender.Kind kind() {
			return Contender.Kind.BARE_ROW_LOCK;
		}

		@Override
		public void cycle(String resource, Runnable section) throws Exception {
			byte[] key = resource.getBytes(java.nio.charset.StandardCharsets.UTF_8);
			try (Connection c = this.dataSource.getConnection(); Statement s = c.createStatement()) {
				lockRow(c, s, this.lockSql, this.insertSql, key);
				section.run();
				s.execute("COMMIT");
			}
		}

	}

	/**
	 * A locking read with MariaDB's lock wait bounded to 60 s by {@code SET STATEMENT} (MySQL: the session's
	 * {@code innodb_lock_wait_timeout}).
	 */
	private static String waitingUpTo60s(boolean mariaDb, String lockingRead) {
		return mariaDb ? "SET STATEMENT innodb_lock_wait_timeout=60 FOR " + lockingRead : lockingRead;
	}

	/** Inserts a free lock row for the resource bound to the only parameter, unless it exists. */
	private static String insertFreeRow(LockTable table) {
		return "INSERT IGNORE INTO " + table.quoted() + " (resource, owner_token, holder, fencing_token, acquired_at,"
				+ " expires_at) VALUES (?, NULL, NULL, 0, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))";
	}

	/**
	 * Starts a transaction on {@code c} and takes the row of {@code key} with {@code lockingRead} (the key its only
	 * parameter), waiting for the row lock as the statement allows. A missing row is inserted free
	 * ({@code insertFreeRow}, autocommit, after a rollback) and the transaction starts again; a row still missing
	 * then is an {@link IllegalStateException}. On return the transaction is open and holds the row lock.
	 */
	private static void lockRow(Connection c, Statement s, String lockingRead, String insertFreeRow, byte[] key)
			throws java.sql.SQLException {
		for (int attempt = 0;; attempt++) {
			s.execute("START TRANSACTION");
			boolean found;
			try (PreparedStatement ps = c.prepareStatement(lockingRead)) {
				ps.setBytes(1, key);
				ps.execute(); // Connector/J refuses executeQuery() for text starting with SET
				try (ResultSet rs = ps.getResultSet()) {
					found = rs.next();
				}
			}
			if (found) {
				return;
			}
			s.execute("ROLLBACK");
			if (attempt > 0) {
				throw new IllegalStateException("lock row '" + new String(key, java.nio.charset.StandardCharsets.UTF_8)
						+ "' could not be created");
			}
			try (PreparedStatement insert = c.prepareStatement(insertFreeRow)) {
				insert.setBytes(1, key);
				insert.executeUpdate();
			}
		}
	}

	/**
	 * The lease loop a user would write: one autocommit {@code INSERT … ON DUPLICATE KEY UPDATE} that takes the row
	 * of {@code bench_raw_lease} when it is missing or its lease has run out, and one owner-checked autocommit
	 * {@code DELETE} that gives it back; a busy row is tried again after a jittered sleep of 0.1–1 ms. The upsert's
	 * affected-row count says whether it took the row (1 inserted, 2 updated, 0 unchanged), which needs the driver's
	 * {@code useAffectedRows=true}: {@link Contenders#pooled} sets it on this contender's pool only.
	 */
	private record RawLeaseUpsert(DataSource dataSource) implements Contender {

		private static final String TAKE = "INSERT INTO bench_raw_lease (name, owner, expires_at)"
				+ " VALUES (?, ?, UTC_TIMESTAMP(6) + INTERVAL 30 SECOND) ON DUPLICATE KEY UPDATE"
				+ " owner = IF(expires_at <= UTC_TIMESTAMP(6), VALUES(owner), owner),"
				+ " expires_at = IF(expires_at <= UTC_TIMESTAMP(6), VALUES(expires_at), expires_at)";

		private static final String GIVE_BACK = "DELETE FROM bench_raw_lease WHERE name = ? AND owner = ?";

		@Override
		public Contender.Kind kind() {
			return Contender.Kind.RAW_LEASE_UPSERT;
		}

		@Override
		public void cycle(String resource, Runnable section) throws Exception {
			String owner = UUID.randomUUID().toString();
			long deadline = System.nanoTime() + WAIT.toNanos();
			while (true) {
				int taken;
				try (Connection c = this.dataSource.getConnection()) {
					taken = update(c, TAKE, resource, owner);
				}
				if (taken == 1 || taken == 2) {
					break;
				}
				if (System.nanoTime() > deadline) {
					throw new IllegalStateException("raw lease '" + resource + "' stayed busy for " + WAIT);
				}
				TimeUnit.MICROSECONDS.sleep(ThreadLocalRandom.current().nextLong(100, 1_001));
			}
			section.run();
			try (Connection c = this.dataSource.getConnection()) {
				if (update(c, GIVE_BACK, resource, owner) != 1) {
					throw new IllegalStateException("raw lease '" + resource + "' lost");
				}
			}
		}

	}

	/**
	 * The row lock loop a user would write: {@code START TRANSACTION}, {@code SELECT … FOR UPDATE} of the resource's
	 * row by primary key (the server's own lock wait timeout), the section, {@code COMMIT}; three round trips, nothing
	 * written. A missing row (a name outside the pre-filled table) is inserted free first, once.
	 */
	private static final class MinimalForUpdate implements Contender {

		private final DataSource dataSource;

		private final String lockSql;

		private final String insertSql;

		MinimalForUpdate(DataSource dataSource, LockTable table) {
			this.dataSource = dataSource;
			this.lockSql = "SELECT fencing_token FROM " + table.quoted() + " WHERE resource = ? FOR UPDATE";
			this.insertSql = insertFreeRow(table);
		}

		@Override
		public Contender.Kind kind() {
			return Contender.Kind.MINIMAL_FOR_UPDATE;
		}

		@Override
		public void cycle(String resource, Runnable section) throws Exception {
			try (Connection c = this.dataSource.getConnection(); Statement s = c.createStatement()) {
				for (int attempt = 0;; attempt++) {
					s.execute("START TRANSACTION");
					boolean found;
					try (PreparedStatement ps = c.prepareStatement(this.lockSql)) {
						ps.setString(1, resource);
						try (ResultSet rs = ps.executeQuery()) {
							found = rs.next();
						}
					}
					if (found) {
						break;
					}
					// a resource not in the pre-filled table (the hot scenarios' names): insert it free, once
					s.execute("ROLLBACK");
					if (attempt > 0) {
						throw new IllegalStateException("lock row '" + resource + "' could not be created");
					}
					try (PreparedStatement insert = c.prepareStatement(this.insertSql)) {
						insert.setString(1, resource);
						insert.executeUpdate();
					}
				}
				section.run();
				s.execute("COMMIT");
			}
		}

	}

	/**
	 * The server's named lock: {@code SELECT GET_LOCK(?, 60)} and {@code SELECT RELEASE_LOCK(?)} on one connection
	 * kept for the section (the lock belongs to the session); two round trips, no write.
	 */
	private record GetLock(DataSource dataSource) implements Contender {

		@Override
		public Contender.Kind kind() {
			return Contender.Kind.GET_LOCK;
		}

		@Override
		public void cycle(String resource, Runnable section) throws Exception {
			try (Connection c = this.dataSource.getConnection()) {
				try (PreparedStatement ps = c.prepareStatement("SELECT GET_LOCK(?, 60)")) {
					ps.setString(1, resource);
					try (ResultSet rs = ps.executeQuery()) {
						if (!rs.next() || rs.getInt(1) != 1) {
							throw new IllegalStateException("GET_LOCK('" + resource + "') not granted within 60 s");
						}
					}
				}
				try {
					section.run();
				}
				finally {
					try (PreparedStatement ps = c.prepareStatement("SELECT RELEASE_LOCK(?)")) {
						ps.setString(1, resource);
						try (ResultSet rs = ps.executeQuery()) {
							if (!rs.next() || rs.getInt(1) != 1) {
								throw new IllegalStateException("RELEASE_LOCK('" + resource + "') found no lock of ours");
							}
						}
					}
				}
			}
		}

	}

	/**
	 * The contender of the given kind on a pool of its own of {@code size} connections (driver settings of
	 * {@link BenchDatabase#newPool}; the raw lease upsert's pool also counts affected rather than found rows), closed
	 * with the contender.
	 */
	public static Contender pooled(Contender.Kind kind, BenchDatabase db, int size, LockTable table, String node) {
		if (kind == Contender.Kind.REDISSON) {
			return redisson(node); // talks to Redis only: no JDBC pool
		}
		com.zaxxer.hikari.HikariDataSource pool = db.newPool(size, "bench-" + kind.name().toLowerCase(),
				(kind == Contender.Kind.RAW_LEASE_UPSERT) ? java.util.Map.of("useAffectedRows", "true")
						: java.util.Map.of());
		Contender contender;
		try {
			contender = create(kind, pool, table, node);
		}
		catch (RuntimeException ex) {
			pool.close();
			throw ex;
		}
		return new Contender() {

			@Override
			public Contender.Kind kind() {
				return contender.kind();
			}

			@Override
			public void cycle(String resource, Runnable section) throws Exception {
				contender.cycle(resource, section);
			}

			@Override
			public void close() {
				try {
					contender.close();
				}
				finally {
					pool.close();
				}
			}

		};
	}

	private static int update(Connection c, String sql, Object... args) throws java.sql.SQLException {
		try (PreparedStatement ps = c.prepareStatement(sql)) {
			for (int i = 0; i < args.length; i++) {
				ps.setObject(i + 1, args[i]);
			}
			return ps.executeUpdate();
		}
	}


	/**
	 * Runs the section under a {@link Lock} its contender's {@code tryLock} just asked for, and unlocks it.
	 * @throws IllegalStateException if {@code taken} is false (the lock stayed busy for {@link #WAIT})
	 */
	private static void runTaken(String contender, String resource, Lock lock, boolean taken, Runnable section) {
		if (!taken) {
			throw new IllegalStateException(contender + ": '" + resource + "' stayed busy for " + WAIT);
		}
		try {
			section.run();
		}
		finally {
			lock.unlock();
		}
	}

}
