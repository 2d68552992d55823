package io.github.dblock.process;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.idempotency.IdempotencyRecord;
import io.github.dblock.idempotency.IdempotencyStatus;
import io.github.dblock.test.nodes.IdempotencyNodes;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Idempotency keys across real JVM processes: concurrent duplicates in three processes run each key's work exactly
 * once (counted in a table, not by the library), and a runner killed with SIGKILL mid-way is taken over when its
 * running lease ends, with the writes of its transaction gone.
 */
class CrossProcessIdempotencyTests {

	private static final Pattern OUTCOME = Pattern.compile("OUTCOME (\\S+) (\\S+)");

	private static HikariDataSource pool;

	private static JdbcTemplate jdbc;

	@BeforeAll
	static void tables() {
		pool = TestDatabase.get().newDataSource(4);
		LockNodes.migrateOnce(pool);
		jdbc = new JdbcTemplate(pool);
		TestDatabase.get().execute("CREATE TABLE IF NOT EXISTS idem_test_execution (seq BIGINT AUTO_INCREMENT PRIMARY KEY,"
				+ " idem_key VARCHAR(100) NOT NULL, runner VARCHAR(100) NOT NULL, KEY (idem_key))",
				"CREATE TABLE IF NOT EXISTS idem_test_payment (idem_key VARCHAR(100) PRIMARY KEY, amount INT NOT NULL)");
	}

	@AfterAll
	static void close() {
		pool.close();
	}

	@Test
	void threeProcessesWithFourThreadsEachRunEveryKeyExactlyOnceAndAllCallersGetItsOutcome() throws Exception {
		String prefix = "procs-" + UUID.randomUUID();
		int keys = 5;
		int processes = 3;
		int threads = 4;
		List<Process> started = new ArrayList<>();
		for (int p = 0; p < processes; p++) {
			started.add(start("burst", prefix, String.valueOf(keys), String.valueOf(threads)));
		}
		Map<String, Set<String>> outcomes = new HashMap<>();
		int calls = 0;
		for (Process process : started) {
			String output = outputOf(process, Duration.ofMinutes(3));
			assertThat(process.exitValue()).as("worker output:%n%s", output).isZero();
			assertThat(output).as("worker output:%n%s", output).contains("RESULT calls=" + (keys * threads));
			Matcher m = OUTCOME.matcher(output);
			while (m.find()) {
				outcomes.computeIfAbsent(m.group(1), (k) -> new HashSet<>()).add(m.group(2));
				calls++;
			}
		}
		assertThat(calls).isEqualTo(processes * threads * keys);
		List<Map<String, Object>> executions = jdbc.queryForList(
				"SELECT idem_key, COUNT(*) AS runs, MIN(runner) AS runner FROM idem_test_execution WHERE idem_key LIKE ?"
						+ " GROUP BY idem_key ORDER BY idem_key", prefix + "-%");
		assertThat(executions).hasSize(keys);
		for (Map<String, Object> row : executions) {
			String key = (String) row.get("idem_key");
			assertThat(((Number) row.get("runs")).intValue()).as("executions of %s", key).isEqualTo(1);
			assertThat(outcomes.get(key)).as("outcomes of %s", key).containsExactly((String) row.get("runner"));
		}
	}

	@Test
	void aRunnerKilledWithSigkillMidWayIsTakenOverAfterItsLeaseAndItsTransactionalWritesAreGone() throws Exception {
		String key = "killed-" + UUID.randomUUID();
		long leaseMillis = 2_000;
		Process runner = start("hang", key, String.valueOf(leaseMillis));
		BufferedReader out = new BufferedReader(new InputStreamReader(runner.getInputStream(), StandardCharsets.UTF_8));
		String line = CompletableFuture.supplyAsync(() -> readUntil(out, "RUNNING")).get(60, TimeUnit.SECONDS);
		long killedToken = Long.parseLong(line.substring("RUNNING ".length()).trim());
		try (IdempotencyNodes.Node survivor = IdempotencyNodes.node(pool, "survivor", Duration.ofSeconds(5))) {
			IdempotencyRecord running = survivor.template().find(key).orElseThrow();
			assertThat(running.status()).isEqualTo(IdempotencyStatus.RUNNING);
			assertThat(running.fencingToken()).isEqualTo(killedToken);
			long killedAt = System.nanoTime();
			runner.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
			String outcome = survivor.template().execute(key, String.class, (claim) -> {
				jdbc.update("INSERT INTO idem_test_payment (idem_key, amount) VALUES (?, 10)", key);
				return "taken over with token " + claim.fencingToken();
			});
			long tookOverMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
			IdempotencyRecord record = survivor.template().find(key).orElseThrow();
			assertThat(outcome).isEqualTo("taken over with token " + record.fencingToken());
			assertThat(record.status()).isEqualTo(IdempotencyStatus.SUCCEEDED);
			assertThat(record.attempts()).isEqualTo(2);
			assertThat(record.fencingToken()).isGreaterThan(killedToken);
			assertThat(tookOverMillis).as("after the killed runner's lease, not long after").isBetween(leaseMillis / 3,
					leaseMillis + 3_000);
			assertThat(jdbc.queryForList("SELECT amount FROM idem_test_payment WHERE idem_key = ?", Integer.class, key))
				.as("the killed run's write was rolled back with its connection").containsExactly(10);
		}
	}

	private static String readUntil(BufferedReader reader, String prefix) {
		return WorkerProcesses.readUntil(reader, prefix);
	}

	private static Process start(String command, String... more) throws Exception {
		return WorkerProcesses.start(IdempotencyWorker.class, command, more);
	}

	private static String outputOf(Process process, Duration timeout) throws Exception {
		return WorkerProcesses.outputOf(process, timeout);
	}

}
