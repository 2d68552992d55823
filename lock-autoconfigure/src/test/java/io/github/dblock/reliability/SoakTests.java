package io.github.dblock.reliability;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.test.LockNodes;
import io.github.dblock.test.Reliability;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A soak of the exclusive modes under random faults, with the workers and checks of {@link ProcessFaultTests}: per
 * mode, {@value #PROCESSES} {@link ChaosWorker} JVMs × {@value #THREADS} threads take random resources (3 hot ones for
 * about half of the calls, {@value #COLD} cold ones for the rest) until the mode's share of the soak time is over,
 * while the test SIGKILLs a random worker (and starts a new one) or SIGSTOPs one for 0.5–3 s, at random every 1–4 s.
 * <p>
 * Checked afterwards, on the database server's clock: no critical section was entered before the previous holder of
 * its resource left it (a SIGKILLed or SIGSTOPped holder's section is taken to end when the signal was sent, read from
 * the server's clock just before sending it), fencing tokens increase in the order the entries were recorded, and
 * every section a live worker entered was left. Each section ends with a fenced write ({@code token < ?}); rejected
 * ones (a holder superseded while it was stopped) are counted.
 * <p>
 * The soak time is {@code lock.soak.duration} (ISO-8601, e.g. {@code PT30M}); unset, one minute in all. Tagged
 * {@code soak} and excluded from {@code ./mvnw verify} for now (see docs/RELIABILITY.md: the LEASE check does not
 * yet tell a stale SIGSTOPped holder from an overlap). {@code -Psoak} runs this class only, for 30 minutes by default, and writes the
 * figures into the "Soak" section of {@code docs/RELIABILITY.md} ({@code lock.soak.report}). Not injected yet: killed
 * connections, a server restart and a network partition (see {@code DatabaseOutageTests} and
 * {@code NetworkFaultTests} for those faults on their own).
 */
@Tag("soak")
class SoakTests {

	static final int PROCESSES = 3;

	static final int THREADS = 4;

	static final int COLD = 200;

	private static final Pattern RESULT = Pattern.compile(
			"RESULT acquisitions=(\\d+) stale=(\\d+) errors=(\\d+) worstCallMillis=(\\d+)");

	private static final String[] MODES = { "LEASE", "PESSIMISTIC", "PESSIMISTIC/SERVER_CLOCK" };

	private static final Map<String, String> figures = new java.util.LinkedHashMap<>();

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
		jdbc.execute("CREATE TABLE IF NOT EXISTS lock_test_fenced (name VARCHAR(100) PRIMARY KEY, value BIGINT NOT NULL,"
				+ " token BIGINT NOT NULL)");
	}

	@AfterAll
	static void close() throws Exception {
		pool.close();
		String report = System.getProperty("lock.soak.report");
		if (report != null && !report.isBlank() && !report.startsWith("${")) {
			writeSection(Path.of(report.trim()));
		}
	}

	static Duration modeDuration() {
		String value = System.getProperty("lock.soak.duration");
		Duration total = (value == null || value.isBlank() || value.startsWith("${")) ? Duration.ofMinutes(1)
				: Duration.parse(value.trim());
		return total.dividedBy(MODES.length);
	}

	@ParameterizedTest
	@ValueSource(strings = { "LEASE", "PESSIMISTIC", "PESSIMISTIC/SERVER_CLOCK" })
	void workersKilledAndStoppedAtRandomNeverOverlapAndTheirTokensIncrease(String mode) throws Exception {
		String prefix = "soak-" + mode.toLowerCase().replace('/', '-') + "-" + UUID.randomUUID().toString().substring(0, 8);
		List<String> hot = List.of(prefix + "-h0", prefix + "-h1", prefix + "-h2");
		List<String> names = new ArrayList<>();
		for (int i = 0; i < COLD / hot.size(); i++) {
			names.addAll(hot); // about half of the picks fall on a hot resource
		}
		for (int i = 0; i < COLD; i++) {
			names.add(prefix + "-c" + i);
		}
		for (String name : new java.util.LinkedHashSet<>(names)) {
			jdbc.update("INSERT INTO lock_test_fenced (name, value, token) VALUES (?, 0, 0)", name);
		}
		String resources = String.join(",", names);
		int maxHold = 4;
		Duration duration = modeDuration();
		Reliability.setting("soak", PROCESSES + " JVMs x " + THREADS + " threads per mode, 3 hot + " + COLD
				+ " cold resources, holds of 0-" + maxHold + " ms, a SIGKILL (and restart) or a SIGSTOP of 0.5-3 s of a"
				+ " random worker every 1-4 s, " + duration.toSeconds() + " s per mode");
		List<ProcessFaultTests.Worker> workers = new ArrayList<>();
		for (int p = 0; p < PROCESSES; p++) {
			workers.add(ProcessFaultTests.Worker.start("soak", mode, resources, String.valueOf(THREADS),
					String.valueOf(maxHold)));
		}
		// the end of a signalled worker's sections for the check: when the signal was sent (server clock)
		Map<String, List<LocalDateTime>> signalled = new HashMap<>();
		Map<String, LocalDateTime> killed = new HashMap<>();
		int kills = 0;
		int stops = 0;
		long deadline = System.nanoTime() + duration.toNanos();
		ThreadLocalRandom random = ThreadLocalRandom.current();
		while (System.nanoTime() < deadline) {
			Thread.sleep(1_000 + random.nextInt(3_000));
			int victim = random.nextInt(workers.size());
			ProcessFaultTests.Worker worker = workers.get(victim);
			String name = "process-" + worker.process.pid();
			signalled.computeIfAbsent(name, (k) -> new ArrayList<>()).add(serverNow());
			if (random.nextBoolean()) {
				killed.put(name, signalled.get(name).get(signalled.get(name).size() - 1));
				worker.process.destroyForcibly();
				assertThat(worker.process.waitFor(30, TimeUnit.SECONDS)).isTrue();
				workers.set(victim, ProcessFaultTests.Worker.start("soak", mode, resources, String.valueOf(THREADS),
						String.valueOf(maxHold)));
				kills++;
			}
			else {
				signal("STOP", worker.process.pid());
				Thread.sleep(500 + random.nextInt(2_500));
				signal("CONT", worker.process.pid());
				stops++;
			}
		}
		long stale = 0;
		long errors = 0;
		long worstCall = 0;
		for (ProcessFaultTests.Worker worker : workers) {
			worker.process.getOutputStream().close();
			String result = worker.awaitLine("RESULT", Duration.ofSeconds(120));
			Matcher m = RESULT.matcher(result);
			assertThat(m.find()).as(result).isTrue();
			stale += Long.parseLong(m.group(2));
			errors += Long.parseLong(m.group(3));
			worstCall = Math.max(worstCall, Long.parseLong(m.group(4)));
			assertThat(worker.process.waitFor(30, TimeUnit.SECONDS)).isTrue();
		}
		int overlaps = 0;
		int unclosed = 0;
		int inversions = 0;
		int unexplained = 0;
		long sections = 0;
		for (String resource : new java.util.LinkedHashSet<>(names)) {
			List<Map<String, Object>> rows = jdbc.queryForList("SELECT holder, token, entered_at, exited_at"
					+ " FROM lock_test_interval WHERE resource = ? ORDER BY entered_at, id", resource);
			LocalDateTime busyUntil = LocalDateTime.MIN;
			for (Map<String, Object> row : rows) {
				LocalDateTime entered = (LocalDateTime) row.get("entered_at");
				LocalDateTime exited = (LocalDateTime) row.get("exited_at");
				String holder = (String) row.get("holder");
				if (entered.isBefore(busyUntil)) {
					overlaps++;
				}
				LocalDateTime signal = firstAfter(signalled.get(holder.substring(0, holder.indexOf('/'))), entered);
				if (signal != null && (exited == null || signal.isBefore(exited))) {
					exited = signal;
				}
				String process = holder.substring(0, holder.indexOf('/'));
				if (exited == null && killed.containsKey(process)) {
					// its entry was still on the way to the server when the kill was sent
					exited = (killed.get(process).isAfter(entered)) ? killed.get(process) : entered;
				}
				if (exited == null) {
					unclosed++;
					continue;
				}
				if (exited.isAfter(busyUntil)) {
					busyUntil = exited;
				}
			}
			sections += rows.size();
			// Tokens in the order the entries were recorded. A decrease is explained when a signal is involved: a
			// LEASE holder SIGSTOPped past its lease records its entry late, with its old token (its fenced write is
			// rejected); a durable PESSIMISTIC holder SIGKILLed before its commit had its token write rolled back, so
			// the next holder's token, from the counter and the clock at its statement's start, can be smaller than
			// the dead holder's. Any other decrease fails the test.
			List<Map<String, Object>> byId = jdbc.queryForList("SELECT holder, token FROM lock_test_interval"
					+ " WHERE resource = ? ORDER BY id", resource);
			for (int i = 1; i < byId.size(); i++) {
				if ((Long) byId.get(i).get("token") > (Long) byId.get(i - 1).get("token")) {
					continue;
				}
				String before = (String) byId.get(i - 1).get("holder");
				String after = (String) byId.get(i).get("holder");
				if (signalled.containsKey(before.substring(0, before.indexOf('/')))
						|| signalled.containsKey(after.substring(0, after.indexOf('/')))) {
					inversions++;
				}
				else {
					unexplained++;
				}
			}
		}
		Reliability.count("soak " + mode, "critical sections (acquisitions)", sections);
		Reliability.count("soak " + mode, "workers SIGKILLed", kills);
		Reliability.count("soak " + mode, "workers SIGSTOPped", stops);
		Reliability.count("soak " + mode, "overlaps", overlaps);
		Reliability.count("soak " + mode, "fenced writes rejected as stale", stale);
		Reliability.count("soak " + mode, "token decreases next to a signalled worker", inversions);
		Reliability.count("soak " + mode, "failed calls survived by workers", errors);
		Reliability.sample("soak " + mode, "worst call of a surviving worker (bound 60 s wait + statement time-outs)",
				worstCall);
		figures.put(mode, String.format(java.util.Locale.ROOT, "| %s | %d s | %d | %d | %d | %d | %d | %d | %d | %d ms |",
				mode, duration.toSeconds(), sections, kills, stops, overlaps, inversions + unexplained, stale, errors,
				worstCall));
		assertThat(unexplained).as("token decreases with no signalled worker involved").isZero();
		assertThat(unclosed).as("sections entered by a live worker and never left").isZero();
		assertThat(overlaps).as("critical sections entered before the previous holder left").isZero();
		assertThat(sections).isPositive();
	}

	private static LocalDateTime firstAfter(List<LocalDateTime> times, LocalDateTime entered) {
		if (times == null) {
			return null;
		}
		return times.stream().filter((t) -> !t.isBefore(entered)).min(LocalDateTime::compareTo).orElse(null);
	}

	private static LocalDateTime serverNow() {
		return jdbc.queryForObject("SELECT UTC_TIMESTAMP(6)", LocalDateTime.class);
	}

	private static void signal(String signal, long pid) throws Exception {
		Process kill = new ProcessBuilder("kill", "-" + signal, String.valueOf(pid)).inheritIO().start();
		assertThat(kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0).as("kill -%s %d", signal, pid).isTrue();
	}

	/** Replaces the "## Soak" section of the report (to the next "## " heading or the end), or appends it. */
	private static void writeSection(Path file) throws Exception {
		StringBuilder section = new StringBuilder("## Soak\n\nGenerated by `SoakTests` (`./mvnw -pl lock-autoconfigure -am"
				+ " verify -Psoak`, `-Dlock.soak.duration=PT30M` by default) on " + java.time.Instant.now() + ": "
				+ PROCESSES + " JVMs x " + THREADS + " threads per mode, 3 hot and " + COLD + " cold resources, a random"
				+ " worker SIGKILLed (and replaced) or SIGSTOPped for 0.5-3 s every 1-4 s. Killed connections, a server"
				+ " restart and a partition are not injected by the soak yet.\n\n"
				+ "| mode | time | acquisitions | SIGKILL | SIGSTOP | overlaps | token decreases (next to a signalled"
				+ " worker) | stale writes rejected | failed calls survived | worst call |\n"
				+ "|---|---|---|---|---|---|---|---|---|---|\n");
		figures.values().forEach((row) -> section.append(row).append('\n'));
		String text = Files.exists(file) ? Files.readString(file, StandardCharsets.UTF_8) : "";
		int start = text.indexOf("\n## Soak\n");
		if (start < 0) {
			text = text + (text.endsWith("\n") ? "\n" : "\n\n") + section;
		}
		else {
			int end = text.indexOf("\n## ", start + 1);
			text = text.substring(0, start + 1) + section + ((end < 0) ? "" : text.substring(end));
		}
		Files.writeString(file, text, StandardCharsets.UTF_8);
	}

}
