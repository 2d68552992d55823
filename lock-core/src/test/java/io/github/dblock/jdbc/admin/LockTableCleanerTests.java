package io.github.dblock.jdbc.admin;

import io.github.dblock.jdbc.lease.LeaseLockProvider;
import io.github.dblock.jdbc.sql.LockTable;
import io.github.dblock.jdbc.pessimistic.PessimisticLockProvider;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.semaphore.PermitHandle;
import io.github.dblock.semaphore.SemaphoreOptions;
import io.github.dblock.semaphore.SemaphoreTemplate;
import io.github.dblock.test.CountingDataSource;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.nodes.SemaphoreNodes;
import io.github.dblock.test.TestDatabase;
import io.github.dblock.wait.Backoff;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DelegatingDataSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/**
 * The stale-row cleanup job on the real database, on the shared lock table. Every test works on resource names
 * with a prefix of its own and counts only its own rows, since other tests (and their leftovers) share the table.
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class LockTableCleanerTests {

	private static final Duration ONE_DAY = Duration.ofDays(1);

	/**
	 * Ages a row's fencing token with its lease (tokens follow the server clock in µs): a row whose lease ended two days
	 * ago carries a token from then. The cleaner keeps a row whose token the clock has not passed by the retention.
	 */
	private static final String AGE_TOKEN_TWO_DAYS = "fencing_token = fencing_token - 172800000000, ";

	private static final Duration STATEMENT_TIMEOUT = Duration.ofSeconds(5);

	private static HikariDataSource pool;

	private static JdbcTemplate jdbc;

	@BeforeAll
	static void setUp() {
		pool = TestDatabase.get().newDataSource(8);
		LockNodes.migrateOnce(pool);
		jdbc = new JdbcTemplate(pool);
	}

	@AfterAll
	static void tearDown() {
		pool.close();
	}

	@Test
	void removesExactlyTheRowsExpiredForLongerThanTheRetention() {
		String prefix = "clean-only-" + UUID.randomUUID() + "-";
		LockTemplate node = LockNodes.node(LockMode.LEASE, "cleaner-test", pool);
		List<String> aged = names(prefix + "aged-", 5);
		List<String> recent = names(prefix + "recent-", 3);
		String almost = prefix + "almost"; // expired for 23 hours: less than the retention
		String held = prefix + "held";
		for (String name : concat(aged, recent, List.of(almost))) {
			node.acquire(name).close();
		}
		aged.forEach(LockTableCleanerTests::ageTwoDays);
		assertThat(jdbc.update("UPDATE distributed_lock SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 23 HOUR, "
				+ "acquired_at = UTC_TIMESTAMP(6) - INTERVAL 24 HOUR WHERE resource = ?", bytes(almost))).isOne();

		try (LockHandle lock = node.acquire(held)) {
			// a lease acquired long ago but still running: only expires_at counts
			assertThat(jdbc.update("UPDATE distributed_lock SET acquired_at = UTC_TIMESTAMP(6) - INTERVAL 3 DAY "
					+ "WHERE resource = ?", bytes(held))).isOne();
			int deleted = cleaner(pool, ONE_DAY, 2).deleteExpired();

			assertThat(deleted).isGreaterThanOrEqualTo(aged.size());
			assertThat(existing(prefix)).containsExactlyInAnyOrderElementsOf(concat(recent, List.of(almost, held)));
			assertThat(lock.isHeld()).isTrue();
		}
		assertThat(existing(prefix)).containsExactlyInAnyOrderElementsOf(concat(recent, List.of(almost, held)));
	}

	@Test
	void neverWaitsForNorDeletesARowLockedByAPessimisticHolderAndStillDeletesTheOthers() {
		String prefix = "clean-pessimistic-" + UUID.randomUUID() + "-";
		String locked = prefix + "locked";
		String free = prefix + "free";
		LockTemplate lease = LockNodes.node(LockMode.LEASE, "cleaner-lease", pool);
		lease.acquire(locked).close();
		lease.acquire(free).close();
		ageTwoDays(locked);
		ageTwoDays(free);
		LockTemplate pessimistic = LockNodes.node(LockMode.PESSIMISTIC, "cleaner-pessimistic", pool);
		LockTableCleaner cleaner = cleaner(pool, ONE_DAY, 100);

		long token;
		try (LockHandle holder = pessimistic.acquire(locked)) {
			token = holder.fencingToken();
			long start = System.nanoTime();
			int deleted = assertTimeoutPreemptively(Duration.ofSeconds(10), cleaner::deleteExpired);
			long elapsedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

			assertThat(elapsedMillis).as("the cleaner must not wait for the holder's row lock").isLessThan(2_000);
			assertThat(deleted).isGreaterThanOrEqualTo(1);
			assertThat(existing(prefix)).as("the locked row stays, the unlocked one in the same batch goes")
				.containsExactly(locked);
			// the holder's committed row is still the aged one: nothing but the row lock protected it
			assertThat(jdbc.queryForObject("SELECT expires_at < UTC_TIMESTAMP(6) - INTERVAL 1 DAY "
					+ "FROM distributed_lock WHERE resource = ?", Boolean.class, bytes(locked))).isTrue();
		}

		// The holder committed expires_at = its acquisition time: recent, so the row must survive from now on.
		assertThat(jdbc.queryForObject("SELECT expires_at > UTC_TIMESTAMP(6) - INTERVAL 1 HOUR FROM distributed_lock "
				+ "WHERE resource = ?", Boolean.class, bytes(locked))).isTrue();
		cleaner.deleteExpired();
		assertThat(existing(prefix)).containsExactly(locked);
		assertThat(jdbc.queryForObject("SELECT fencing_token FROM distributed_lock WHERE resource = ?", Long.class,
				bytes(locked))).as("the same row, never deleted and re-created").isEqualTo(token);
	}

	@Test
	void aRowTakenBetweenTheCandidateReadAndTheDeleteIsNotDeleted() {
		String prefix = "clean-race-" + UUID.randomUUID() + "-";
		String taken = prefix + "taken";
		String idle = prefix + "idle";
		LockTemplate node = LockNodes.node(LockMode.LEASE, "cleaner-race", pool);
		node.acquire(taken).close();
		node.acquire(idle).close();
		ageTwoDays(taken);
		ageTwoDays(idle);
		List<LockHandle> handles = new ArrayList<>();
		// right after step 1 read both rows as candidates, another node takes one of them (and commits)
		DataSource hooked = afterFirstQuery(pool, "ORDER BY expires_at", () -> handles.add(
				LockNodes.node(LockMode.LEASE, "cleaner-race-other", pool).acquire(taken)));

		cleaner(hooked, ONE_DAY, 100).deleteExpired();

		assertThat(handles).hasSize(1);
		try (LockHandle lock = handles.get(0)) {
			assertThat(existing(prefix)).containsExactly(taken);
			assertThat(lock.isHeld()).isTrue();
		} // releases without LockLostException: the row and its owner are intact
	}

	/**
	 * On a table of its own, so that the candidates are most of the table: the optimizer would then scan the whole
	 * table, locking every row it reads, unless the statements are held to primary-key lookups and to a bounded
	 * number of keys. 1,500 candidates in one batch, a PESSIMISTIC holder on one of them, and a lease acquisition
	 * of another row of the table while the cleaner's first transaction is open.
	 */
	@Test
	void locksNoRowOutsideItsCandidatesEvenWhenTheyAreMostOfTheTable() {
		LockTable table = LockTable.of("lock_cleaner_plan_test");
		jdbc.execute("CREATE TABLE IF NOT EXISTS lock_cleaner_plan_test LIKE distributed_lock");
		try {
			jdbc.update("DELETE FROM lock_cleaner_plan_test");
			List<Object[]> rows = new ArrayList<>();
			for (String name : names("aged-", 1_500)) {
				rows.add(new Object[] { bytes(name) });
			}
			jdbc.batchUpdate("INSERT INTO lock_cleaner_plan_test (resource, fencing_token, acquired_at, expires_at) "
					+ "VALUES (?, 1, UTC_TIMESTAMP(6) - INTERVAL 3 DAY, UTC_TIMESTAMP(6) - INTERVAL 2 DAY)", rows);
			jdbc.update("INSERT INTO lock_cleaner_plan_test (resource, fencing_token, acquired_at, expires_at) "
					+ "VALUES (?, 1, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))", (Object) bytes("fresh"));
			jdbc.execute("ANALYZE TABLE lock_cleaner_plan_test");
			Backoff backoff = new Backoff(Duration.ofMillis(5), Duration.ofMillis(50));
			LockTemplate pessimistic = LockNodes.node(new PessimisticLockProvider(pool, table, LockNodes.dialect(pool),
					new DataSourceTransactionManager(pool), STATEMENT_TIMEOUT, backoff, 4), "plan-pessimistic");
			LockTemplate lease = LockNodes.node(new LeaseLockProvider(pool, table, STATEMENT_TIMEOUT, backoff.initial(),
					backoff.max()), "plan-lease");
			List<Long> leaseMillis = new ArrayList<>();
			DataSource hooked = afterFirstQuery(pool, "SKIP LOCKED", () -> {
				long start = System.nanoTime();
				lease.tryAcquire("fresh").ifPresent((lock) -> {
					leaseMillis.add(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
					lock.close();
				});
			});
			LockTableCleaner cleaner = new LockTableCleaner(hooked, table, ONE_DAY, 10_000, STATEMENT_TIMEOUT);

			try (LockHandle holder = pessimistic.acquire("aged-750")) {
				long start = System.nanoTime();
				int deleted = assertTimeoutPreemptively(Duration.ofSeconds(30), () -> cleaner.deleteExpired());
				long elapsedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

				assertThat(leaseMillis).as("a row outside the candidates stays free while the cleaner runs")
					.singleElement().satisfies((millis) -> assertThat(millis).isLessThan(500L));
				assertThat(elapsedMillis).as("never waits for the holder's row lock").isLessThan(2_000);
				assertThat(deleted).isEqualTo(1_499);
				assertThat(jdbc.query("SELECT resource FROM lock_cleaner_plan_test",
						(rs, row) -> new String(rs.getBytes(1), StandardCharsets.UTF_8)))
					.containsExactlyInAnyOrder("aged-750", "fresh");
			}
		}
		finally {
			jdbc.execute("DROP TABLE IF EXISTS lock_cleaner_plan_test");
		}
	}

	@Test
	void fencingTokensKeepIncreasingAcrossADeletion() {
		String resource = "clean-fencing-" + UUID.randomUUID();
		LockTemplate node = LockNodes.node(LockMode.LEASE, "cleaner-fencing", pool);
		long before;
		try (LockHandle lock = node.acquire(resource)) {
			before = lock.fencingToken();
		}
		ageTwoDays(resource);
		cleaner(pool, ONE_DAY, 100).deleteExpired();
		assertThat(existing(resource)).as("the row was deleted").isEmpty();

		try (LockHandle lock = node.acquire(resource)) {
			assertThat(lock.fencingToken()).isGreaterThan(before);
		}
		assertThat(existing(resource)).containsExactly(resource);
	}

	@Test
	void keepsTheTableBoundedUnderAStreamOfUniqueNamesInBatchesOfTheGivenSize() throws Exception {
		String prefix = "clean-stream-" + UUID.randomUUID() + "-";
		LockTemplate node = LockNodes.node(LockMode.LEASE, "cleaner-stream", pool);
		int threads = 4;
		int perThread = 500;
		ExecutorService executor = Executors.newFixedThreadPool(threads);
		try {
			List<Future<?>> done = new ArrayList<>();
			for (int t = 0; t < threads; t++) {
				int thread = t;
				done.add(executor.submit(() -> {
					for (int i = 0; i < perThread; i++) {
						node.acquire(prefix + thread + "-" + i).close();
					}
				}));
			}
			for (Future<?> each : done) {
				each.get(2, TimeUnit.MINUTES);
			}
		}
		finally {
			executor.shutdownNow();
		}
		int before = count(prefix);
		assertThat(before).isEqualTo(2_000);
		assertThat(jdbc.update("UPDATE distributed_lock SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 2 DAY, "
				+ AGE_TOKEN_TWO_DAYS + "acquired_at = UTC_TIMESTAMP(6) - INTERVAL 2 DAY WHERE resource LIKE ?", like(prefix)))
			.isEqualTo(2_000);

		CountingDataSource counting = new CountingDataSource(pool);
		int deleted = cleaner(counting, ONE_DAY, 300).deleteExpired();

		int after = count(prefix);
		assertThat(after).isZero();
		assertThat(before - after).as("rows of this test deleted").isEqualTo(2_000);
		assertThat(deleted).isGreaterThanOrEqualTo(2_000);
		List<String> deletes = counting.executed().stream().filter((sql) -> sql.startsWith("DELETE")).toList();
		assertThat(deletes).hasSizeGreaterThanOrEqualTo(7)
			.allSatisfy((sql) -> assertThat(sql.chars().filter((c) -> c == '?').count()).isBetween(3L, 302L));
	}

	@Test
	void oneCallRunsAtMostOneHundredBatches() {
		String prefix = "clean-bound-" + UUID.randomUUID() + "-";
		LockTemplate node = LockNodes.node(LockMode.LEASE, "cleaner-bound", pool);
		for (String name : names(prefix, 130)) {
			node.acquire(name).close();
		}
		jdbc.update("UPDATE distributed_lock SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 2 DAY, "
				+ AGE_TOKEN_TWO_DAYS + "acquired_at = UTC_TIMESTAMP(6) - INTERVAL 2 DAY WHERE resource LIKE ?", like(prefix));
		LockTableCleaner cleaner = cleaner(pool, ONE_DAY, 1);

		assertThat(cleaner.deleteExpired()).isEqualTo(LockTableCleaner.MAX_BATCHES_PER_RUN);
		assertThat(count(prefix)).isPositive();
		for (int call = 0; call < 50 && cleaner.deleteExpired() > 0; call++) {
			// the rest, and whatever old rows other tests left in the shared table
		}
		assertThat(count(prefix)).isZero();
	}

	@Test
	void rejectsInvalidArgumentsNamingTheValue() {
		assertThatIllegalArgumentException().isThrownBy(() -> cleaner(pool, Duration.ofMillis(999), 100))
			.withMessageContaining("at least PT1S")
			.withMessageContaining("was PT0.999S")
			.withMessageContaining("1 minute")
			.withMessageContaining("clock");
		assertThatIllegalArgumentException().isThrownBy(() -> cleaner(pool, Duration.ofDays(-1), 100))
			.withMessageContaining("was PT-24H");
		assertThatIllegalArgumentException().isThrownBy(() -> cleaner(pool, null, 100))
			.withMessageContaining("was null");
		assertThatIllegalArgumentException().isThrownBy(() -> cleaner(pool, Duration.ofDays(40_000), 100))
			.withMessageContaining("at most");
		assertThatIllegalArgumentException().isThrownBy(() -> cleaner(pool, ONE_DAY, 0))
			.withMessageContaining("between 1 and 10000, was 0");
		assertThatIllegalArgumentException().isThrownBy(() -> cleaner(pool, ONE_DAY, 10_001))
			.withMessageContaining("between 1 and 10000, was 10001");
		assertThatIllegalArgumentException()
			.isThrownBy(() -> new LockTableCleaner(pool, LockNodes.TABLE, ONE_DAY, 100, Duration.ZERO))
			.withMessageContaining("statement timeout must be positive, was PT0S");
		assertThatIllegalArgumentException()
			.isThrownBy(() -> new LockTableCleaner(null, LockNodes.TABLE, ONE_DAY, 100, STATEMENT_TIMEOUT))
			.withMessageContaining("must not be null");
		// the bounds themselves are accepted
		cleaner(pool, LockTableCleaner.MIN_RETENTION, 1);
		cleaner(pool, LockTableCleaner.MAX_RETENTION, 10_000);
	}

	@Test
	void anEmptyRunCostsOneStatementAndABatchFiveLeavingNoTransactionOpen() throws Exception {
		try (HikariDataSource single = TestDatabase.get().newDataSource(1)) {
			CountingDataSource counting = new CountingDataSource(single);
			// a cutoff a century ago: no row of the shared table qualifies
			assertThat(cleaner(counting, LockTableCleaner.MAX_RETENTION, 100).deleteExpired()).isZero();
			assertThat(counting.executed()).hasSize(1);
			assertThat(counting.executed().get(0))
				.startsWith("SELECT resource FROM `distributed_lock` WHERE expires_at <")
				.endsWith("ORDER BY expires_at LIMIT ?");

			String resource = "clean-budget-" + UUID.randomUUID();
			LockNodes.node(LockMode.LEASE, "cleaner-budget", pool).acquire(resource).close();
			ageTwoDays(resource);
			long connectionId = connectionId(single);
			counting.reset();
			assertThat(cleaner(counting, ONE_DAY, 10_000).deleteExpired()).isGreaterThanOrEqualTo(1);
			assertThat(counting.executed()).extracting(LockTableCleanerTests::firstTwoWords)
				.containsExactly("SELECT resource", "START TRANSACTION", "SELECT resource", "DELETE `distributed_lock`",
						"COMMIT");
			assertThat(counting.executed().get(2)).contains("FORCE INDEX (PRIMARY)").endsWith("FOR UPDATE SKIP LOCKED");
			assertThat(counting.executed().get(3)).contains("FORCE INDEX (PRIMARY)");
			assertThat(counting.warnings()).isEmpty();
			assertThat(existing(resource)).isEmpty();
			assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM information_schema.INNODB_TRX "
					+ "WHERE trx_mysql_thread_id = ?", Integer.class, connectionId))
				.as("the pooled connection went back without an open transaction").isZero();
		}
	}

	@Test
	void poolsWithAutocommitOffCommitEachBatch() {
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(TestDatabase.get().jdbcUrl());
		config.setUsername(TestDatabase.get().username());
		config.setPassword(TestDatabase.get().password());
		config.setAutoCommit(false);
		config.setMaximumPoolSize(2);
		try (HikariDataSource manual = new HikariDataSource(config)) {
			String prefix = "clean-manual-" + UUID.randomUUID() + "-";
			LockTemplate node = LockNodes.node(LockMode.LEASE, "cleaner-manual", pool);
			List<String> aged = names(prefix, 3);
			for (String name : aged) {
				node.acquire(name).close();
			}
			aged.forEach(LockTableCleanerTests::ageTwoDays);
			CountingDataSource counting = new CountingDataSource(manual);

			assertThat(cleaner(counting, ONE_DAY, 2).deleteExpired()).isGreaterThanOrEqualTo(3);

			assertThat(count(prefix)).as("deletions visible to other connections").isZero();
			assertThat(counting.executed()).filteredOn((sql) -> sql.startsWith("DELETE")).isNotEmpty();
			assertThat(counting.executed()).doesNotContain("START TRANSACTION");
			assertThat(counting.executed().get(counting.executed().size() - 1)).isEqualTo("COMMIT");
		}
	}

	/**
	 * A data source that runs the action once, right after the first query whose SQL contains the fragment has
	 * been executed through it.
	 */
	private static DataSource afterFirstQuery(DataSource target, String fragment, Runnable action) {
		AtomicBoolean done = new AtomicBoolean();
		return new DelegatingDataSource(target) {
			@Override
			public Connection getConnection() throws SQLException {
				Connection connection = super.getConnection();
				return (Connection) Proxy.newProxyInstance(getClass().getClassLoader(),
						new Class<?>[] { Connection.class },
						(proxy, method, args) -> {
							Object result = invoke(method, connection, args);
							if (method.getName().equals("prepareStatement") && ((String) args[0]).contains(fragment)) {
								PreparedStatement statement = (PreparedStatement) result;
								return Proxy.newProxyInstance(getClass().getClassLoader(),
										new Class<?>[] { PreparedStatement.class }, (p, m, a) -> {
											Object value = invoke(m, statement, a);
											if (m.getName().equals("executeQuery") && done.compareAndSet(false, true)) {
												action.run();
											}
											return value;
										});
							}
							return result;
						});
			}
		};
	}

	private static Object invoke(Method method, Object target, Object[] args) throws Throwable {
		try {
			return method.invoke(target, args);
		}
		catch (InvocationTargetException ex) {
			throw ex.getTargetException();
		}
	}

	@Test
	void deletesExactlyTheExpiredSemaphorePermitsInBatchesAndKeepsLiveOnes() {
		String name = "clean-permits-" + UUID.randomUUID();
		SemaphoreTemplate semaphores = SemaphoreNodes.node("cleaner-test", pool);
		semaphores.setPermits(name, 10);
		for (int i = 0; i < 7; i++) {
			semaphores.acquire(name, SemaphoreOptions.defaults().withLeaseTime(Duration.ofMinutes(1))); // aged below
		}
		try (PermitHandle live = semaphores.acquire(name)) {
			assertThat(jdbc.update("UPDATE distributed_lock_sem_hold SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND"
					+ " WHERE name = ? AND fencing_token < ?", bytes(name), live.fencingToken())).isEqualTo(7);
			assertThat(cleaner(pool, ONE_DAY, 3).deleteExpiredPermits()).as("no retention for permits")
				.isGreaterThanOrEqualTo(7);
			assertThat(jdbc.queryForList("SELECT fencing_token FROM distributed_lock_sem_hold WHERE name = ?", Long.class,
					bytes(name))).containsExactly(live.fencingToken());
			assertThat(live.isHeld()).isTrue();
			assertThat(semaphores.availablePermits(name)).isEqualTo(9);
		}
		assertThat(semaphores.availablePermits(name)).isEqualTo(10);
	}

	private static LockTableCleaner cleaner(DataSource dataSource, Duration retention, int batchSize) {
		return new LockTableCleaner(dataSource, LockNodes.TABLE, retention, batchSize, STATEMENT_TIMEOUT);
	}

	private static void ageTwoDays(String resource) {
		assertThat(jdbc.update("UPDATE distributed_lock SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 2 DAY, "
				+ AGE_TOKEN_TWO_DAYS + "acquired_at = UTC_TIMESTAMP(6) - INTERVAL 2 DAY - INTERVAL 1 SECOND WHERE resource = ?",
				bytes(resource))).isOne();
	}

	/** Resource names of rows starting with the prefix. */
	private static Set<String> existing(String prefix) {
		return new HashSet<>(jdbc.query("SELECT resource FROM distributed_lock WHERE resource LIKE ?",
				(rs, row) -> new String(rs.getBytes(1), StandardCharsets.UTF_8), like(prefix)));
	}

	private static int count(String prefix) {
		return jdbc.queryForObject("SELECT COUNT(*) FROM distributed_lock WHERE resource LIKE ?", Integer.class,
				like(prefix));
	}

	private static long connectionId(HikariDataSource single) throws Exception {
		try (Connection connection = single.getConnection(); Statement statement = connection.createStatement();
				ResultSet rs = statement.executeQuery("SELECT CONNECTION_ID()")) {
			rs.next();
			return rs.getLong(1);
		}
	}

	private static String firstTwoWords(String sql) {
		String[] words = sql.split(" ", 3);
		return (words.length == 1) ? words[0] : words[0] + " " + words[1];
	}

	private static byte[] like(String prefix) {
		// the prefixes are UUID-based: no '%', '_' or '\' to escape
		return bytes(prefix + "%");
	}

	private static byte[] bytes(String resource) {
		return resource.getBytes(StandardCharsets.UTF_8);
	}

	private static List<String> names(String prefix, int count) {
		List<String> names = new ArrayList<>();
		for (int i = 0; i < count; i++) {
			names.add(prefix + i);
		}
		return names;
	}

	@SafeVarargs
	private static List<String> concat(List<String>... lists) {
		List<String> all = new ArrayList<>();
		for (List<String> list : lists) {
			all.addAll(list);
		}
		return all;
	}

}
