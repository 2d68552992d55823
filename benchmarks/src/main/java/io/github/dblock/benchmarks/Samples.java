package io.github.dblock.benchmarks;

import java.util.Arrays;

/**
 * A growable list of nanosecond samples with percentiles, and optionally the JVM cost (CPU time, allocated bytes) the
 * measuring thread spent on them. Not thread-safe: one per thread, then merged.
 */
public final class Samples {

	private long[] values = new long[1024];

	private int size;

	private long cpuNanos;

	private long allocatedBytes;

	private long costed;

	/** Adds one sample, in nanoseconds. */
	public void add(long nanos) {
		if (this.size == this.values.length) {
			this.values = Arrays.copyOf(this.values, this.size * 2);
		}
		this.values[this.size++] = nanos;
	}

	/** Adds one sample, in nanoseconds, and what the measuring thread spent on it. */
	public void add(long nanos, ThreadCost spent) {
		add(nanos);
		cost(spent, 1);
	}

	/** Adds what the measuring thread spent on {@code operations} of the samples. */
	public void cost(ThreadCost spent, long operations) {
		this.cpuNanos += spent.cpuNanos();
		this.allocatedBytes += spent.allocatedBytes();
		this.costed += operations;
	}

	/** The measuring thread's CPU time per costed sample, in µs; NaN where no cost was recorded. */
	public double cpuMicrosPerOp() {
		return (this.costed == 0) ? Double.NaN : this.cpuNanos / 1000.0 / this.costed;
	}

	/** The bytes the measuring thread allocated per costed sample; NaN where no cost was recorded. */
	public double allocatedBytesPerOp() {
		return (this.costed == 0) ? Double.NaN : this.allocatedBytes / (double) this.costed;
	}

	/** Adds every sample of another list, and its cost. */
	public void addAll(Samples other) {
		for (int i = 0; i < other.size; i++) {
			add(other.values[i]);
		}
		this.cpuNanos += other.cpuNanos;
		this.allocatedBytes += other.allocatedBytes;
		this.costed += other.costed;
	}

	/** A copy of the samples, in the order they were added. */
	public long[] toArray() {
		return Arrays.copyOf(this.values, this.size);
	}

	/** How many samples there are. */
	public int size() {
		return this.size;
	}

	/** The percentile (0–100) in milliseconds, nearest-rank; NaN when empty. */
	public double percentileMillis(double percentile) {
		if (this.size == 0) {
			return Double.NaN;
		}
		long[] sorted = Arrays.copyOf(this.values, this.size);
		Arrays.sort(sorted);
		int rank = (int) Math.ceil(percentile / 100.0 * this.size);
		return sorted[Math.max(0, Math.min(this.size - 1, rank - 1))] / 1_000_000.0;
	}

}
