package io.github.dblock.process;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.LockType;
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
 * Read/write locks between real JVM processes ({@link ReadWriteWorker}): exclusion checked on a probe row without
 * trusting the lock, reader overlap across processes, a writer not starved by readers of several processes, and
 * recovery from a reader or writer killed with SIGKILL.
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class CrossProcessReadWriteLockTests {

	private static final Pattern MIX = Pattern.compile("RESULT reads=(\\d+) writes=(\\d+) violations=(\\d+)");

	private static HikariDataSource pool;

	private static JdbcTemplate jdbc;

	@BeforeAll
	static void tables() {
		pool = TestDatabase.get().newDataSource(16);
		LockNodes.migrateOnce(pool);
		TestDatabase.get().execute(
				"CREATE TABLE IF NOT EXISTS lock_test_rw_probe (name VARCHAR(100) PRIMARY KEY, readers INT NOT NULL,"
						+ " writers INT NOT NULL, max_readers INT NOT NULL)",
				"CREATE TABLE IF NOT EXISTS lock_test_rw_ready (name VARCHAR(100) NOT NULL, node VARCHAR(100) NOT NULL,"
						+ " PRIMARY KEY (name, node))",
				"CREATE TABLE IF NOT EXISTS lock_test_rw_token (seq BIGINT AUTO_INCREMENT PRIMARY KEY, "
						+ "name VARCHAR(100) NOT NULL, kind CHAR(1) NOT NULL, token BIGINT NOT NULL, KEY (name))");
		jdbc = new JdbcTemplate(pool);
	}

	@AfterAll
	static void close() {
		pool.close();
	}

	@Test
	void threeProcessesMixingReadersAndWritersNeverLetAWriterOverlapAndReadersOfDifferentProcessesOverlap()
			throws Exception {
		String resource = "rw-processes-" + UUID.randomUUID();
		jdbc.update("INSERT INTO lock_test_rw_probe (name, readers, writers, max_readers) VALUES (?, 0, 0, 0)", resource);
		int processes = 3;
		int threads = 3;
		int iterations = 20 * Reliability.scale();
		List<Process> started = new ArrayList<>();
		for (int p = 0; p < processes; p++) {
			started.add(CrossProcessLockTests.start(ReadWriteWorker.class, "mix", resource, String.valueOf(threads),
					String.valueOf(iterations), "5", String.valueOf(processes)));
		}
		int reads = 0;
		int writes = 0;
		int violations = 0;
		for (Process process : started) {
			String output = CrossProcessLockTests.outputOf(process, Duration.ofMinutes(5));
			Matcher m = MIX.matcher(output);
			assertThat(m.find()).as("worker output:%n%s", output).isTrue();
			reads += Integer.parseInt(m.group(1));
			writes += Integer.parseInt(m.group(2));
			violations += Integer.parseInt(m.group(3));
			assertThat(process.exitValue()).as("worker output:%n%s", output).isZero();
		}
		Reliability.count("READ/WRITE", "cross-process read/write acquisitions", reads + writes);
		Reliability.count("READ/WRITE", "cross-process read/write exclusion violations", violations);
		assertThat(violations).isZero();
		assertThat(reads + writes).isEqualTo(processes * threads * iterations);
		assertThat(writes).isPositive();
		Map<String, Object> probe = jdbc.queryForMap("SELECT readers, writers, max_readers FROM lock_test_rw_probe "
				+ "WHERE name = ?", resource);
		assertThat(probe.get("readers")).isEqualTo(0);
		assertThat(probe.get("writers")).isEqualTo(0);
		assertThat((Integer) probe.get("max_readers")).as("readers of more than one process were inside at once")
			.isGreaterThan(threads);
		List<Map<String, Object>> sections = jdbc.queryForList(
				"SELECT kind, token FROM lock_test_rw_token WHERE name = ? ORDER BY seq", resource);
		assertThat(sections).hasSize(reads + writes);
		assertThat(sections.stream().map((row) -> row.get("token")).distinct().count()).as("tokens are unique")
			.isEqualTo(sections.size());
		for (int i = 0; i < sections.size(); i++) {
			if (!"W".equals(sections.get(i).get("kind"))) {
				continue;
			}
			long writer = ((Number) sections.get(i).get("token")).longValue();
			for (int j = 0; j < sections.size(); j++) {
				long other = ((Number) sections.get(j).get("token")).longValue();
				if (j < i) {
					assertThat(other).as("section %d recorded before writer %d", j, i).isLessThan(writer);
				}
				else if (j > i) {
					assertThat(other).as("section %d recorded after writer %d", j, i).isGreaterThan(writer);
				}
			}
		}
	}

	/**
	 * Readers in a second JVM and in this one (4 threads each, 300 ms per read, taken again at once) keep the read
	 * lock taken without a gap (sampled in the database before the writer comes); the writer still gets in within
	 * 2 s, and no reader holds while it does.
	 */
	@Test
	void aWriterIsNotStarvedByAStreamOfReadersInTwoProcesses() throws Exception {
		String resource = "rw-stream-" + UUID.randomUUID();
		Process readers = CrossProcessLockTests.start(ReadWriteWorker.class, "stream", resource, "4", "300", "12000");
		LockTemplate local = LockNodes.node(LockMode.LEASE, "local-readers", pool);
		AtomicBoolean stop = new AtomicBoolean();
		ExecutorService executor = Executors.newFixedThreadPool(4);
		List<Future<?>> streams = new ArrayList<>();
		try {
			BufferedReader out = new BufferedReader(new InputStreamReader(readers.getInputStream(), StandardCharsets.UTF_8));
			CompletableFuture.supplyAsync(() -> CrossProcessLockTests.readUntil(out, "READING")).get(60, TimeUnit.SECONDS);
			for (int t = 0; t < 4; t++) {
				long stagger = t * 75L;
				streams.add(executor.submit(() -> {
					Thread.sleep(stagger);
					while (!stop.get()) {
						try (LockHandle lock = local.acquire(resource, LockOptions.defaults().withType(LockType.READ)
							.withWaitTime(Duration.ofSeconds(30)))) {
							Thread.sleep(300);
						}
					}
					return null;
				}));
			}
			Thread.sleep(500);
			int zeroSamples = 0;
			for (int sample = 0; sample < 100; sample++) {
				if (liveReaders(resource) == 0) {
					zeroSamples++;
				}
				Thread.sleep(5);
			}
			assertThat(zeroSamples).as("the readers of both processes keep the read lock taken").isZero();
			LockTemplate writerNode = LockNodes.node(LockMode.LEASE, "writer", pool);
			long start = System.nanoTime();
			try (LockHandle writer = writerNode.acquire(resource, LockOptions.defaults().withType(LockType.WRITE)
				.withWaitTime(Duration.ofSeconds(30)))) {
				long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
				System.out.println("[lock tests] writer waited " + waited + " ms behind readers of two processes");
				Reliability.sample("READ/WRITE", "writer wait behind a stream of readers", waited);
				assertThat(waited).isLessThan(2_000);
				for (int i = 0; i < 10; i++) {
					assertThat(liveReaders(resource)).as("no reader while the writer holds").isZero();
					Thread.sleep(10);
				}
			}
		}
		finally {
			stop.set(true);
			for (Future<?> stream : streams) {
				stream.get(30, TimeUnit.SECONDS);
			}
			executor.shutdownNow();
			readers.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
		}
	}

	@ParameterizedTest
	@EnumSource(value = LockType.class, names = { "READ", "WRITE" })
	void aReaderOrWriterKilledWithSigkillIsRecoveredWhenItsLeaseEnds(LockType killedType) throws Exception {
		String resource = "rw-killed-" + UUID.randomUUID();
		long leaseMillis = 2_000;
		Process holder = CrossProcessLockTests.start(ReadWriteWorker.class, "hold", resource, killedType.name(),
				String.valueOf(leaseMillis));
		BufferedReader out = new BufferedReader(new InputStreamReader(holder.getInputStream(), StandardCharsets.UTF_8));
		String line = CompletableFuture.supplyAsync(() -> CrossProcessLockTests.readUntil(out, "HOLDING"))
			.get(60, TimeUnit.SECONDS);
		long killedToken = Long.parseLong(line.substring("HOLDING ".length()).trim());
		LockTemplate survivor = LockNodes.node(LockMode.LEASE, "survivor", pool);
		LockType excluded = (killedType == LockType.READ) ? LockType.WRITE : LockType.READ;
		LockOptions options = LockOptions.defaults().withType(excluded);
		assertThat(survivor.tryAcquire(resource, options)).as("excluded while the holder lives").isEmpty();
		long killedAt = System.nanoTime();
		holder.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
		try (LockHandle lock = survivor.acquire(resource, options.withWaitTime(Duration.ofSeconds(30)))) {
			long recovered = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
			System.out.println("[lock tests] " + killedType + " holder killed, " + excluded + " after " + recovered + " ms");
			Reliability.sample("READ/WRITE", "recovery after SIGKILL of a " + killedType + " holder", recovered);
			assertThat(lock.fencingToken()).isGreaterThan(killedToken);
			assertThat(recovered).as("not before the lease ends").isGreaterThanOrEqualTo(leaseMillis / 2)
				.isLessThan(leaseMillis + 1_500);
		}
	}

	private static long liveReaders(String resource) {
		return jdbc.queryForObject("SELECT COUNT(*) FROM distributed_lock_rw_hold WHERE resource = ? AND kind = 'R'"
				+ " AND expires_at > UTC_TIMESTAMP(6)", Long.class, resource.getBytes(StandardCharsets.UTF_8));
	}

}
