package io.github.dblock.reliability.checker;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

import io.github.dblock.reliability.checker.Checker.Violation;
import io.github.dblock.reliability.checker.History.Family;
import io.github.dblock.reliability.checker.History.Observed;
import io.github.dblock.test.EmbeddedMariaDb;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The mixed-workload checker across worker processes ({@link ProcessWorkload}): 3 {@link CheckerWorker} JVMs × 3
 * threads, under SIGKILL, SIGSTOP/SIGCONT, killed connections, blackholes and late
 * replies, checked by every {@link Checker} invariant. {@link #shortRun()} runs in {@code ./mvnw verify} for
 * {@code lock.checker.process-duration} (ISO-8601, {@code PT30S} by default); {@link #soak()} (tag {@code soak}, so
 * {@code -Psoak}) runs for {@code lock.soak.duration} on a MariaDB of its own (an {@link EmbeddedMariaDb}), which
 * it restarts, and writes its figures into the "Soak"
 * section of {@code lock.soak.report}. {@code -Dlock.checker.seed=} replays a seed's choices.
 */
class MultiProcessCheckerTests {

	@Test
	void shortRun() throws Exception {
		Duration duration = MixedWorkloadCheckerTests.duration("lock.checker.process-duration", Duration.ofSeconds(30));
		Run run = run(duration, null, null);
		Observed observed = run.result().observed();
		// enough of every kind that a violation could have shown, and the process faults did happen
		assertThat(MixedWorkloadCheckerTests.count(observed, Family.EXCLUSIVE)).as("exclusive sections")
			.isGreaterThanOrEqualTo(30);
		assertThat(MixedWorkloadCheckerTests.count(observed, Family.PERMIT)).as("permit sections")
			.isGreaterThanOrEqualTo(5);
		assertThat(run.result().faults()).as("faults").containsKeys("SIGKILL", "SIGSTOP");
		assertThat(observed.killed()).isNotEmpty();
		assertThat(observed.rowChanges()).as("the lock rows' history").isNotEmpty();
	}

	/**
	 * The checker catches a defect switched on in one worker process ({@link Defects}: {@code p0}, and the worker that
	 * replaces it after a SIGKILL), with the usual faults: 20 s each.
	 */
	@ParameterizedTest(name = "{0} is caught by {1}")
	@CsvSource({ "leaseHeldWithoutTheDatabase, exclusion", "tokenNotAdvanced, tokens-increase" })
	void aDefectInOneWorkerProcessIsCaught(String defect, String invariant) throws Exception {
		long seed = MixedWorkloadCheckerTests.seed();
		Workload.Result result = new ProcessWorkload(
				new ProcessWorkload.Settings(seed, Duration.ofSeconds(20), 3, 3, null, null, defect)).run();
		List<Violation> violations = Checker.check(result.observed());
		System.out.println("[checker] processes with " + defect + " in p0, seed " + seed + ": "
				+ MixedWorkloadCheckerTests.summary(result) + ", " + violations.size() + " violation(s)");
		if (!violations.isEmpty()) {
			System.out.println(Checker.report(seed, result.observed(), violations.subList(0, 1)));
		}
		assertThat(result.harnessErrors()).as("errors of the workload itself, seed %d", seed).isEmpty();
		assertThat(violations).extracting(Violation::invariant).as("seed %d", seed).contains(invariant);
	}

	@Test
	@Tag("soak")
	void soak() throws Exception {
		Duration duration = MixedWorkloadCheckerTests.duration("lock.soak.duration", Duration.ofMinutes(30));
		Duration restartEvery = duration.dividedBy(3).compareTo(Duration.ofMinutes(1)) < 0 ? Duration.ofMinutes(1)
				: duration.dividedBy(3);
		// no log flush per commit: the restarts are clean shutdowns, and the run is about the locks, not durability
		EmbeddedMariaDb server = EmbeddedMariaDb.start("checker", "--innodb-flush-log-at-trx-commit=2");
		Run run;
		try {
			run = run(duration, server, restartEvery);
		}
		finally {
			if (server.isRunning()) {
				server.stop();
			}
		}
		String report = System.getProperty("lock.soak.report");
		if (report != null && !report.isBlank() && !report.startsWith("${")) {
			writeSection(Path.of(report.trim()), run, restartEvery);
		}
	}

	record Run(long seed, Duration duration, long seconds, Workload.Result result) {
	}

	private static Run run(Duration duration, EmbeddedMariaDb server, Duration restartEvery) throws Exception {
		long seed = MixedWorkloadCheckerTests.seed();
		System.out.println("[checker] processes, seed " + seed + " (replay: -Dlock.checker.seed=" + seed + "), "
				+ duration);
		long started = System.nanoTime();
		Workload.Result result = new ProcessWorkload(
				new ProcessWorkload.Settings(seed, duration, 3, 3, server, restartEvery)).run();
		List<Violation> violations = Checker.check(result.observed());
		long seconds = Duration.ofNanos(System.nanoTime() - started).toSeconds();
		System.out.println("[checker] processes, seed " + seed + " ran " + seconds + " s: "
				+ MixedWorkloadCheckerTests.summary(result) + ", " + result.observed().killed().size()
				+ " nodes killed with " + result.observed().sections().stream().filter((s) -> s.exitedAt() == null).count()
				+ " sections open, " + result.observed().rowChanges().size() + " lock row changes, " + violations.size()
				+ " violation(s)");
		if (!violations.isEmpty()) {
			System.out.println(Checker.report(seed, result.observed(), violations));
		}
		assertThat(result.harnessErrors()).as("errors of the workload itself, seed %d", seed).isEmpty();
		assertThat(violations).as("%s", Checker.report(seed, result.observed(), violations)).isEmpty();
		return new Run(seed, duration, seconds, result);
	}

	/** Replaces the "## Soak" section of the report (to the next "## " heading or the end), or appends it. */
	private static void writeSection(Path file, Run run, Duration restartEvery) throws Exception {
		Observed observed = run.result().observed();
		long lost = observed.sections().stream().filter(History.Section::lost).count();
		// fenced writes: every section but permits and OPTIMISTIC work, which write none
		long rejected = observed.sections()
			.stream()
			.filter((s) -> s.family() != Family.PERMIT && !s.mode().startsWith("OPTIMISTIC"))
			.filter((s) -> Boolean.FALSE.equals(s.exitAccepted()))
			.count();
		long cutShort = observed.sections()
			.stream()
			.filter((s) -> s.exitedAt() == null && observed.killed().containsKey(s.node()))
			.count();
		String section = "## Soak\n\nGenerated by `MultiProcessCheckerTests.soak` (`./mvnw -pl lock-system-tests -am"
				+ " verify -Psoak`, `-Dlock.soak.duration=PT30M` by default) on " + Instant.now() + " ("
				+ Runtime.getRuntime().availableProcessors() + " processors), seed " + run.seed() + ": the mixed-workload"
				+ " checker's calls in 3 worker JVMs x 3 threads against a MariaDB of the test's own, each worker"
				+ " through a fault proxy of its own; a fault every 1-3 s: SIGKILL of a worker (a new one replaces it),"
				+ " SIGSTOP for 0.5-3 s, `KILL CONNECTION` of one of its sessions, a blackhole of its proxy for 0.5-3 s,"
				+ " late replies for 1-3 s, and a server restart at most every " + restartEvery.toSeconds() + " s."
				+ " Every invariant of [RELIABILITY.md](../RELIABILITY.md#the-mixed-workload-checker) is checked.\n\n"
				+ "| time | calls | sections | lost | cut short by SIGKILL | fenced writes rejected at exit | idempotent"
				+ " effects | lock row changes | faults | violations |\n|---|---|---|---|---|---|---|---|---|---|\n| "
				+ run.seconds() + " s | " + observed.ops().size() + " | " + observed.sections().size() + " | " + lost
				+ " | " + cutShort + " | " + rejected + " | "
				+ observed.effects().size() + " | " + observed.rowChanges().size() + " | "
				+ run.result().faults().toString().replace("{", "").replace("}", "") + " | 0 |\n";
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
