package io.github.dblock.benchmarks;

import java.time.Duration;

/**
 * How long and how big a run is. {@link #smoke()} exercises every scenario for a fraction of a second (what
 * {@code ./mvnw verify} runs, so the harness cannot rot); {@link #full()} is the documented run.
 */
public record Settings(String name, int jmhWarmupIterations, int jmhMeasurementIterations, Duration jmhIteration,
		Duration warmup, Duration measure, int processes, int threadsPerProcess, int largeRows, int heapResources,
		Duration crashLease, int crashRepetitions) {

	public static Settings smoke() {
		return new Settings("smoke", 1, 1, Duration.ofMillis(200), Duration.ofMillis(100), Duration.ofMillis(300), 2, 2,
				20_000, 2_000, Duration.ofSeconds(1), 1);
	}

	public static Settings full() {
		return new Settings("full", 2, 3, Duration.ofSeconds(2), Duration.ofSeconds(2), Duration.ofSeconds(8), 2, 4,
				1_000_000, 100_000, Duration.ofSeconds(2), 3);
	}

	public static Settings named(String name) {
		return switch (name) {
			case "smoke", "" -> smoke();
			case "full" -> full();
			default -> throw new IllegalArgumentException("bench.mode must be smoke or full, was '" + name + "'");
		};
	}

}
