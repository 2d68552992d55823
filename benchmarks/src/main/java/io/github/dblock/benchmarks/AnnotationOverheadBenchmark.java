package io.github.dblock.benchmarks;

import java.util.concurrent.ThreadLocalRandom;

import io.github.dblock.DistributedLock;
import io.github.dblock.LockHandle;
import io.github.dblock.LockTemplate;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;

/**
 * Scenario 6: the cost of {@code @DistributedLock} over calling the {@link LockTemplate} directly, in a Spring
 * Boot context built by the auto-configuration. The {@code …Reentrant} pair runs while the calling thread already
 * holds the lock, so no SQL runs and the difference is the advisor's own cost (proxy, attribute lookup, SpEL
 * evaluation of {@code "r-#{#id}"}); the other pair acquires and releases on a random one of 1,000 rows.
 */
public class AnnotationOverheadBenchmark {

	/** The Spring context, shared by the benchmark's threads. */
	@State(Scope.Benchmark)
	public static class Context {

		ConfigurableApplicationContext context;

		LockTemplate template;

		Service service;

		/** The trial and the {@link Held} states using the context: JMH tears states down in no fixed order. */
		private final java.util.concurrent.atomic.AtomicInteger users = new java.util.concurrent.atomic.AtomicInteger();

		@Setup(Level.Trial)
		public void start() {
			BenchDatabase db = BenchDatabase.get();
			this.context = new SpringApplicationBuilder(App.class).web(WebApplicationType.NONE)
				.properties("spring.datasource.url=" + db.jdbcUrl(), "spring.datasource.username=" + db.username(),
						"spring.datasource.password=" + db.password(), "spring.main.banner-mode=off",
						"distributed-lock.table-name=" + BenchSchema.SMALL.name(), "logging.level.root=WARN")
				.run();
			this.users.set(1);
			this.template = this.context.getBean(LockTemplate.class);
			this.service = this.context.getBean(Service.class);
		}

		@TearDown(Level.Trial)
		public void stop() {
			release();
		}

		void use() {
			this.users.incrementAndGet();
		}

		void release() {
			if (this.users.decrementAndGet() == 0) {
				this.context.close();
			}
		}

	}

	/** The lock the reentrant pair runs under, held by the benchmark thread for the whole trial. */
	@State(Scope.Thread)
	public static class Held {

		LockHandle outer;

		Context context;

		/** Not a constant, so that both calls build the resource name at run time. */
		String id = "hot";

		@Setup(Level.Trial)
		public void take(Context context) {
			context.use();
			this.context = context;
			this.outer = context.template.acquire("r-hot");
		}

		@TearDown(Level.Trial)
		public void release() {
			try {
				this.outer.close();
			}
			finally {
				this.context.release();
			}
		}

	}

	/** Per benchmark method: the measuring thread's CPU ns, allocated bytes and operations over measured iterations. */
	private static final java.util.Map<String, long[]> COSTS = new java.util.concurrent.ConcurrentHashMap<>();

	/** Forgets the costs of an earlier run. */
	static void resetCosts() {
		COSTS.clear();
	}

	/** The benchmark thread's CPU time (µs) and allocated bytes per operation of a method in the last run, or NaN. */
	static double[] costPerOp(String method) {
		long[] c = COSTS.get(method);
		return (c == null || c[2] == 0) ? new double[] { Double.NaN, Double.NaN }
				: new double[] { c[0] / 1000.0 / c[2], c[1] / (double) c[2] };
	}

	/** Counts a benchmark thread's operations and its cost over each measured iteration. */
	@State(Scope.Thread)
	public static class Cost {

		long operations;

		@org.jspecify.annotations.Nullable ThreadCost start;

		String method = "";

		@Setup(Level.Iteration)
		public void start(org.openjdk.jmh.infra.BenchmarkParams benchmark, org.openjdk.jmh.infra.IterationParams iteration) {
			String name = benchmark.getBenchmark();
			this.method = name.substring(name.lastIndexOf('.') + 1);
			this.operations = 0;
			this.start = (iteration.getType() == org.openjdk.jmh.runner.IterationType.MEASUREMENT) ? ThreadCost.now()
					: null;
		}

		@TearDown(Level.Iteration)
		public void end() {
			ThreadCost from = this.start;
			if (from != null) {
				ThreadCost spent = from.since();
				long[] total = COSTS.computeIfAbsent(this.method, (m) -> new long[3]);
				synchronized (total) {
					total[0] += spent.cpuNanos();
					total[1] += spent.allocatedBytes();
					total[2] += this.operations;
				}
			}
		}

	}

	@Benchmark
	public int template(Context context, Cost cost) {
		cost.operations++;
		String id = String.valueOf(ThreadLocalRandom.current().nextInt(BenchSchema.SMALL_ROWS));
		return java.util.Objects.requireNonNull(context.template.execute("r-" + id, (lock) -> 1));
	}

	@Benchmark
	public int annotated(Context context, Cost cost) {
		cost.operations++;
		return context.service.work(String.valueOf(ThreadLocalRandom.current().nextInt(BenchSchema.SMALL_ROWS)));
	}

	@Benchmark
	public int templateReentrant(Context context, Held held, Cost cost) {
		cost.operations++;
		return java.util.Objects.requireNonNull(context.template.execute("r-" + held.id, (lock) -> 1));
	}

	@Benchmark
	public int annotatedReentrant(Context context, Held held, Cost cost) {
		cost.operations++;
		return context.service.work(held.id);
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Service benchService() {
			return new Service();
		}

	}

	/** The annotated bean. */
	public static class Service {

		@DistributedLock(resource = "r-#{#id}")
		public int work(String id) {
			return 1;
		}

	}

}
