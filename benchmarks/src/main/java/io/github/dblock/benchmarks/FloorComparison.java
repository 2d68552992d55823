package io.github.dblock.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.ToDoubleFunction;

/**
 * Our modes and the peers against the minimal loops a user would write, each contender on a pool of its own
 * ({@link #POOL} connections, {@link BenchDatabase#newPool} driver settings), with the JVM's CPU time and allocated
 * bytes per operation beside every figure (summed over the threads that run the cycles; the library's renewal thread
 * is not counted); uncontended, also the thread's user CPU time alone. Three scenarios ({@link Scenario}): one
 * thread on a random one of 1,000 rows, 16 threads over 1,000 resources, and one hot resource with 8 threads in this
 * JVM, hold 0. Each runs in rounds, the order of the contenders rotating from round to round; a figure is the median
 * of the rounds, with the lowest and highest. {@link BenchmarkRun} runs it as part of the report ({@link #run});
 * {@link #main} runs it alone and prints the tables ({@code -Dbench.scenarios}, default {@code ush};
 * {@code -Dbench.rounds}, {@code -Dbench.warmup-ms}, {@code -Dbench.measure-ms}, {@code -Dbench.uncontended-ms};
 * {@code -Dbench.kinds} to pick the contenders). Not thread-safe.
 */
public final class FloorComparison {

	static final int POOL = 20;

	private static final Runnable NOTHING = () -> {
	};

	private FloorComparison() {
	}

	/** The three scenarios, each with its contenders (those this run can measure) and its unit. */
	public enum Scenario {

		UNCONTENDED('u', "uncontended acquire + release, 1 thread, a random one of 1,000 resources", "p50 µs",
				Contender.Kind.LEASE, Contender.Kind.PESSIMISTIC_SERVER_CLOCK, Contender.Kind.SHEDLOCK,
				Contender.Kind.JDBC_LOCK_REGISTRY, Contender.Kind.REDISSON, Contender.Kind.RAW_LEASE_UPSERT,
				Contender.Kind.TWO_WRITES, Contender.Kind.MINIMAL_FOR_UPDATE, Contender.Kind.BARE_ROW_LOCK,
				Contender.Kind.GET_LOCK),
		SPREAD('s', "16 threads over 1,000 resources", "sections/s", Contender.Kind.LEASE,
				Contender.Kind.PESSIMISTIC_SERVER_CLOCK, Contender.Kind.SHEDLOCK, Contender.Kind.JDBC_LOCK_REGISTRY,
				Contender.Kind.REDISSON, Contender.Kind.RAW_LEASE_UPSERT, Contender.Kind.MINIMAL_FOR_UPDATE,
				Contender.Kind.GET_LOCK),
		HOT('h', "one hot resource, 8 threads in one JVM, hold 0", "sections/s", Contender.Kind.LEASE,
				Contender.Kind.PESSIMISTIC_SERVER_CLOCK, Contender.Kind.SHEDLOCK, Contender.Kind.JDBC_LOCK_REGISTRY,
				Contender.Kind.REDISSON, Contender.Kind.MINIMAL_FOR_UPDATE, Contender.Kind.GET_LOCK);

		private final char letter;

		private final String title;

		private final String unit;

		private final Contender.Kind[] kinds;

		Scenario(char letter, String title, String unit, Contender.Kind... kinds) {
			this.letter = letter;
			this.title = title;
			this.unit = unit;
			this.kinds = kinds;
		}

		/** What the scenario measures, for a heading. */
		public String title() {
			return this.title;
		}

		/** The unit of its main figure: µs (lower is better) or sections per second (higher is better). */
		public String unit() {
			return this.unit;
		}

		/** Whether a lower figure is better (latency). */
		public boolean lowerIsBetter() {
			return this == UNCONTENDED;
		}

		/** Its contenders that this run can measure. */
		public Contender.Kind[] kinds() {
			return Contender.Kind.measurable(this.kinds);
		}

		/**
		 * The minimal loop a contender is compared with: the lease upsert for a lease (and its baselines), the minimal
		 * {@code FOR UPDATE} loop for a row lock; on the hot resource {@code GET_LOCK}, the server's own queue, except
		 * for PESSIMISTIC, whose floor stays the {@code FOR UPDATE} loop.
		 */
		public Contender.Kind floor(Contender.Kind kind) {
			boolean rowLock = kind == Contender.Kind.PESSIMISTIC_SERVER_CLOCK || kind == Contender.Kind.BARE_ROW_LOCK;
			if (this == HOT) {
				return rowLock ? Contender.Kind.MINIMAL_FOR_UPDATE : Contender.Kind.GET_LOCK;
			}
			return (rowLock || kind == Contender.Kind.MINIMAL_FOR_UPDATE || kind == Contender.Kind.GET_LOCK)
					? Contender.Kind.MINIMAL_FOR_UPDATE : Contender.Kind.RAW_LEASE_UPSERT;
		}

	}

	/**
	 * One contender's figures in one round: the main figure (p50 µs or sections/s), p99 (µs, or the wait's in ms),
	 * CPU µs and allocated bytes per operation, user CPU µs per operation (NaN where not measured).
	 */
	public record Figure(double value, double p99, double cpuMicros, double allocatedBytes, double userCpuMicros) {

		Figure(double value, double p99, double cpuMicros, double allocatedBytes) {
			this(value, p99, cpuMicros, allocatedBytes, Double.NaN);
		}

	}

	/**
	 * How long each part runs.
	 * @param rounds rotated rounds per scenario
	 * @param warmup before each contended measurement
	 * @param measure each contended measurement
	 * @param slice each uncontended measurement
	 * @param touchAll whether each contender uses every resource once before its uncontended measurement (first-use
	 * costs are then not measured)
	 */
	public record Params(int rounds, Duration warmup, Duration measure, Duration slice, boolean touchAll) {

		/** The parameters of a report run with the given settings: at least 3 rounds in the full run, 1 in smoke. */
		public static Params of(Settings settings) {
			boolean full = settings.name().equals("full");
			return new Params(full ? Math.max(3, settings.hotRounds()) : 1, settings.warmup(), settings.hotMeasure(),
					full ? Duration.ofMillis(1500) : Duration.ofMillis(200), full);
		}

	}

	/** One scenario's rounds: per contender, its figure of each round, in round order. */
	public record Table(Scenario scenario, Contender.Kind[] kinds, Map<Contender.Kind, List<Figure>> rounds) {

		/**
		 * The contender's figures, one per round.
		 * @throws NullPointerException if it was not measured
		 */
		public List<Figure> of(Contender.Kind kind) {
			return Objects.requireNonNull(this.rounds.get(kind), kind::label);
		}

		/** Whether the contender was measured. */
		public boolean has(Contender.Kind kind) {
			return this.rounds.containsKey(kind);
		}

		/** The median across rounds of one figure of the contender. */
		public double median(Contender.Kind kind, ToDoubleFunction<Figure> f) {
			return FloorComparison.median(of(kind).stream().mapToDouble(f).toArray());
		}

		/** The median of the main figure. */
		public double median(Contender.Kind kind) {
			return median(kind, Figure::value);
		}

		/** The lowest and highest main figure across rounds. */
		public double[] range(Contender.Kind kind) {
			double[] values = of(kind).stream().mapToDouble(Figure::value).toArray();
			return new double[] { Arrays.stream(values).min().orElse(Double.NaN),
					Arrays.stream(values).max().orElse(Double.NaN) };
		}

		/** The ratio of the contender's median to the median of {@code floor}. */
		public double ratio(Contender.Kind kind, Contender.Kind floor) {
			return this.median(kind) / this.median(floor);
		}

		/** The contender's ratio to {@code floor} in each round (both ran in every round): median, lowest, highest. */
		public double[] roundRatios(Contender.Kind kind, Contender.Kind floor) {
			List<Figure> a = of(kind);
			List<Figure> b = of(floor);
			double[] ratios = new double[Math.min(a.size(), b.size())];
			for (int i = 0; i < ratios.length; i++) {
				ratios[i] = a.get(i).value() / b.get(i).value();
			}
			return new double[] { FloorComparison.median(ratios), Arrays.stream(ratios).min().orElse(Double.NaN),
					Arrays.stream(ratios).max().orElse(Double.NaN) };
		}

	}

	/** Runs the scenarios alone and prints their tables. */
	public static void main(String[] args) throws Exception {
		String only = System.getProperty("bench.scenarios", "ush");
		Params params = new Params(Integer.getInteger("bench.rounds", 3),
				Duration.ofMillis(Long.getLong("bench.warmup-ms", 2000)),
				Duration.ofMillis(Long.getLong("bench.measure-ms", 5000)),
				Duration.ofMillis(Long.getLong("bench.uncontended-ms", 1500)), true);
		BenchDatabase db = BenchDatabase.get();
		try (com.zaxxer.hikari.HikariDataSource setup = db.newPool(2, "bench-setup")) {
			BenchSchema.create(db, setup, 1_000);
		}
		String names = System.getProperty("bench.kinds", "");
		Contender.Kind[] kinds = names.isBlank() ? null
				: Arrays.stream(names.split(",")).map(String::trim).map(Contender.Kind::valueOf)
					.toArray(Contender.Kind[]::new);
		for (Table table : run(db, only, params, kinds).values()) {
			print(table);
		}
	}

	/**
	 * Runs the scenarios named by the letters of {@code only} ({@code u}, {@code s}, {@code h}) against tables that
	 * exist ({@link BenchSchema#create}); {@code kinds} replaces each scenario's contenders when not null.
	 */
	public static Map<Scenario, Table> run(BenchDatabase db, String only, Params params,
			Contender.Kind @org.jspecify.annotations.Nullable [] kinds) throws Exception {
		List<String> resources = Contention.resources(BenchSchema.SMALL_ROWS);
		Map<Scenario, Table> tables = new LinkedHashMap<>();
		for (Scenario scenario : Scenario.values()) {
			if (only.indexOf(scenario.letter) < 0) {
				continue;
			}
			Contender.Kind[] list = (kinds != null) ? kinds : scenario.kinds();
			tables.put(scenario, new Table(scenario, list, rounds(scenario, list, params.rounds(), (kind) -> {
				try (Contender contender = Contenders.pooled(kind, db, POOL, BenchSchema.SMALL, "floor")) {
					return switch (scenario) {
						case UNCONTENDED -> {
							if (params.touchAll()) {
								for (String name : resources) {
									contender.cycle(name, NOTHING);
								}
							}
							yield uncontended(contender, resources, params.slice());
						}
						case SPREAD -> contended(contender, resources, 16, params);
						case HOT -> contended(contender, List.of("floor-hot"), 8, params);
					};
				}
			})));
		}
		return tables;
	}

	interface Measurement {

		Figure measure(Contender.Kind kind) throws Exception;

	}

	private static Map<Contender.Kind, List<Figure>> rounds(Scenario scenario, Contender.Kind[] kinds, int rounds,
			Measurement measurement) throws Exception {
		Map<Contender.Kind, List<Figure>> figures = new EnumMap<>(Contender.Kind.class);
		for (int round = 0; round < rounds; round++) {
			for (int i = 0; i < kinds.length; i++) {
				Contender.Kind kind = kinds[(round + i) % kinds.length];
				Figure figure = measurement.measure(kind);
				System.out.printf(Locale.ROOT,
						"[floor] %s round %d %-40s %12.1f  p99 %9.2f  cpu %8.1f µs/op  alloc %9.0f B/op  user %8.1f µs/op%n",
						scenario.letter, round + 1, kind.label(), figure.value(), figure.p99(), figure.cpuMicros(),
						figure.allocatedBytes(), figure.userCpuMicros());
				figures.computeIfAbsent(kind, (k) -> new ArrayList<>()).add(figure);
			}
		}
		return figures;
	}

	private static Figure figure(Contention.Result result) {
		return new Figure(result.perSecond(), result.waits().percentileMillis(99), result.cpuNanosPerCycle() / 1000,
				result.allocatedBytesPerCycle());
	}

	/**
	 * A contended run, and for a client that does its I/O on threads of its own (Redisson's Netty event loops, named
	 * {@code redisson-*}) their CPU time and allocation too, spread over the cycles of the whole run (warm-up
	 * included, counted as the measured rate times the run's duration).
	 */
	private static Figure contended(Contender contender, List<String> resources, int threads, Params params)
			throws Exception {
		ThreadCost helpersFrom = helperThreads();
		long start = System.nanoTime();
		Figure figure = figure(Contention.run(contender, resources, threads, Duration.ZERO, params.warmup(),
				params.measure()));
		ThreadCost helpers = helperThreads().minus(helpersFrom);
		double cycles = figure.value() * (System.nanoTime() - start) / 1e9;
		if (cycles <= 0 || (helpers.cpuNanos() == 0 && helpers.allocatedBytes() == 0)) {
			return figure;
		}
		return new Figure(figure.value(), figure.p99(), figure.cpuMicros() + helpers.cpuNanos() / 1000.0 / cycles,
				figure.allocatedBytes() + helpers.allocatedBytes() / cycles, figure.userCpuMicros());
	}

	/**
	 * The CPU time and allocated bytes so far of the live threads a client library runs for its I/O (names starting
	 * with {@code redisson}); zero where there are none. A thread that ended between two readings is lost.
	 */
	static ThreadCost helperThreads() {
		java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
		long cpu = 0;
		long bytes = 0;
		for (Thread thread : Thread.getAllStackTraces().keySet()) {
			if (!thread.getName().toLowerCase(Locale.ROOT).startsWith("redisson")) {
				continue;
			}
			long id = thread.getId();
			cpu += Math.max(0, threads.getThreadCpuTime(id));
			if (threads instanceof com.sun.management.ThreadMXBean hotSpot) {
				bytes += Math.max(0, hotSpot.getThreadAllocatedBytes(id));
			}
		}
		return new ThreadCost(cpu, bytes);
	}

	/** Cycles of one contender on random resources, one thread, for the given time: p50 and p99 in µs. */
	private static Figure uncontended(Contender contender, List<String> resources, Duration slice) throws Exception {
		Samples samples = new Samples();
		ThreadCost helpersFrom = helperThreads();
		ThreadCost from = ThreadCost.now();
		long userFrom = java.lang.management.ManagementFactory.getThreadMXBean().getCurrentThreadUserTime();
		long until = System.nanoTime() + slice.toNanos();
		long cycles = 0;
		while (System.nanoTime() < until) {
			String name = resources.get(ThreadLocalRandom.current().nextInt(resources.size()));
			long start = System.nanoTime();
			contender.cycle(name, NOTHING);
			samples.add(System.nanoTime() - start);
			cycles++;
		}
		ThreadCost cost = from.since().plus(helperThreads().minus(helpersFrom));
		long user = java.lang.management.ManagementFactory.getThreadMXBean().getCurrentThreadUserTime() - userFrom;
		return new Figure(samples.percentileMillis(50) * 1000, samples.percentileMillis(99) * 1000,
				cost.cpuNanos() / 1000.0 / cycles, cost.allocatedBytes() / (double) cycles, user / 1000.0 / cycles);
	}

	private static void print(Table table) {
		System.out.println();
		System.out.println("### " + table.scenario().title());
		System.out.println();
		System.out.println("| contender | " + table.scenario().unit()
				+ " (median, min–max) | floor | ratio to floor | CPU µs/op | allocated B/op |");
		System.out.println("|---|---:|---|---:|---:|---:|");
		for (Contender.Kind kind : table.kinds()) {
			Contender.Kind floor = table.scenario().floor(kind);
			double[] range = table.range(kind);
			System.out.printf(Locale.ROOT, "| %s | %.1f (%.1f–%.1f) | %s | %s | %.1f | %.0f |%n", kind.label(),
					table.median(kind), range[0], range[1], floor.label(),
					table.has(floor) ? String.format(Locale.ROOT, "%.2f", table.ratio(kind, floor)) : "–",
					table.median(kind, Figure::cpuMicros), table.median(kind, Figure::allocatedBytes));
		}
		System.out.println();
	}

	static double median(double[] values) {
		if (values.length == 0) {
			return Double.NaN;
		}
		double[] sorted = values.clone();
		Arrays.sort(sorted);
		return (sorted.length % 2 == 1) ? sorted[sorted.length / 2]
				: (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
	}

}
