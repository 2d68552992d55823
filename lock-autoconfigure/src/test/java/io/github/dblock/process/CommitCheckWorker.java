package io.github.dblock.process;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.CommitValidation;
import io.github.dblock.LockLostException;
import io.github.dblock.LockMode;
import io.github.dblock.LockNotAcquiredException;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.test.LockNodes;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * A worker JVM for {@link CrossProcessCommitValidationTests}:
 * {@code contend <url> <user> <password> <counter name> <validate> <threads> <units per thread> <lease ms>}. Each unit
 * takes the lock outside a transaction (as {@code @DistributedLock} on a {@code @Transactional} method), reads the
 * counter, pauses at random (30% of units past the lease), writes the counter plus one and logs its fencing token and
 * the value, and commits. Prints {@code RESULT rolled-back=<n> not-acquired=<n>}.
 */
public final class CommitCheckWorker {

	private CommitCheckWorker() {
	}

	public static void main(String[] args) throws Exception {
		String name = args[4];
		boolean validate = Boolean.parseBoolean(args[5]);
		int threads = Integer.parseInt(args[6]);
		int units = Integer.parseInt(args[7]);
		long leaseMillis = Long.parseLong(args[8]);
		try (HikariDataSource dataSource = WorkerProcesses.dataSource(args, threads + 3)) {
			LockTemplate node = LockNodes.node(LockMode.LEASE, "process-" + ProcessHandle.current().pid(), dataSource);
			node.setValidateAtCommit(validate);
			DataSourceTransactionManager manager = new DataSourceTransactionManager(dataSource);
			manager.addListener(new CommitValidation());
			TransactionTemplate tx = new TransactionTemplate(manager);
			JdbcTemplate jdbc = new JdbcTemplate(dataSource);
			LockOptions options = LockOptions.defaults()
				.withLeaseTime(Duration.ofMillis(leaseMillis))
				.withWaitTime(Duration.ofSeconds(30));
			AtomicInteger rolledBack = new AtomicInteger();
			AtomicInteger notAcquired = new AtomicInteger();
			ExecutorService pool = Executors.newFixedThreadPool(threads);
			List<Future<?>> futures = new ArrayList<>();
			for (int t = 0; t < threads; t++) {
				futures.add(pool.submit(() -> {
					for (int u = 0; u < units; u++) {
						try {
							node.executeWithoutResult(name, options, (lock) -> tx.executeWithoutResult((status) -> {
								int value = jdbc.queryForObject("SELECT value FROM commit_check_counter WHERE name = ?",
										Integer.class, name);
								pause(leaseMillis);
								jdbc.update("UPDATE commit_check_counter SET value = ? WHERE name = ?", value + 1, name);
								jdbc.update("INSERT INTO commit_check_log (name, fencing_token, value) VALUES (?, ?, ?)",
										name, lock.fencingToken(), value + 1);
							}));
						}
						catch (LockLostException ex) {
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
			for (Future<?> future : futures) {
				future.get(5, TimeUnit.MINUTES);
			}
			pool.shutdown();
			System.out.println("RESULT rolled-back=" + rolledBack.get() + " not-acquired=" + notAcquired.get());
			System.out.flush();
		}
	}

	/** 70% of units pause up to 10 ms, 30% pause 10 to 70 ms past the lease. */
	private static void pause(long leaseMillis) {
		ThreadLocalRandom random = ThreadLocalRandom.current();
		long millis = (random.nextInt(10) < 7) ? random.nextInt(10) : leaseMillis + 10 + random.nextInt(60);
		try {
			Thread.sleep(millis);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}

}
