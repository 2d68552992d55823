package io.github.dblock;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.test.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Several nodes (each a {@link LockTemplate} on a pool of its own), two threads each, increment a counter under a
 * LEASE lock with an explicit lease, in the shape of {@code @DistributedLock} on a {@code @Transactional} method (the
 * lock taken outside the transaction); the work pauses at random, sometimes past its lease. Each committed
 * transaction logs its holder's fencing token and the value it wrote. A commit made by a holder after its lease had
 * passed to another owner shows as a value that does not follow the lock's order: sorted by fencing token, the
 * committed values must increase strictly. With commit-time validation there must be none.
 */
class CommitValidationContentionTests {

	private static final Duration LEASE = Duration.ofMillis(80);

	private static final int NODES = 3;

	private static final int THREADS_PER_NODE = 2;

	private static final int UNITS_PER_THREAD = 12;

	private final List<HikariDataSource> pools = new ArrayList<>();

	@BeforeAll
	static void tables() {
		TestDatabase.get().execute(
				"CREATE TABLE IF NOT EXISTS commit_check_counter (name VARCHAR(100) PRIMARY KEY, value INT NOT NULL)",
				"CREATE TABLE IF NOT EXISTS commit_check_log (id BIGINT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(100)"
						+ " NOT NULL, fencing_token BIGINT NOT NULL, value INT NOT NULL)");
	}

	@AfterEach
	void close() {
		this.pools.forEach(HikariDataSource::close);
	}

	@Test
	void noCommitAfterTheLeasePassedToAnotherOwnerWithValidationAndSomeWithout() throws Exception {
		Outcome on = run(true);
		Outcome off = run(false);
		String report = "commit-time validation under contention (" + NODES + " nodes x " + THREADS_PER_NODE
				+ " threads x " + UNITS_PER_THREAD + " units, lease " + LEASE.toMillis() + " ms, 30% of units pause 90-150 ms):"
				+ "\n  on:  " + on + "\n  off: " + off;
		System.out.println(report);
		Measurements.record(report);
		assertThat(on.outOfOrder).isZero();
		assertThat(on.finalValue).isEqualTo(on.committed);
		assertThat(on.committed + on.rolledBack + on.notAcquired).isEqualTo(NODES * THREADS_PER_NODE * UNITS_PER_THREAD);
		assertThat(on.rolledBack).as("some holders stalled past their lease and were stopped at commit").isPositive();
	}

	private Outcome run(boolean validate) throws Exception {
		String name = "contention-" + UUID.randomUUID();
		HikariDataSource admin = pool(2);
		LockNodes.migrateOnce(admin);
		JdbcTemplate adminJdbc = new JdbcTemplate(admin);
		adminJdbc.update("INSERT INTO commit_check_counter (name, value) VALUES (?, 0)", name);
		AtomicInteger rolledBack = new AtomicInteger();
		AtomicInteger notAcquired = new AtomicInteger();
		ExecutorService threads = Executors.newFixedThreadPool(NODES * THREADS_PER_NODE);
		List<Future<?>> futures = new ArrayList<>();
		for (int n = 0; n < NODES; n++) {
			HikariDataSource pool = pool(THREADS_PER_NODE + 3);
			LockTemplate node = LockNodes.node(LockMode.LEASE, "node-" + n, pool);
			node.setValidateAtCommit(validate);
			DataSourceTransactionManager manager = new DataSourceTransactionManager(pool);
			manager.addListener(new CommitValidation());
			TransactionTemplate tx = new TransactionTemplate(manager);
			JdbcTemplate jdbc = new JdbcTemplate(pool);
			LockOptions options = LockOptions.defaults().withLeaseTime(LEASE).withWaitTime(Duration.ofSeconds(20));
			for (int t = 0; t < THREADS_PER_NODE; t++) {
				futures.add(threads.submit(() -> {
					for (int u = 0; u < UNITS_PER_THREAD; u++) {
						try {
							node.executeWithoutResult(name, options, (lock) -> tx.executeWithoutResult((status) -> {
								int value = jdbc.queryForObject("SELECT value FROM commit_check_counter WHERE name = ?",
										Integer.class, name);
								pause();
								jdbc.update("UPDATE commit_check_counter SET value = ? WHERE name = ?", value + 1, name);
								jdbc.update("INSERT INTO commit_check_log (name, fencing_token, value) VALUES (?, ?, ?)",
										name, lock.fencingToken(), value + 1);
							}));
						}
						catch (LockLostException ex) {
							// the commit was refused by the validation, or else only the release found the lease gone
							// after the transaction had committed (counted from the log)
							if (String.valueOf(ex.getMessage()).contains("about to commit")) {
								rolledBack.incrementAndGet();
							}
						}
						catch (LockNotAcquiredException ex) {
							notAcquired.incrementAndGet();
						}
					}
					return null;
				}));
			}
		}
		for (Future<?> future : futures) {
			future.get(5, TimeUnit.MINUTES);
		}
		threads.shutdown();
		List<Map<String, Object>> log = adminJdbc.queryForList(
				"SELECT fencing_token, value FROM commit_check_log WHERE name = ? ORDER BY fencing_token, id", name);
		int outOfOrder = 0;
		int max = 0;
		for (Map<String, Object> row : log) {
			int value = ((Number) row.get("value")).intValue();
			if (value <= max) {
				outOfOrder++;
			}
			max = Math.max(max, value);
		}
		int finalValue = adminJdbc.queryForObject("SELECT value FROM commit_check_counter WHERE name = ?", Integer.class,
				name);
		return new Outcome(log.size(), outOfOrder, finalValue, rolledBack.get(), notAcquired.get());
	}

	private HikariDataSource pool(int size) {
		HikariDataSource pool = TestDatabase.get().newDataSource(size);
		this.pools.add(pool);
		return pool;
	}

	/** 70% of units pause up to 10 ms, 30% pause 90 to 150 ms: past the 80 ms lease. */
	private static void pause() {
		ThreadLocalRandom random = ThreadLocalRandom.current();
		long millis = (random.nextInt(10) < 7) ? random.nextInt(10) : 90 + random.nextInt(60);
		try {
			Thread.sleep(millis);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}

	/**
	 * @param committed transactions committed
	 * @param outOfOrder committed transactions whose value does not follow the lock's order (a commit after the lease
	 * had passed to another owner, or one that lost its update to such a commit)
	 * @param finalValue the counter's final value (equal to {@code committed} when no update was lost)
	 * @param rolledBack transactions refused at commit by the validation
	 * @param notAcquired units that did not get the lock within the wait time
	 */
	record Outcome(int committed, int outOfOrder, int finalValue, int rolledBack, int notAcquired) {

		@Override
		public String toString() {
			return "committed " + this.committed + ", committed out of lock order " + this.outOfOrder
					+ ", lost updates " + (this.committed - this.finalValue) + ", rolled back at commit " + this.rolledBack
					+ ", not acquired " + this.notAcquired;
		}

	}

	/** Appends measurements to {@code target/commit-validation-measurements.txt}. */
	static final class Measurements {

		static synchronized void record(String text) {
			try {
				java.nio.file.Files.writeString(java.nio.file.Path.of("target", "commit-validation-measurements.txt"),
						text + "\n", java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
			}
			catch (java.io.IOException ex) {
				System.out.println("Could not record measurements: " + ex);
			}
		}

	}

}
