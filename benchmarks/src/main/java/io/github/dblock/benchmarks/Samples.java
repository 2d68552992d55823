package io.github.dblock.benchmarks;

import java.util.Arrays;

/** A growable list of nanosecond samples with percentiles. Not thread-safe: one per thread, then merged. */
public final class Samples {

	private long[] values = new long[1024];

	private int size;

	/** Adds one sample, in nanoseconds. */
	public void add(long nanos) {
		if (this.size == this.values.length) {
			this.values = Arrays.copyOf(this.values, this.size * 2);
		}
		this.values[this.size++] = nanos;
	}

	/** Adds every sample of another list. */
	public void addAll(Samples other) {
		for (int i = 0; i < other.size; i++) {
			add(other.values[i]);
		}
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
