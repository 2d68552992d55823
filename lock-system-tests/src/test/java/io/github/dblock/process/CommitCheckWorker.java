package io.github.dblock.process;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.CommitCheckCounter;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.test.nodes.LockNodes;
import org.springframework.jdbc.core.JdbcTemplate;
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
			TransactionTemplate tx = CommitCheckCounter.validatedTransactions(dataSource);
			JdbcTemplate jdbc = new JdbcTemplate(dataSource);
			LockOptions options = LockOptions.defaults()
				.withLeaseTime(Duration.ofMillis(leaseMillis))
				.withWaitTime(Duration.ofSeconds(30));
			AtomicInteger rolledBack = new AtomicInteger();
			AtomicInteger notAcquired = new AtomicInteger();
			ExecutorService pool = Executors.newFixedThreadPool(threads);
			List<Future<?>> futures = new ArrayList<>();
			for (int t = 0; t < threads; t++) {
				futures.add(pool.submit(() -> CommitCheckCounter.runUnits(node, tx, jdbc, name, options, units,
						rolledBack, notAcquired)));
			}
			for (Future<?> future : futures) {
				future.get(5, TimeUnit.MINUTES);
			}
			pool.shutdown();
			System.out.println("RESULT rolled-back=" + rolledBack.get() + " not-acquired=" + notAcquired.get());
			System.out.flush();
		}
	}
}
