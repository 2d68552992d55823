package io.github.dblock;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import io.github.dblock.test.Pauses;
import io.github.dblock.test.TestDatabase;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The workload of the commit-validation contention tests, in threads ({@link CommitValidationContentionTests}) or
 * in worker JVMs ({@code CrossProcessCommitValidationTests}): units of work increment a counter
 * ({@code commit_check_counter}) under a LEASE lock taken outside the transaction, as {@code @DistributedLock} on a
 * {@code @Transactional} method, and log the holder's fencing token with the value written
 * ({@code commit_check_log}). A commit made after the lease passed to another owner shows in the log as a value that
 * does not follow the lock's order. A unit counts as rolled back when the commit check refused its commit, or when
 * MariaDB's snapshot isolation (where a session has it on) rolled it back first.
 */
public final class CommitCheckCounter {

	private CommitCheckCounter() {
	}

	/** Creates the counter and log tables unless they exist. */
	public static void createTables() {
		TestDatabase.get().execute(
				"CREATE TABLE IF NOT EXISTS commit_check_counter (name VARCHAR(100) PRIMARY KEY, value INT NOT NULL)",
				"CREATE TABLE IF NOT EXISTS commit_check_log (id BIGINT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(100)"
						+ " NOT NULL, fencing_token BIGINT NOT NULL, value INT NOT NULL)");
	}

	/** Adds a counter at zero, named {@code prefix} and a random UUID. @return its name (also the lock's resource) */
	public static String newCounter(JdbcTemplate jdbc, String prefix) {
		String name = prefix + UUID.randomUUID();
		jdbc.update("INSERT INTO commit_check_counter (name, value) VALUES (?, 0)", name);
		return name;
	}

	/** Transactions on {@code pool} checked at commit by {@link CommitValidation}. */
	public static TransactionTemplate validatedTransactions(DataSource pool) {
		DataSourceTransactionManager manager = new DataSourceTransactionManager(pool);
		manager.addListener(new CommitValidation());
		return new TransactionTemplate(manager);
	}

	/**
	 * Runs {@code units} units on the calling thread: each takes the lock on {@code name} with {@code options},
	 * then in a transaction of {@code tx} reads the counter, pauses ({@link #pause(Duration)}), writes it plus one and
	 * logs the token and the value. A unit whose commit the validation refused counts in {@code rolledBack}, one that
	 * did not get the lock within its wait time in {@code notAcquired}; a lost lease found only at the release (after
	 * the commit) counts nowhere: the log shows it.
	 */
	public static void runUnits(LockTemplate node, TransactionTemplate tx, JdbcTemplate jdbc, String name,
			LockOptions options, int units, AtomicInteger rolledBack, AtomicInteger notAcquired) {
		Duration lease = java.util.Objects.requireNonNull(options.getLeaseTime(), "the units need an explicit lease");
		for (int u = 0; u < units; u++) {
			try {
				node.executeWithoutResult(name, options, (lock) -> tx.executeWithoutResult((status) -> {
					int value = jdbc.queryForObject("SELECT value FROM commit_check_counter WHERE name = ?",
							Integer.class, name);
					pause(lease);
					jdbc.update("UPDATE commit_check_counter SET value = ? WHERE name = ?", value + 1, name);
					jdbc.update("INSERT INTO commit_check_log (name, fencing_token, value) VALUES (?, ?, ?)", name,
							lock.fencingToken(), value + 1);
				}));
			}
			catch (LockLostException ex) {
				if (String.valueOf(ex.getMessage()).contains("about to commit")) {
					rolledBack.incrementAndGet();
				}
			}
			catch (org.springframework.dao.DataAccessException ex) {
				if (!rolledBackBySnapshotIsolation(ex)) {
					throw ex;
				}
				rolledBack.incrementAndGet();
			}
			catch (LockNotAcquiredException ex) {
				notAcquired.incrementAndGet();
			}
		}
	}

	/**
	 * Whether MariaDB's snapshot isolation rolled the unit's transaction back (1020): the unit's own {@code UPDATE} of
	 * the counter met a value another owner committed after the unit read it, which happens to a unit that stalled
	 * past its lease (and, without validation, also to the next owner that read before a stale commit). The server
	 * stops such a unit before its commit check can.
	 */
	private static boolean rolledBackBySnapshotIsolation(Throwable failure) {
		for (Throwable t = failure; t != null && t.getCause() != t; t = t.getCause()) {
			if (t instanceof java.sql.SQLException sql && sql.getErrorCode() == 1020) {
				return true;
			}
		}
		return false;
	}

	/**
	 * What the log of counter {@code name} shows.
	 * @param committed transactions committed
	 * @param outOfOrder committed transactions whose value does not follow the lock's order (a commit after the lease
	 * had passed to another owner, or one that lost its update to such a commit)
	 * @param finalValue the counter's final value (equal to {@code committed} when no update was lost)
	 */
	public record Tally(int committed, int outOfOrder, int finalValue) {

		/** Reads the log and the counter: sorted by fencing token, the committed values must increase strictly. */
		public static Tally of(JdbcTemplate jdbc, String name) {
			List<Map<String, Object>> log = jdbc.queryForList(
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
			int finalValue = jdbc.queryForObject("SELECT value FROM commit_check_counter WHERE name = ?", Integer.class,
					name);
			return new Tally(log.size(), outOfOrder, finalValue);
		}

		/** Updates lost to a stale commit. */
		public int lostUpdates() {
			return this.committed - this.finalValue;
		}

	}

	/** 70% of units pause up to 10 ms, 30% pause 10 to 70 ms past the lease. */
	static void pause(Duration lease) {
		ThreadLocalRandom random = ThreadLocalRandom.current();
		long millis = (random.nextInt(10) < 7) ? random.nextInt(10) : lease.toMillis() + 10 + random.nextInt(60);
		Pauses.sleep(millis);
	}

}
