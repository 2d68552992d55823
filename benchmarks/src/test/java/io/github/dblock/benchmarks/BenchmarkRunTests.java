package io.github.dblock.benchmarks;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs the whole harness: in smoke mode (what {@code ./mvnw verify} runs) every scenario for a fraction of a
 * second, writing the report under {@code target/benchmarks}; in full mode ({@code -Pbenchmarks}) the documented
 * run that writes {@code docs/BENCHMARKS.md}. It checks that every scenario produced sane, non-empty figures and
 * that the report and charts were written; it never asserts on speed.
 */
class BenchmarkRunTests {

	@Test
	void theHotScenariosReportEachContendersMedianRoundWhole() {
		java.util.Map<Contender.Kind, List<Results.Throughput>> byKind = new java.util.EnumMap<>(Contender.Kind.class);
		byKind.put(Contender.Kind.BARE_ROW_LOCK, List.of(throughput("bare", 900, 1), throughput("bare", 300, 2),
				throughput("bare", 600, 3)));
		byKind.put(Contender.Kind.LEASE, List.of(throughput("lease", 50, 4), throughput("lease", 70, 5)));
		List<Results.Throughput> medians = BenchmarkRun.medianRounds(byKind);
		// HOT order (LEASE before the bare row lock); the lower middle of an even count; the round kept whole
		assertThat(medians).extracting(Results.Throughput::perSecond).containsExactly(50.0, 600.0);
		assertThat(medians).extracting(Results.Throughput::waitP50Millis).containsExactly(4.0, 3.0);
	}

	private static Results.Throughput throughput(String label, double perSecond, double waitP50) {
		return new Results.Throughput(label, perSecond, waitP50, waitP50, (long) perSecond, 1, List.of((long) perSecond));
	}

	@Test
	void everyScenarioProducesFiguresAndTheReportIsWritten() throws Exception {
		Settings settings = Settings.named(System.getProperty("bench.mode", "smoke"));
		String configured = System.getProperty("bench.output", "");
		Path output = configured.isBlank() ? Path.of("target", "benchmarks") : Path.of(configured);
		Results results = new BenchmarkRun(settings, BenchDatabase.get()).run();
		Path markdown = new Report(settings, results).write(output);

		assertThat(results.uncontended).hasSize(Contender.Kind.measurable().length);
		assertThat(results.floors.keySet()).containsExactly(FloorComparison.Scenario.values());
		results.floors.values().forEach((table) -> {
			for (Contender.Kind kind : table.kinds()) {
				assertThat(table.of(kind)).as(kind.label()).hasSize(FloorComparison.Params.of(settings).rounds());
			}
		});
		assertThat(results.tableSize).hasSize(2);
		assertThat(results.annotation).hasSize(4);
		for (Results.Latency latency : concat(results.uncontended, results.tableSize, results.annotation)) {
			assertThat(latency.samples()).as(latency.label()).isPositive();
			assertThat(latency.p50()).as(latency.label()).isPositive().isLessThanOrEqualTo(latency.p99());
		}
		assertThat(results.hotInJvm.keySet()).containsExactly(0, 1);
		assertThat(results.hotAcrossProcesses.keySet()).containsExactly(0, 1);
		for (List<Results.Throughput> list : concat(List.copyOf(results.hotInJvm.values()),
				List.copyOf(results.hotAcrossProcesses.values()), List.of(results.spread))) {
			assertThat(list).hasSize((list == results.spread) ? BenchmarkRun.LOCKS.length : BenchmarkRun.HOT.length);
			// A smoke run measures for a fraction of a second against a possibly slow server: a contender may
			// complete nothing in it, but the scenario as a whole must have produced figures.
			assertThat(list.stream().mapToLong(Results.Throughput::completed).sum()).isPositive();
			for (Results.Throughput t : list) {
				assertThat(t.completed()).as(t.label()).isNotNegative();
				java.time.Duration measured = (list == results.spread) ? settings.measure() : settings.hotMeasure();
				assertThat(t.perSecond()).as(t.label()).isEqualTo(t.completed() / (measured.toNanos() / 1e9));
				if (t.waitSamples() > 0) {
					assertThat(t.waitP50Millis()).as(t.label()).isNotNegative().isLessThanOrEqualTo(t.waitP99Millis());
				}
			}
		}
		assertThat(results.readWrite).hasSize(ReadWriteScenario.READ_SHARES.length + 1);
		assertThat(results.readWrite.stream().mapToLong(Results.Throughput::completed).sum()).isPositive();
		for (Results.Throughput t : results.readWrite) {
			assertThat(t.completed()).as(t.label()).isNotNegative();
		}
		assertThat(results.heap).hasSize(2).allSatisfy((h) -> {
			assertThat(h.resources()).isPositive().isLessThanOrEqualTo(settings.heapResources());
			assertThat(h.beforeBytes()).isPositive();
			assertThat(h.localResources()).as("JVM-local lock state left after every lock was released").isZero();
		});
		assertThat(results.recovery.keySet()).containsExactly("LEASE", "PESSIMISTIC");
		results.recovery.values().forEach((list) -> assertThat(list).hasSize(settings.crashRepetitions())
			.allSatisfy((r) -> assertThat(r.afterKillMillis()).isNotNegative()));

		assertThat(results.semaphore).extracting(Results.SemaphoreRun::permits).containsExactly(1, 2, 4);
		assertThat(results.semaphore).allSatisfy((run) -> {
			assertThat(run.mostInside()).as("N = %d", run.permits()).isLessThanOrEqualTo(run.permits());
			assertThat(run.throughput().completed()).isNotNegative();
		});
		assertThat(results.semaphore.stream().mapToLong((run) -> run.throughput().completed()).sum()).isPositive();

		String page = Files.readString(markdown);
		assertThat(page).contains("## At a glance", "## What this means for you", "## Targets",
				"## Against the minimal loops", "## 1. Uncontended", "## 8. Recovery after SIGKILL",
				"## 9. Read/write locks", "## 10. Semaphore", "## 11. Idempotency keys", "## 12. Commit-time validation");
		assertThat(page.indexOf("## At a glance")).isLessThan(page.indexOf("## What this means for you"))
			.isLessThan(page.indexOf("## Targets"));
		if (Contenders.redisUrl() == null) {
			assertThat(page).contains("not measured (no -Dbench.redis-url)");
		}
		assertThat(results.idempotency.executions()).isEqualTo(results.idempotency.bursts()).isPositive();
		CommitValidationScenario.Result commit = results.commitValidation;
		for (Samples samples : List.of(commit.onCycle(), commit.offCycle(), commit.onTransaction(),
				commit.offTransaction(), commit.noLock())) {
			assertThat(samples.size()).isPositive();
			assertThat(samples.percentileMillis(50)).isPositive().isLessThanOrEqualTo(samples.percentileMillis(99));
		}
		// interleaved one unit each: the variants differ in count by at most the last round
		assertThat(Math.abs(commit.onCycle().size() - commit.offCycle().size())).isLessThanOrEqualTo(1);
		for (String chart : new String[] { "uncontended", "hot-lock-threads", "hot-lock-processes", "spread", "floors" }) {
			Path png = output.resolve("benchmarks").resolve(chart + ".png");
			assertThat(png).exists();
			assertThat(Files.size(png)).as(chart).isGreaterThan(1000);
		}
	}

	private static <T> List<T> concat(List<T> first, List<T> second, List<T> third) {
		return java.util.stream.Stream.of(first, second, third).flatMap(List::stream).toList();
	}

}
