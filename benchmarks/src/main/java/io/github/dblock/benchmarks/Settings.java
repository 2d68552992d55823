package io.github.dblock.benchmarks;

import java.time.Duration;

/**
 * How long and how big a run is. {@link #smoke()} exercises every scenario for a fraction of a second (what
 * {@code ./mvnw verify} runs, so the harness cannot rot); {@link #full()} is the documented run. Scenario 1 runs in
 * {@code rounds} rounds, each over every contender in a rotated order, so that a slow phase of a shared machine
 * does not land on one contender only. Scenarios 2 and 3 (one hot resource) run in {@code hotRounds} rounds the same
 * way, each contender measured for {@code hotMeasure} per round; each figure is the round with the median rate.
 */
public record Settings(String name, int rounds, int jmhWarmupIterations, int jmhMeasurementIterations, Duration jmhIteration,
		Duration warmup, Duration measure, int hotRounds, Duration hotMeasure, int processes, int threadsPerProcess, int largeRows, int heapResources, Duration heapBudget,
		Duration crashLease, int crashRepetitions) {

	/** A fraction of a second per scenario: for CI. */
	public static Settings smoke() {
		return new Settings("smoke", 1, 1, 1, Duration.ofMillis(200), Duration.ofMillis(100), Duration.ofMillis(300), 1,
				Duration.ofMillis(300), 2, 2,
				20_000, 2_000, Duration.ofSeconds(5), Duration.ofSeconds(1), 1);
	}

	/** The documented run, about 20 minutes. */
	public static Settings full() {
		return new Settings("full", 5, 1, 2, Duration.ofSeconds(1), Duration.ofSeconds(2), Duration.ofSeconds(8), 3,
				Duration.ofSeconds(4), 2, 4,
				1_000_000, 1_000_000, Duration.ofSeconds(45), Duration.ofSeconds(2), 3);
	}

	/**
	 * The settings called {@code smoke} (also for an empty name) or {@code full}.
	 * @throws IllegalArgumentException for any other name
	 */
	public static Settings named(String name) {
		return switch (name) {
			case "smoke", "" -> smoke();
			case "full" -> full();
			default -> throw new IllegalArgumentException("bench.mode must be smoke or full, was '" + name + "'");
		};
	}

}
