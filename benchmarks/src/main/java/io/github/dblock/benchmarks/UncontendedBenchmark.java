package io.github.dblock.benchmarks;

import java.util.concurrent.ThreadLocalRandom;

import com.zaxxer.hikari.HikariDataSource;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * Scenarios 1 and 5: one thread, acquire and release on a random one of the table's resources (no contention),
 * for each contender. The pool and the tables are shared by every contender of the run.
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

	private HikariDataSource pool;

	private Contender contender;

	private int rows;

	private static final Runnable NOTHING = () -> {
	};

	@Setup(Level.Trial)
	public void setUp() {
		this.pool = BenchDatabase.get().newPool(4, "bench-uncontended");
		boolean large = this.table.equals("large");
		this.rows = large ? this.largeRows : BenchSchema.SMALL_ROWS;
		this.contender = Contenders.create(Contender.Kind.valueOf(this.kind), this.pool,
				large ? BenchSchema.LARGE : BenchSchema.SMALL, "jmh");
	}

	@TearDown(Level.Trial)
	public void tearDown() {
		this.contender.close();
		this.pool.close();
	}

	/** One uncontended acquire and release on a random resource of the table. */
	@Benchmark
	public void acquireAndRelease() throws Exception {
		this.contender.cycle("r-" + ThreadLocalRandom.current().nextInt(this.rows), NOTHING);
	}

}
