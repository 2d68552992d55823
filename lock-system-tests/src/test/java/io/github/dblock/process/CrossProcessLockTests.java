package io.github.dblock.process;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.Reliability;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Mutual exclusion between real JVM processes, checked independently of the lock itself, and recovery from a
 * holder process killed with SIGKILL.
 */
class CrossProcessLockTests {

	private static final Pattern RESULT = Pattern.compile("RESULT acquisitions=(\\d+) violations=(\\d+)");

	private static HikariDataSource pool;

	@BeforeAll
	static void tables() {
		pool = TestDatabase.get().newDataSource(4);
		LockNodes.migrateOnce(pool);
		TestDatabase.get().execute(
				"CREATE TABLE IF NOT EXISTS lock_test_counter (name VARCHAR(100) PRIMARY KEY, value BIGINT NOT NULL)",
				"CREATE TABLE IF NOT EXISTS lock_test_probe (name VARCHAR(100) PRIMARY KEY, holder VARCHAR(100) NULL)",
				"CREATE TABLE IF NOT EXISTS lock_test_token (seq BIGINT AUTO_INCREMENT PRIMARY KEY, "
						+ "name VARCHAR(100) NOT NULL, token BIGINT NOT NULL, KEY (name))");
	}

	@AfterAll
	static void close() {
		pool.close();
	}

	@ParameterizedTest
	@EnumSource(LockMode.class)
	void threeProcessesWithSeveralThreadsEachNeverOverlap(LockMode mode) throws Exception {
		contend(mode, mode.name());
	}

	/**
	 * PESSIMISTIC with {@code fencing = SERVER_CLOCK} in every process: no write per acquisition, and the tokens
	 * still strictly increase in the order the critical sections ran.
	 */
	@Test
	void threeProcessesWithServerClockFencingNeverOverlapAndTheirTokensIncrease() throws Exception {
		contend(LockMode.PESSIMISTIC, "PESSIMISTIC/SERVER_CLOCK");
	}

	private void contend(LockMode mode, String modeArgument) throws Exception {
		String resource = "processes-" + UUID.randomUUID();
		JdbcTemplate jdbc = new JdbcTemplate(pool);
		jdbc.update("INSERT INTO lock_test_counter (name, value) VALUES (?, 0)", resource);
		jdbc.update("INSERT INTO lock_test_probe (name, holder) VALUES (?, NULL)", resource);
		int processes = 3;
		int threads = 3;
		int iterations = 15 * Reliability.scale();
		Reliability.setting("cross-process contention", processes + " JVM processes x " + threads + " threads x "
				+ iterations + " critical sections, one hot resource per mode");
		List<Process> started = new ArrayList<>();
		for (int p = 0; p < processes; p++) {
			started.add(start("contend", modeArgument, resource, String.valueOf(threads), String.valueOf(iterations)));
		}
		int acquisitions = 0;
		int violations = 0;
		for (Process process : started) {
			String output = outputOf(process, Duration.ofMinutes(5));
			Matcher m = RESULT.matcher(output);
			assertThat(m.find()).as("worker output:%n%s", output).isTrue();
			acquisitions += Integer.parseInt(m.group(1));
			violations += Integer.parseInt(m.group(2));
			assertThat(process.exitValue()).as("worker output:%n%s", output).isZero();
		}
		int expected = processes * threads * iterations;
		Reliability.count(modeArgument, "cross-process acquisitions", acquisitions);
		Reliability.count(modeArgument, "cross-process exclusion violations", violations);
		assertThat(violations).isZero();
		assertThat(acquisitions).isEqualTo(expected);
		assertThat(jdbc.queryForObject("SELECT value FROM lock_test_counter WHERE name = ?", Long.class, resource))
			.isEqualTo(expected);
		List<Long> tokens = jdbc.queryForList("SELECT token FROM lock_test_token WHERE name = ? ORDER BY seq",
				Long.class, resource);
		assertThat(tokens).hasSize(expected);
		for (int i = 1; i < tokens.size(); i++) {
			assertThat(tokens.get(i)).as("token #%d in database order", i).isGreaterThan(tokens.get(i - 1));
		}
	}

	@ParameterizedTest
	@EnumSource(names = { "LEASE", "PESSIMISTIC" })
	void aHolderKilledWithSigkillIsRecoveredWithinTheModesPromise(LockMode mode) throws Exception {
		String resource = "killed-" + UUID.randomUUID();
		long leaseMillis = 2_000;
		Process holder = start("hold", mode.name(), resource, String.valueOf(leaseMillis));
		BufferedReader out = new BufferedReader(new InputStreamReader(holder.getInputStream(), StandardCharsets.UTF_8));
		String line = CompletableFuture.supplyAsync(() -> readUntil(out, "HOLDING")).get(60, TimeUnit.SECONDS);
		long killedToken = Long.parseLong(line.substring("HOLDING ".length()).trim());
		LockTemplate survivor = LockNodes.node(mode, "survivor", pool);
		assertThat(survivor.tryAcquire(resource)).as("held while the holder lives").isEmpty();
		long killedAt = System.nanoTime();
		holder.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
		try (LockHandle lock = survivor.acquire(resource, LockOptions.defaults().withWaitTime(Duration.ofSeconds(30)))) {
			long recoveredMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
			System.out.println("[lock tests] " + mode + " recovery after SIGKILL: " + recoveredMillis + " ms"
					+ ((mode == LockMode.LEASE) ? " (lease " + leaseMillis + " ms)" : ""));
			Reliability.count(mode.name(), "holders killed with SIGKILL while holding", 1);
			Reliability.sample(mode.name(), "recovery after SIGKILL of a holder", recoveredMillis);
			assertThat(lock.fencingToken()).isGreaterThan(killedToken);
			if (mode == LockMode.LEASE) {
				assertThat(recoveredMillis).as("not before the lease ends").isGreaterThanOrEqualTo(leaseMillis / 2)
					.isLessThan(leaseMillis + 1_000);
			}
			else {
				assertThat(recoveredMillis).as("as soon as the server sees the connection drop").isLessThan(1_000);
			}
		}
	}

	static String readUntil(BufferedReader reader, String prefix) {
		return WorkerProcesses.readUntil(reader, prefix);
	}

	private static Process start(String... args) throws Exception {
		return start(LockWorker.class, args);
	}

	/** Starts a worker JVM: {@code main} with the command {@code args[0]}, the database, then the other arguments. */
	static Process start(Class<?> main, String... args) throws Exception {
		return WorkerProcesses.start(main, args[0], java.util.Arrays.copyOfRange(args, 1, args.length));
	}

	static String outputOf(Process process, Duration timeout) throws Exception {
		return WorkerProcesses.outputOf(process, timeout);
	}

}
