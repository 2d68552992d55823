package io.github.dblock.benchmarks;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.jspecify.annotations.Nullable;

/** Every figure of one run, filled in by {@link BenchmarkRun} and written out by {@link Report}. */
public final class Results {

	/**
	 * Latency of one uncontended acquire + release (or one JMH operation), in microseconds, with the measuring thread's
	 * CPU time (µs) and allocated bytes per operation (NaN where not measured).
	 */
	public record Latency(String label, double p50, double p99, double mean, long samples, double cpuMicrosPerOp,
			double allocatedBytesPerOp) {

		public Latency(String label, double p50, double p99, double mean, long samples) {
			this(label, p50, p99, mean, samples, Double.NaN, Double.NaN);
		}

	}

	/**
	 * One contended run, with the worker threads' CPU time (µs) and allocated bytes per cycle (NaN where not
	 * measured: in other processes).
	 */
	public record Throughput(String label, double perSecond, double waitP50Millis, double waitP99Millis,
			long completed, int waitSamples, List<Long> completedPerProcess, double cpuMicrosPerOp,
			double allocatedBytesPerOp) {

		public Throughput(String label, double perSecond, double waitP50Millis, double waitP99Millis, long completed,
				int waitSamples, List<Long> completedPerProcess) {
			this(label, perSecond, waitP50Millis, waitP99Millis, completed, waitSamples, completedPerProcess, Double.NaN,
					Double.NaN);
		}

		/** The figures of a contended run under a label. */
		public static Throughput of(String label, Contention.Result result) {
			return new Throughput(label, result.perSecond(), result.waits().percentileMillis(50),
					result.waits().percentileMillis(99), result.completed(), result.waits().size(),
					result.completedPerProcess(), result.cpuNanosPerCycle() / 1000, result.allocatedBytesPerCycle());
		}

	}

	/**
	 * One semaphore run.
	 * @param permits the permit count N
	 * @param throughput sections per second and waits
	 * @param mostInside the most sections seen running at once (must not exceed N)
	 */
	public record SemaphoreRun(int permits, Throughput throughput, int mostInside) {
	}

	/** Heap retained after touching distinct resources. */
	public record Heap(String label, int resources, long beforeBytes, long afterBytes, int localResources) {

		/** Heap retained per resource touched, in bytes (may be negative: GC noise). */
		public double bytesPerResource() {
			return (this.afterBytes - this.beforeBytes) / (double) this.resources;
		}

	}

	public final Map<String, String> environment = new LinkedHashMap<>();

	/** Scenario 1: per contender. */
	public final List<Latency> uncontended = new ArrayList<>();

	/** Scenario 2: hold time in ms → per contender. */
	public final Map<Integer, List<Throughput>> hotInJvm = new LinkedHashMap<>();

	/** Scenario 3: hold time in ms → per contender. */
	public final Map<Integer, List<Throughput>> hotAcrossProcesses = new LinkedHashMap<>();

	/** Scenario 3, every round: hold time in ms → contender → its figures of each round, in round order. */
	public final Map<Integer, Map<Contender.Kind, List<Throughput>>> hotAcrossProcessesRounds = new LinkedHashMap<>();

	/** Against the minimal loops ({@link FloorComparison}): scenario → its rounds. */
	public final Map<FloorComparison.Scenario, FloorComparison.Table> floors = new LinkedHashMap<>();

	/** Scenario 4: per contender. */
	public final List<Throughput> spread = new ArrayList<>();

	/** Scenario 9: read/write mixes and the exclusive lock, one hot resource. */
	public final List<Throughput> readWrite = new ArrayList<>();

	/** Scenario 5: small and large table. */
	public final List<Latency> tableSize = new ArrayList<>();

	/** Scenario 6: template / annotated, with and without SQL. */
	public final List<Latency> annotation = new ArrayList<>();

	/** Scenario 7. */
	public final List<Heap> heap = new ArrayList<>();

	/** Scenario 8: mode → recoveries. */
	public final Map<String, List<ProcessScenarios.Recovery>> recovery = new LinkedHashMap<>();

	/** Scenario 11: idempotency keys (first calls, duplicates, bursts of concurrent duplicates); null until run. */
	public IdempotencyScenario.@Nullable Result idempotency;

	/** Scenario 12: the same transaction under a LEASE lock with commit-time validation on and off; null until run. */
	public CommitValidationScenario.@Nullable Result commitValidation;

	/** Scenario 10: one semaphore with N = 1, 2 and 4 permits, 8 threads, 1 ms inside. */
	public final List<SemaphoreRun> semaphore = new ArrayList<>();

	/** The scenario 1 figures of a contender. */
	public Latency uncontended(Contender.Kind kind) {
		return this.uncontended.stream().filter((l) -> l.label().equals(kind.label())).findFirst().orElseThrow();
	}

	/** The figures of a contender in a list of contended runs, or null where it was not run. */
	public static @Nullable Throughput optional(List<Throughput> list, Contender.Kind kind) {
		return list.stream().filter((t) -> t.label().equals(kind.label())).findFirst().orElse(null);
	}

	/** The figures of a contender in a list of contended runs. */
	public static Throughput find(List<Throughput> list, Contender.Kind kind) {
		return list.stream().filter((t) -> t.label().equals(kind.label())).findFirst().orElseThrow();
	}

}
