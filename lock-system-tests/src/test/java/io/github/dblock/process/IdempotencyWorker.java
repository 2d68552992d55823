package io.github.dblock.process;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.idempotency.IdempotencyTemplate;
import io.github.dblock.test.nodes.IdempotencyNodes;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * A separate JVM process that calls idempotency keys, started by {@link CrossProcessIdempotencyTests}.
 * <p>
 * {@code burst <url> <user> <password> <keyPrefix> <keys> <threads>}: every thread calls every key
 * {@code <keyPrefix>-0 .. <keys - 1>}, all threads starting together; the work records its execution in
 * {@code idem_test_execution}, takes 100 ms and returns {@code "<pid>/<thread>"}. Prints {@code OUTCOME <key>
 * <outcome>} per call, then {@code RESULT calls=N}.
 * <p>
 * {@code hang <url> <user> <password> <key> <leaseMillis>}: in a transaction, claims the key with the given running
 * lease, writes a row to {@code idem_test_payment} inside that transaction, prints {@code RUNNING <fencing token>} and
 * sleeps until killed.
 */
public final class IdempotencyWorker {

	private IdempotencyWorker() {
	}

	public static void main(String[] args) throws Exception {
		String command = args[0];
		String pid = String.valueOf(ProcessHandle.current().pid());
		try (HikariDataSource dataSource = WorkerProcesses.dataSource(args, 12)) {
			JdbcTemplate jdbc = new JdbcTemplate(dataSource);
			if (command.equals("hang")) {
				String key = args[4];
				IdempotencyNodes.Node node = IdempotencyNodes.node(dataSource, "process-" + pid,
						Duration.ofMillis(Long.parseLong(args[5])));
				new TransactionTemplate(new DataSourceTransactionManager(dataSource)).executeWithoutResult((status) ->
					node.template().execute(key, String.class, (claim) -> {
						jdbc.update("INSERT INTO idem_test_payment (idem_key, amount) VALUES (?, 99)", key);
						System.out.println("RUNNING " + claim.fencingToken());
						System.out.flush();
						try {
							Thread.sleep(Long.MAX_VALUE);
						}
						catch (InterruptedException ex) {
							Thread.currentThread().interrupt();
						}
						return "never";
					}));
				return;
			}
			String prefix = args[4];
			int keys = Integer.parseInt(args[5]);
			int threads = Integer.parseInt(args[6]);
			IdempotencyTemplate template = IdempotencyNodes.node(dataSource, "process-" + pid, Duration.ofSeconds(3))
				.template();
			ExecutorService pool = Executors.newFixedThreadPool(threads);
			CountDownLatch start = new CountDownLatch(1);
			List<Future<List<String>>> futures = new ArrayList<>();
			for (int t = 0; t < threads; t++) {
				String runner = pid + "/" + t;
				futures.add(pool.submit(() -> {
					start.await();
					List<String> lines = new ArrayList<>();
					for (int k = 0; k < keys; k++) {
						String key = prefix + "-" + k;
						String outcome = template.execute(key, String.class, (claim) -> {
							jdbc.update("INSERT INTO idem_test_execution (idem_key, runner) VALUES (?, ?)", key, runner);
							try {
								Thread.sleep(100);
							}
							catch (InterruptedException ex) {
								throw new IllegalStateException(ex);
							}
							return runner;
						});
						lines.add("OUTCOME " + key + " " + outcome);
					}
					return lines;
				}));
			}
			start.countDown();
			int calls = 0;
			for (Future<List<String>> future : futures) {
				for (String line : future.get()) {
					System.out.println(line);
					calls++;
				}
			}
			pool.shutdown();
			System.out.println("RESULT calls=" + calls);
		}
	}

}
