package io.github.dblock.benchmarks;

import java.util.concurrent.ThreadLocalRandom;

import org.jspecify.annotations.Nullable;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * Scenarios 1 and 5: one thread, acquire and release on a random one of the table's resources (no contention),
 * for each contender; on the small table every resource is used once before measuring. The pool and the tables
 * are shared by every contender of the run.
 */
@State(Scope.Benchmark)
public class UncontendedBenchmark {

	/** A {@link Contender.Kind} name. */
	@Param("LEASE")
	public String kind;

	/** {@code small}: 1,000 rows; {@code large}: the run's large table (LEASE only). */
	@Param("small")
	public String table;

	/** Rows of the large table in this run. */
	@Param("1000000")
	public int largeRows;

	private Contender contender;

	private int rows;

	/**
	 * The small table's resource names, kept for the whole trial as an application keeps its constant names (ShedLock
	 * remembers the names it has inserted in a weak map, so a fresh string per call made it insert again after a GC).
	 */
	private java.util.@Nullable List<String> names; // null: the large table, whose names are made per call

	private static final Runnable NOTHING = () -> {
	};

	/** The measuring thread's cost over the measured iterations of the last trial, and its operations. */
	private static volatile ThreadCost measuredCost = new ThreadCost(0, 0);

	private static volatile long measuredOperations;

	private long operations;

	private @Nullable ThreadCost iterationStart;

	/** The benchmark thread's CPU time and allocated bytes over the measured iterations of the last trial. */
	static ThreadCost lastMeasuredCost() {
		return measuredCost;
	}

	/** The operations those were spent on. */
	static long lastMeasuredOperations() {
		return measuredOperations;
	}

	@Setup(Level.Trial)
	public void setUp() {
		measuredCost = new ThreadCost(0, 0);
		measuredOperations = 0;
		boolean large = this.table.equals("large");
		this.rows = large ? this.largeRows : BenchSchema.SMALL_ROWS;
		this.contender = Contenders.pooled(Contender.Kind.valueOf(this.kind), BenchDatabase.get(), BenchmarkRun.POOL,
				large ? BenchSchema.LARGE : BenchSchema.SMALL, "jmh");
		if (!large) {
			this.names = Contention.resources(this.rows);
			// every resource once before measuring: first-use costs (ShedLock's INSERT IGNORE of a name it has not
			// seen, a PESSIMISTIC execute's check that the row exists) are not what this scenario measures
			for (String name : this.names) {
				try {
					this.contender.cycle(name, NOTHING);
				}
				catch (Exception ex) {
					throw new IllegalStateException(ex);
				}
			}
		}
	}

	/** Starts counting the cost of a measured iteration (on the benchmark thread: one thread, forks 0). */
	@Setup(Level.Iteration)
	public void startIteration(org.openjdk.jmh.infra.IterationParams iteration) {
		this.operations = 0;
		this.iterationStart = (iteration.getType() == org.openjdk.jmh.runner.IterationType.MEASUREMENT)
				? ThreadCost.now() : null;
	}

	/** Adds a measured iteration's cost to the trial's. */
	@TearDown(Level.Iteration)
	public void endIteration() {
		ThreadCost start = this.iterationStart;
		if (start != null) {
			ThreadCost spent = start.since();
			ThreadCost total = measuredCost;
			measuredCost = new ThreadCost(total.cpuNanos() + spent.cpuNanos(),
					total.allocatedBytes() + spent.allocatedBytes());
			measuredOperations += this.operations;
		}
	}

	@TearDown(Level.Trial)
	public void tearDown() {
		this.contender.close();
	}

	/** One uncontended acquire and release on a random resource of the table. */
	@Benchmark
	public void acquireAndRelease() throws Exception {
		this.operations++;
		int n = ThreadLocalRandom.current().nextInt(this.rows);
		this.contender.cycle((this.names != null) ? this.names.get(n) : "r-" + n, NOTHING);
	}

}
