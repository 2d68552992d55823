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
import io.github.dblock.semaphore.PermitHandle;
import io.github.dblock.semaphore.SemaphoreOptions;
import io.github.dblock.semaphore.SemaphoreTemplate;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.Reliability;
import io.github.dblock.test.nodes.SemaphoreNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Semaphores across real JVM processes: the number of holders inside at once, checked on the server's clock
 * independently of the semaphore, and recovery of the permit of a holder process killed with SIGKILL.
 */
class CrossProcessSemaphoreTests {

	private static final Pattern RESULT = Pattern.compile("RESULT acquisitions=(\\d+)");

	private static HikariDataSource pool;

	@BeforeAll
	static void tables() {
		pool = TestDatabase.get().newDataSource(4);
		LockNodes.migrateOnce(pool);
		TestDatabase.get().execute("CREATE TABLE IF NOT EXISTS sem_test_interval (id BIGINT AUTO_INCREMENT PRIMARY KEY, "
				+ "name VARCHAR(100) NOT NULL, holder VARCHAR(100) NOT NULL, token BIGINT NOT NULL, "
				+ "entered_at DATETIME(6) NOT NULL, left_at DATETIME(6) NULL, KEY (name))");
	}

	@AfterAll
	static void close() {
		pool.close();
	}

	@Test
	void threeProcessesNeverHaveMoreThanNHoldersInsideAtOnce() throws Exception {
		int permits = 2;
		String name = "processes-" + UUID.randomUUID();
		SemaphoreNodes.node("test", pool).setPermits(name, permits);
		int processes = 3;
		int threads = 3;
		int iterations = 8 * Reliability.scale();
		List<Process> started = new ArrayList<>();
		for (int p = 0; p < processes; p++) {
			started.add(start("contend", name, String.valueOf(threads), String.valueOf(iterations), "20"));
		}
		int acquisitions = 0;
		for (Process process : started) {
			String output = outputOf(process, Duration.ofMinutes(5));
			Matcher m = RESULT.matcher(output);
			assertThat(m.find()).as("worker output:%n%s", output).isTrue();
			acquisitions += Integer.parseInt(m.group(1));
			assertThat(process.exitValue()).as("worker output:%n%s", output).isZero();
		}
		int expected = processes * threads * iterations;
		assertThat(acquisitions).isEqualTo(expected);
		JdbcTemplate jdbc = new JdbcTemplate(pool);
		assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM sem_test_interval WHERE name = ? AND left_at IS NOT NULL",
				Integer.class, name)).isEqualTo(expected);
		// for every entry: how many stays (its own included) cover that instant on the server's clock
		Integer mostInside = jdbc.queryForObject("SELECT MAX(inside) FROM (SELECT a.id, COUNT(*) AS inside"
				+ " FROM sem_test_interval a JOIN sem_test_interval b ON b.name = a.name AND b.entered_at <= a.entered_at"
				+ " AND b.left_at > a.entered_at WHERE a.name = ? GROUP BY a.id) AS overlaps", Integer.class, name);
		Reliability.count("SEMAPHORE", "cross-process permit acquisitions", acquisitions);
		assertThat(mostInside).as("most holders inside at once (N = %d)", permits).isEqualTo(permits);
		List<Long> tokens = jdbc.queryForList("SELECT token FROM sem_test_interval WHERE name = ?", Long.class, name);
		assertThat(tokens).as("a fencing token per acquisition").doesNotHaveDuplicates().hasSize(expected);
		assertThat(SemaphoreNodes.node("test", pool).availablePermits(name)).isEqualTo(permits);
	}

	@Test
	void thePermitOfAHolderKilledWithSigkillReturnsWhenItsLeaseEnds() throws Exception {
		String name = "killed-" + UUID.randomUUID();
		SemaphoreTemplate survivor = SemaphoreNodes.node("survivor", pool);
		survivor.setPermits(name, 1);
		long leaseMillis = 2_000;
		Process holder = start("hold", name, String.valueOf(leaseMillis));
		BufferedReader out = new BufferedReader(new InputStreamReader(holder.getInputStream(), StandardCharsets.UTF_8));
		String line = CompletableFuture.supplyAsync(() -> readUntil(out, "HOLDING")).get(60, TimeUnit.SECONDS);
		long killedToken = Long.parseLong(line.substring("HOLDING ".length()).trim());
		assertThat(survivor.tryAcquire(name)).as("held while the holder lives").isEmpty();
		long killedAt = System.nanoTime();
		holder.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
		try (PermitHandle permit = survivor.acquire(name, SemaphoreOptions.defaults().withWaitTime(Duration.ofSeconds(30)))) {
			long recoveredMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
			Reliability.sample("SEMAPHORE", "permit recovery after SIGKILL of a holder", recoveredMillis);
			assertThat(permit.fencingToken()).isGreaterThan(killedToken);
			assertThat(recoveredMillis).as("not before the lease ends").isGreaterThanOrEqualTo(leaseMillis / 2)
				.isLessThan(leaseMillis + 1_000);
		}
	}

	private static Process start(String... args) throws Exception {
		return CrossProcessLockTests.start(SemaphoreWorker.class, args);
	}

	private static String readUntil(BufferedReader reader, String prefix) {
		return CrossProcessLockTests.readUntil(reader, prefix);
	}

	private static String outputOf(Process process, Duration timeout) throws Exception {
		return CrossProcessLockTests.outputOf(process, timeout);
	}

}
