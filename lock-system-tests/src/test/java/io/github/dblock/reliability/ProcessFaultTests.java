package io.github.dblock.reliability;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadLocalRandom;
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
 * Holder processes killed with SIGKILL at random points (waiting, holding with renewals running, releasing) while
 * other processes contend for a few hot resources, and a holder paused with SIGSTOP past its lease.
 * <p>
 * Exclusion is checked without trusting the lock: every holder records its entry and exit in
 * {@code lock_test_interval} on the database server's clock; afterwards no entry may fall before the end of the
 * previous holder's interval. A killed holder's interval ends no earlier than the moment the kill was sent, read
 * from the same clock just before sending it (so the few milliseconds in which the process was dying are not
 * checked). Fencing tokens must increase in the order the database recorded the entries.
 */
class ProcessFaultTests {

	private static final Pattern RESULT = Pattern.compile("RESULT acquisitions=(\\d+)");

	private static final long LEASE_MILLIS = 2_000; // renewed every third: a renewal may be 1.3 s late on a loaded machine

	private static HikariDataSource pool;

	private static JdbcTemplate jdbc;

	@BeforeAll
	static void tables() {
		pool = TestDatabase.get().newDataSource(4);
		LockNodes.migrateOnce(pool);
		jdbc = new JdbcTemplate(pool);
		jdbc.execute("CREATE TABLE IF NOT EXISTS lock_test_interval (id BIGINT AUTO_INCREMENT PRIMARY KEY,"
				+ " resource VARCHAR(100) NOT NULL, holder VARCHAR(100) NOT NULL, token BIGINT NOT NULL,"
				+ " entered_at DATETIME(6) NOT NULL, exited_at DATETIME(6) NULL, KEY (resource))");
		jdbc.execute("CREATE TABLE IF NOT EXISTS lock_test_kill (holder VARCHAR(100) PRIMARY KEY, killed_at DATETIME(6) NOT NULL)");
		jdbc.execute("CREATE TABLE IF NOT EXISTS lock_test_counter (name VARCHAR(100) PRIMARY KEY, value BIGINT NOT NULL)");
		jdbc.execute("CREATE TABLE IF NOT EXISTS lock_test_token (seq BIGINT AUTO_INCREMENT PRIMARY KEY,"
				+ " name VARCHAR(100) NOT NULL, token BIGINT NOT NULL, KEY (name))");
		jdbc.execute("CREATE TABLE IF NOT EXISTS lock_test_fenced (name VARCHAR(100) PRIMARY KEY, value BIGINT NOT NULL,"
				+ " token BIGINT NOT NULL)");
	}

	@AfterAll
	static void close() {
		pool.close();
	}

	@ParameterizedTest
	@EnumSource(LockMode.class)
	void holdersKilledAtRandomPointsNeverOverlapALiveHolderAndTheLockRecoversWithinTheModesPromise(LockMode mode)
			throws Exception {
		String prefix = "chaos-" + mode.name().toLowerCase() + "-" + UUID.randomUUID().toString().substring(0, 8);
		List<String> resources = List.of(prefix + "-a", prefix + "-b");
		for (String resource : resources) {
			jdbc.update("INSERT INTO lock_test_counter (name, value) VALUES (?, 0)", resource);
		}
		int maxHold = (mode == LockMode.LEASE) ? 1_200 : 300; // LEASE holds span renewals (every lease/3)
		List<Worker> survivors = new ArrayList<>();
		for (int p = 0; p < 2; p++) {
			survivors.add(Worker.start("chaos", mode, String.join(",", resources), "2", String.valueOf(maxHold / 2)));
		}
		Reliability.setting("killed holders", "2 surviving JVM processes x 2 threads and 1 victim process contend for 2 "
				+ "hot resources; the victim is SIGKILLed while holding (at a random point of its hold), waiting or releasing, in turn, and restarted; lease "
				+ LEASE_MILLIS + " ms, renewed every third");
		Map<String, LocalDateTime> killedAt = new HashMap<>();
		int kills = 5 * Reliability.scale();
		Map<String, Integer> phases = new HashMap<>();
		LockTemplate prober = (mode != LockMode.OPTIMISTIC) ? LockNodes.node(mode, "test-prober", pool) : null;
		String[] targets = { "H ", "W", "R " };
		for (int k = 0; k < kills; k++) {
			Worker victim = Worker.start("chaos", mode, String.join(",", resources), "1", String.valueOf(maxHold));
			// aim at a phase (holding, waiting, releasing) in turn; where it really was is read from its last line
			String target = targets[k % targets.length];
			victim.awaitLine(target, Duration.ofSeconds(60));
			if (target.equals("H ")) {
				Thread.sleep(ThreadLocalRandom.current().nextInt(maxHold / 2 + 1));
			}
			else if (target.equals("W")) {
				Thread.sleep(ThreadLocalRandom.current().nextInt(100));
			}
			String last = victim.lastMarker();
			String victimName = "process-" + victim.process.pid();
			// the kill time on the server's clock, taken just before the signal (bound values would lose microseconds)
			jdbc.update("INSERT INTO lock_test_kill (holder, killed_at) VALUES (?, UTC_TIMESTAMP(6))", victimName);
			victim.process.destroyForcibly();
			assertThat(victim.process.waitFor(30, TimeUnit.SECONDS)).isTrue();
			killedAt.put(victimName, jdbc.queryForObject("SELECT killed_at FROM lock_test_kill WHERE holder = ?",
					LocalDateTime.class, victimName));
			String phase = switch (last.charAt(0)) {
				case 'H' -> "holding";
				case 'R' -> "releasing";
				default -> "waiting or between locks";
			};
			phases.merge(phase, 1, Integer::sum);
			if (prober != null && (last.startsWith("H ") || last.startsWith("R "))) {
				String resource = last.substring(2);
				try (LockHandle lock = prober.acquire(resource,
						LockOptions.defaults().withWaitTime(Duration.ofSeconds(30)))) {
					long id = enter(resource, "test-prober", lock.fencingToken());
					jdbc.update("UPDATE lock_test_interval SET exited_at = UTC_TIMESTAMP(6) WHERE id = ?", id);
				}
				long recovery = jdbc.queryForObject("SELECT TIMESTAMPDIFF(MICROSECOND, k.killed_at, MIN(i.entered_at))"
						+ " FROM lock_test_kill k JOIN lock_test_interval i ON i.resource = ? AND i.entered_at >= k.killed_at"
						+ " WHERE k.holder = ? GROUP BY k.killed_at", Long.class, resource, victimName) / 1_000;
				Reliability.sample(mode.name(), "recovery after SIGKILL while " + phase + " (server clock)", recovery);
				if (mode == LockMode.LEASE) {
					assertThat(recovery).as("free within the lease plus a margin").isLessThan(LEASE_MILLIS + 1_000);
				}
				else {
					assertThat(recovery).as("free once the server sees the connection drop").isLessThan(2_000);
				}
			}
		}
		int survivorAcquisitions = 0;
		for (Worker survivor : survivors) {
			survivor.process.getOutputStream().close(); // end of input: finish and report
			String result = survivor.awaitLine("RESULT", Duration.ofSeconds(120));
			Matcher m = RESULT.matcher(result);
			assertThat(m.find()).isTrue();
			survivorAcquisitions += Integer.parseInt(m.group(1));
			assertThat(survivor.process.waitFor(30, TimeUnit.SECONDS)).isTrue();
			assertThat(survivor.process.exitValue()).as(survivor.output()).isZero();
		}
		assertThat(survivorAcquisitions).isPositive();
		phases.forEach((phase, n) -> Reliability.count(mode.name(), "victims SIGKILLed while " + phase, n));
		if (mode == LockMode.OPTIMISTIC) {
			for (String resource : resources) {
				long counter = jdbc.queryForObject("SELECT value FROM lock_test_counter WHERE name = ?", Long.class, resource);
				List<Long> tokens = jdbc.queryForList("SELECT token FROM lock_test_token WHERE name = ? ORDER BY seq",
						Long.class, resource);
				assertThat(counter).as("no lost update: one increment per committed unit of work").isEqualTo(tokens.size());
				assertIncreasing(tokens, resource);
				Reliability.count(mode.name(), "units of work committed with killed processes", tokens.size());
			}
			return;
		}
		int violations = 0;
		int intervals = 0;
		for (String resource : resources) {
			List<Map<String, Object>> rows = jdbc.queryForList("SELECT holder, token, entered_at, exited_at"
					+ " FROM lock_test_interval WHERE resource = ? ORDER BY entered_at, id", resource);
			LocalDateTime busyUntil = LocalDateTime.MIN;
			for (Map<String, Object> row : rows) {
				LocalDateTime entered = (LocalDateTime) row.get("entered_at");
				LocalDateTime exited = (LocalDateTime) row.get("exited_at");
				String holder = (String) row.get("holder");
				if (entered.isBefore(busyUntil)) {
					violations++;
				}
				if (exited == null) {
					exited = killedAt.get(holder.substring(0, holder.indexOf('/')));
					assertThat(exited).as("an open interval belongs to a killed process: %s", holder).isNotNull();
				}
				if (exited.isAfter(busyUntil)) {
					busyUntil = exited;
				}
			}
			intervals += rows.size();
		}
		Reliability.count(mode.name(), "critical sections checked with killed holders", intervals);
		Reliability.count(mode.name(), "overlaps with a live holder", violations);
		assertThat(violations).as("critical sections entered before the previous holder left").isZero();
		for (String resource : resources) {
			assertIncreasing(jdbc.queryForList("SELECT token FROM lock_test_interval WHERE resource = ? ORDER BY id",
					Long.class, resource), resource);
		}
	}

	@Test
	void aHolderPausedPastItsLeaseIsSupersededLearnsOfItAndItsFencedWriteIsRejected() throws Exception {
		String resource = "paused-" + UUID.randomUUID();
		jdbc.update("INSERT INTO lock_test_fenced (name, value, token) VALUES (?, 0, 0)", resource);
		Worker paused = Worker.start("pause", LockMode.LEASE, resource);
		String holding = paused.awaitLine("HOLDING", Duration.ofSeconds(60));
		long pausedToken = Long.parseLong(holding.substring("HOLDING ".length()).trim());
		signal("STOP", paused.process.pid());
		long stoppedAt = System.nanoTime();
		LockTemplate successor = LockNodes.node(LockMode.LEASE, "successor", pool);
		try (LockHandle lock = successor.acquire(resource, LockOptions.defaults().withWaitTime(Duration.ofSeconds(30)))) {
			Reliability.sample(LockMode.LEASE.name(), "successor acquired after SIGSTOP of the holder",
					TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - stoppedAt));
			assertThat(lock.fencingToken()).isGreaterThan(pausedToken);
			assertThat(jdbc.update("UPDATE lock_test_fenced SET value = value + 1, token = ? WHERE name = ? AND token <= ?",
					lock.fencingToken(), resource, lock.fencingToken())).isEqualTo(1);
		}
		signal("CONT", paused.process.pid());
		OutputStream input = paused.process.getOutputStream();
		input.write("write\n".getBytes(StandardCharsets.UTF_8));
		input.flush();
		assertThat(paused.awaitLine("WRITE", Duration.ofSeconds(30))).startsWith("WRITE rows=0 held=false");
		Thread.sleep(LEASE_MILLIS);
		input.write("write\n".getBytes(StandardCharsets.UTF_8));
		input.flush();
		assertThat(paused.awaitLine("WRITE", Duration.ofSeconds(30))).as("told by the renewal that it lost the lock")
			.isEqualTo("WRITE rows=0 held=false lost=true");
		input.close();
		assertThat(paused.awaitLine("RELEASE", Duration.ofSeconds(30))).isEqualTo("RELEASE-LOST");
		assertThat(jdbc.queryForObject("SELECT value FROM lock_test_fenced WHERE name = ?", Long.class, resource))
			.as("only the successor's write landed").isEqualTo(1);
		Reliability.count(LockMode.LEASE.name(), "holders paused (SIGSTOP) past the lease, superseded and fenced off", 1);
	}

	private static void assertIncreasing(List<Long> tokens, String resource) {
		for (int i = 1; i < tokens.size(); i++) {
			assertThat(tokens.get(i)).as("fencing token #%d of %s in database order", i, resource)
				.isGreaterThan(tokens.get(i - 1));
		}
	}

	private static long enter(String resource, String holder, long token) {
		jdbc.update("INSERT INTO lock_test_interval (resource, holder, token, entered_at) VALUES (?, ?, ?, UTC_TIMESTAMP(6))",
				resource, holder, token);
		return jdbc.queryForObject("SELECT MAX(id) FROM lock_test_interval WHERE holder = ? AND resource = ?", Long.class,
				holder, resource);
	}

	private static LocalDateTime serverNow() {
		return jdbc.queryForObject("SELECT UTC_TIMESTAMP(6)", LocalDateTime.class);
	}

	private static void signal(String signal, long pid) throws Exception {
		Process kill = new ProcessBuilder("kill", "-" + signal, String.valueOf(pid)).inheritIO().start();
		assertThat(kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0).as("kill -%s %d", signal, pid).isTrue();
	}

	/** A {@link ChaosWorker} process whose output is read continuously, so that it never blocks on a full pipe. */
	static final class Worker {

		final Process process;

		private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();

		private final StringBuffer output = new StringBuffer();

		private volatile String lastMarker = "-";

		Worker(Process process) {
			this.process = process;
			Thread reader = new Thread(() -> {
				try (BufferedReader in = new BufferedReader(
						new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
					for (String line = in.readLine(); line != null; line = in.readLine()) {
						this.output.append(line).append('\n');
						if (line.equals("W") || line.equals("F") || line.startsWith("H ") || line.startsWith("R ")) {
							this.lastMarker = line;
						}
						this.lines.add(line);
					}
				}
				catch (java.io.IOException ex) {
					// the process was killed
				}
			});
			reader.setDaemon(true);
			reader.start();
		}

		static Worker start(String command, LockMode mode, String... args) throws Exception {
			return start(command, mode.name(), args);
		}

		/** {@code mode}: a lock mode's name, or {@code PESSIMISTIC/SERVER_CLOCK} (see {@link ChaosWorker}). */
		static Worker start(String command, String mode, String... args) throws Exception {
			TestDatabase db = TestDatabase.get();
			List<String> cmd = new ArrayList<>(List.of(
					System.getProperty("java.home") + File.separator + "bin" + File.separator + "java", "-Xmx128m",
					"-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"), ChaosWorker.class.getName(),
					command, db.jdbcUrl(), (db.username() != null) ? db.username() : "",
					(db.password() == null || db.password().isEmpty()) ? "-" : db.password(), mode,
					String.valueOf(LEASE_MILLIS)));
			cmd.addAll(List.of(args));
			return new Worker(new ProcessBuilder(cmd).redirectErrorStream(true).start());
		}

		String lastMarker() {
			return this.lastMarker;
		}

		String output() {
			return this.output.toString();
		}

		/** The next line starting with the prefix; lines before it are dropped. */
		String awaitLine(String prefix, Duration timeout) throws InterruptedException {
			long deadline = System.nanoTime() + timeout.toNanos();
			while (true) {
				String line = this.lines.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
				if (line == null) {
					throw new AssertionError("no line starting with '" + prefix + "' within " + timeout + "; output:\n"
							+ output());
				}
				if (line.startsWith(prefix)) {
					return line;
				}
			}
		}

	}

}
