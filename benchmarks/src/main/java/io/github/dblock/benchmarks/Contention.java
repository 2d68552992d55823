package io.github.dblock.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * Runs threads that take a lock in a loop for a warm-up and then a measured period, and counts the critical
 * sections completed in the measured period and the time each waited (from the start of its attempt to the
 * start of its critical section), and the worker threads' CPU time and allocated bytes per cycle from the first
 * cycle each starts in the measured period to its last ({@link ThreadCost}).
 * <p>
 * A cycle that fails (the contender throws: a lock not taken within its minute, a database error) is counted, the
 * thread goes on with the next cycle, and the run fails at the end with the count and the first failure, so that a
 * failing contender cannot pass for a slow one. The one exception, documented on {@link #run}: a cycle still waiting
 * when the measured period ends is interrupted, and its failure is not one.
 */
public final class Contention {

	private Contention() {
	}

	/**
	 * The figures of one contended run.
	 * @param failed cycles that failed before the measured period ended (a run with any throws instead of returning)
	 * @param cpuNanosPerCycle CPU time of the worker threads per cycle started in the measured period, in
	 * nanoseconds; NaN when not measured (other processes)
	 * @param allocatedBytesPerCycle bytes the worker threads allocated per cycle started in the measured period; NaN
	 * when not measured
	 */
	public record Result(long completed, double seconds, Samples waits, List<Long> completedPerProcess, long failed,
			double cpuNanosPerCycle, double allocatedBytesPerCycle) {

		public Result(long completed, double seconds, Samples waits, List<Long> completedPerProcess) {
			this(completed, seconds, waits, completedPerProcess, 0, Double.NaN, Double.NaN);
		}

		public Result(long completed, double seconds, Samples waits) {
			this(completed, seconds, waits, List.of(completed));
		}

		/** Critical sections completed per second of the measured period. */
		public double perSecond() {
			return this.completed / this.seconds;
		}

	}

	/**
	 * Runs {@code threads} threads on the contender.
	 * @param resources the resources; each cycle picks one at random (one entry = one hot resource)
	 * @param hold how long each critical section lasts (0 = none)
	 * @param warmup how long the threads run before counting starts
	 * @param measure how long counting lasts
	 * @throws IllegalStateException if a cycle of the contender failed before the measured period ended, with the number
	 * of failed cycles (of all cycles run) in the message and the first failure as the cause (the next few are
	 * suppressed exceptions). Not a failure: a cycle that was still waiting when the period ended, which is
	 * interrupted (a starved waiter of a polling lock can wait far longer than the period), and any cycle after that.
	 */
	public static Result run(Contender contender, List<String> resources, int threads, Duration hold, Duration warmup,
			Duration measure) throws InterruptedException {
		long start = System.nanoTime();
		long measureFrom = start + warmup.toNanos();
		long measureUntil = measureFrom + measure.toNanos();
		long holdNanos = hold.toNanos();
		long[] counts = new long[threads];
		long[] cycles = new long[threads];
		long[] failures = new long[threads];
		Samples[] waits = new Samples[threads];
		ThreadCost[] costFrom = new ThreadCost[threads];
		ThreadCost[] costTo = new ThreadCost[threads];
		long[] costCycles = new long[threads];
		AtomicReference<Throwable> failure = new AtomicReference<>();
		java.util.concurrent.atomic.AtomicBoolean stopped = new java.util.concurrent.atomic.AtomicBoolean();
		List<Thread> workers = new ArrayList<>();
		for (int t = 0; t < threads; t++) {
			int index = t;
			waits[t] = new Samples();
			Thread worker = new Thread(() -> {
				long[] entered = new long[1];
				try {
					loop: while (System.nanoTime() < measureUntil && !stopped.get()) {
						String resource = resources.get(ThreadLocalRandom.current().nextInt(resources.size()));
						long attempt = System.nanoTime();
						if (costFrom[index] == null && attempt >= measureFrom) {
							costFrom[index] = ThreadCost.now();
						}
						if (costFrom[index] != null) {
							costCycles[index]++;
						}
						try {
							contender.cycle(resource, () -> {
								entered[0] = System.nanoTime();
								if (holdNanos > 0) {
									LockSupport.parkNanos(holdNanos);
								}
							});
						}
						catch (Throwable ex) {
							if (stopped.get()) {
								break loop; // interrupted after the measured period (or failed after it): not counted
							}
							failures[index]++;
							cycles[index]++;
							Throwable first = failure.compareAndExchange(null, ex);
							if (first != null && first != ex && first.getSuppressed().length < 4) {
								first.addSuppressed(ex);
							}
							if (ex instanceof InterruptedException) {
								Thread.currentThread().interrupt();
								break loop;
							}
							LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1)); // no busy loop on a database that is down
							continue;
						}
						cycles[index]++;
						long done = System.nanoTime();
						if (done >= measureFrom && done <= measureUntil) {
							counts[index]++; // throughput: sections completed inside the measured period
							if (attempt >= measureFrom) {
								waits[index].add(entered[0] - attempt);
							}
						}
					}
				}
				finally {
					if (costFrom[index] != null) {
						costTo[index] = ThreadCost.now();
					}
				}
			}, contender.kind().name().toLowerCase() + "-" + t);
			workers.add(worker);
			worker.start();
		}
		// When the measured period ends, a thread may still be waiting for the lock (a starved waiter of a polling
		// lock can wait far longer than the period): give it a moment, then interrupt it. What happens after the
		// period is not counted, so a failure caused by that interrupt is not one.
		TimeUnit.NANOSECONDS.sleep(Math.max(0, measureUntil - System.nanoTime()));
		stopped.set(true);
		for (Thread worker : workers) {
			worker.join(TimeUnit.SECONDS.toMillis(5));
		}
		for (Thread worker : workers) {
			worker.interrupt();
		}
		for (Thread worker : workers) {
			worker.join(TimeUnit.MINUTES.toMillis(2));
			if (worker.isAlive()) {
				throw new IllegalStateException(contender.kind().label() + ": " + worker.getName()
						+ " did not stop within 2 minutes of being interrupted");
			}
		}
		long completed = 0;
		long failed = 0;
		long run = 0;
		Samples all = new Samples();
		long cpu = 0;
		long allocated = 0;
		long costed = 0;
		for (int t = 0; t < threads; t++) {
			if (costFrom[t] != null && costTo[t] != null) {
				cpu += costTo[t].cpuNanos() - costFrom[t].cpuNanos();
				allocated += costTo[t].allocatedBytes() - costFrom[t].allocatedBytes();
				costed += costCycles[t];
			}
			completed += counts[t];
			failed += failures[t];
			run += cycles[t];
			all.addAll(waits[t]);
		}
		if (failed > 0) {
			throw new IllegalStateException(contender.kind().label() + ": " + failed + " of " + run
					+ " cycles failed under contention (" + threads + " threads, " + resources.size()
					+ " resources); the first failure is the cause", failure.get());
		}
		return new Result(completed, measure.toNanos() / 1e9, all, List.of(completed), failed,
				(costed > 0) ? cpu / (double) costed : Double.NaN, (costed > 0) ? allocated / (double) costed : Double.NaN);
	}

	/** {@code count} resources named {@code r-0} … from the pre-filled tables. */
	public static List<String> resources(int count) {
		List<String> names = new ArrayList<>(count);
		for (int i = 0; i < count; i++) {
			names.add("r-" + i);
		}
		return names;
	}

}
