package io.github.dblock.benchmarks;

import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockMode;
import io.github.dblock.LockTemplate;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.util.Statistics;

/**
 * Runs every scenario against one server and writes the report. Entry point of the documented full run
 * ({@code ./mvnw -pl benchmarks -am verify -Pbenchmarks}, through {@code BenchmarkRunTests}) and of the smoke run
 * of {@code ./mvnw verify}.
 */
public final class BenchmarkRun {

	static final Contender.Kind[] LOCKS = Contender.Kind.measurable(Contender.Kind.LEASE, Contender.Kind.PESSIMISTIC,
			Contender.Kind.PESSIMISTIC_SERVER_CLOCK, Contender.Kind.OPTIMISTIC, Contender.Kind.SHEDLOCK,
			Contender.Kind.JDBC_LOCK_REGISTRY, Contender.Kind.RAW_LEASE_UPSERT, Contender.Kind.MINIMAL_FOR_UPDATE,
			Contender.Kind.GET_LOCK, Contender.Kind.REDISSON);

	/** Connections of each contender's own pool in the contended scenarios run in this JVM. */
	static final int POOL = 20;

	/**
	 * The contenders of the hot-lock scenarios (2 and 3): {@link #LOCKS}, PESSIMISTIC with {@code fencing =
	 * server-clock}, and the two row-lock baselines (PESSIMISTIC's statements in plain JDBC, and the bare
	 * {@code SELECT … FOR UPDATE} that writes nothing); Redisson where {@code -Dbench.redis-url} is given.
	 */
	static final Contender.Kind[] HOT = Contender.Kind.measurable(Contender.Kind.LEASE, Contender.Kind.PESSIMISTIC,
			Contender.Kind.PESSIMISTIC_SERVER_CLOCK, Contender.Kind.PLAIN_PESSIMISTIC, Contender.Kind.BARE_ROW_LOCK,
			Contender.Kind.OPTIMISTIC, Contender.Kind.SHEDLOCK, Contender.Kind.JDBC_LOCK_REGISTRY,
			Contender.Kind.MINIMAL_FOR_UPDATE, Contender.Kind.GET_LOCK, Contender.Kind.REDISSON);

	/** The hold times of scenarios 2 and 3, in milliseconds. */
	private static final int[] HOLDS = { 0, 1 };

	private final Settings settings;

	private final BenchDatabase db;

	private final Results results = new Results();

	public BenchmarkRun(Settings settings, BenchDatabase db) {
		this.settings = settings;
		this.db = db;
	}

	/**
	 * Runs the scenarios and writes the report into {@code -Dbench.output} (default {@code docs}) with the settings
	 * named by {@code -Dbench.mode} (default {@code full}).
	 */
	public static void main(String[] args) throws Exception {
		Settings settings = Settings.named(System.getProperty("bench.mode", "full"));
		Path output = Path.of(System.getProperty("bench.output", "docs"));
		Results results = new BenchmarkRun(settings, BenchDatabase.get()).run();
		new Report(settings, results).write(output);
	}

	/** Runs the scenarios in order; throws if any contender fails. */
	public Results run() throws Exception {
		System.setProperty("java.awt.headless", "true");
		long started = System.nanoTime();
		try (HikariDataSource pool = this.db.newPool(24, "bench")) {
			log("creating tables (" + this.settings.largeRows() + " rows in the large one)");
			BenchSchema.create(this.db, pool, this.settings.largeRows());
			environment(pool);
			log("scenario 1: uncontended latency");
			uncontended();
			FloorComparison.Params floors = FloorComparison.Params.of(this.settings);
			log("against the minimal loops: " + floors.rounds() + " rotated round(s) per scenario");
			this.results.floors.putAll(FloorComparison.run(this.db, "ush", floors, null));
			log("scenario 5: table size");
			tableSize();
			log("scenario 6: @DistributedLock overhead");
			annotation();
			log("scenario 2: one hot resource, 8 threads, " + this.settings.hotRounds() + " round(s)");
			Map<Integer, Map<Contender.Kind, List<Results.Throughput>>> inJvm = new LinkedHashMap<>();
			for (int round = 0; round < this.settings.hotRounds(); round++) {
				for (int hold : HOLDS) {
					for (Contender.Kind kind : rotated(round)) {
						try (Contender contender = Contenders.pooled(kind, this.db, POOL, BenchSchema.SMALL, "jvm")) {
							inJvm.computeIfAbsent(hold, (h) -> new EnumMap<>(Contender.Kind.class))
								.computeIfAbsent(kind, (k) -> new ArrayList<>())
								.add(throughput(kind, Contention.run(contender, List.of("hot-jvm-" + hold), 8,
										Duration.ofMillis(hold), this.settings.warmup(), this.settings.hotMeasure())));
						}
					}
				}
			}
			inJvm.forEach((hold, byKind) -> this.results.hotInJvm.put(hold, medianRounds(byKind)));
			log("scenario 3: one hot resource across processes, " + this.settings.hotRounds() + " round(s)");
			List<ProcessScenarios.Phase> phases = new ArrayList<>();
			for (int round = 0; round < this.settings.hotRounds(); round++) {
				for (int hold : HOLDS) {
					for (Contender.Kind kind : rotated(round)) {
						phases.add(new ProcessScenarios.Phase(kind, Duration.ofMillis(hold)));
					}
				}
			}
			List<Contention.Result> processResults = ProcessScenarios.contend(this.db, phases, "hot-processes-",
					this.settings.processes(), this.settings.threadsPerProcess(), this.settings.warmup(),
					this.settings.hotMeasure());
			Map<Integer, Map<Contender.Kind, List<Results.Throughput>>> acrossProcesses = new LinkedHashMap<>();
			for (int i = 0; i < phases.size(); i++) {
				ProcessScenarios.Phase phase = phases.get(i);
				acrossProcesses.computeIfAbsent((int) phase.hold().toMillis(), (h) -> new EnumMap<>(Contender.Kind.class))
					.computeIfAbsent(phase.kind(), (k) -> new ArrayList<>())
					.add(throughput(phase.kind(), processResults.get(i)));
			}
			acrossProcesses.forEach((hold, byKind) -> this.results.hotAcrossProcesses.put(hold, medianRounds(byKind)));
			this.results.hotAcrossProcessesRounds.putAll(acrossProcesses);
			log("scenario 4: 16 threads over 1,000 resources");
			for (Contender.Kind kind : LOCKS) {
				try (Contender contender = Contenders.pooled(kind, this.db, POOL, BenchSchema.SMALL, "spread")) {
					this.results.spread.add(throughput(kind, Contention.run(contender,
							Contention.resources(BenchSchema.SMALL_ROWS), 16, Duration.ZERO, this.settings.warmup(),
							this.settings.measure())));
				}
			}
			log("scenario 9: read/write locks, one hot resource, 8 threads");
			this.results.readWrite.addAll(ReadWriteScenario.run(pool, this.settings));
			log("scenario 7: heap after touching up to " + this.settings.heapResources() + " distinct resources");
			heap(pool);
			log("scenario 8: recovery after SIGKILL");
			for (LockMode mode : new LockMode[] { LockMode.LEASE, LockMode.PESSIMISTIC }) {
				List<ProcessScenarios.Recovery> list = new ArrayList<>();
				for (int i = 0; i < this.settings.crashRepetitions(); i++) {
					list.add(ProcessScenarios.crash(this.db, pool, mode, "crash-" + mode + "-" + i,
							this.settings.crashLease()));
				}
				this.results.recovery.put(mode.name(), list);
			}
			log("scenario 10: a semaphore of N = 1, 2, 4 permits, 8 threads, 1 ms inside");
			semaphore(pool);
			log("scenario 11: idempotency keys, first calls, duplicates and bursts of 8 concurrent duplicates");
			this.results.idempotency = IdempotencyScenario.run(pool, BenchSchema.SMALL, this.settings.measure(), 8);
			log("scenario 12: commit-time validation on and off, the same transaction under a LEASE lock");
			this.results.commitValidation = CommitValidationScenario.run(pool, BenchSchema.SMALL, this.settings.warmup(),
					this.settings.measure().multipliedBy(CommitValidationScenario.MEASURE_FACTOR));
		}
		this.results.environment.put("run time", (System.nanoTime() - started) / 1_000_000_000 + " s");
		return this.results;
	}

	private void environment(HikariDataSource pool) {
		Runtime runtime = Runtime.getRuntime();
		this.results.environment.put("date", Instant.now().toString());
		this.results.environment.put("mode", this.settings.name());
		this.results.environment.put("server", this.db.queryString("SELECT VERSION()") + " (" + this.db.description()
				+ ")");
		this.results.environment.put("innodb_flush_log_at_trx_commit",
				this.db.queryString("SELECT @@innodb_flush_log_at_trx_commit"));
		this.results.environment.put("log_bin / sync_binlog",
				this.db.queryString("SELECT CONCAT(@@log_bin, ' / ', @@sync_binlog)"));
		this.results.environment.put("machine", runtime.availableProcessors() + " cores visible to the JVM, "
				+ System.getProperty("os.name") + " " + System.getProperty("os.arch"));
		this.results.environment.put("JVM", System.getProperty("java.vm.name") + " " + System.getProperty("java.version")
				+ ", max heap " + runtime.maxMemory() / (1024 * 1024) + " MB");
		this.results.environment.put("connection pool", "HikariCP; in this JVM a pool of " + POOL
				+ " connections per contender (worker processes of scenario 3: threads + 2 per contender); Connector/J with "
				+ "cachePrepStmts=true, prepStmtCacheSize=250, prepStmtCacheSqlLimit=4096, useLocalSessionState=true, "
				+ "tcpNoDelay=true, client-side prepared statements (the raw lease upsert's pool also useAffectedRows=true)"
				+ ((Contenders.redisUrl() != null) ? "; Redisson: a client of " + Contenders.REDIS_POOL
						+ " connections per contender" : ""));
	}

	private void uncontended() throws RunnerException {
		Contender.Kind[] kinds = Contender.Kind.measurable();
		java.util.Map<Contender.Kind, List<Results.Latency>> rounds = new java.util.EnumMap<>(Contender.Kind.class);
		for (int round = 0; round < this.settings.rounds(); round++) {
			List<String> order = new ArrayList<>();
			for (int i = 0; i < kinds.length; i++) {
				order.add(kinds[(i + round * 3) % kinds.length].name());
			}
			for (String kind : order) {
				Collection<RunResult> runs = new Runner(jmh(UncontendedBenchmark.class.getName()).param("kind", kind)
					.param("table", "small")
					.build()).run();
				Contender.Kind k = Contender.Kind.valueOf(kind);
				rounds.computeIfAbsent(k, (x) -> new ArrayList<>())
					.add(withCost(latency(k.label(), find(runs, "kind", kind))));
			}
		}
		for (Contender.Kind kind : kinds) {
			this.results.uncontended.add(medianOf(kind.label(), Objects.requireNonNull(rounds.get(kind))));
		}
	}

	/**
	 * {@link #HOT} in round {@code round}'s order: each round starts further along the list, so that no contender
	 * always runs first (in freshly started worker JVMs, with a cold JIT and pool) or always follows the same one.
	 */
	private List<Contender.Kind> rotated(int round) {
		int shift = round * Math.max(1, HOT.length / this.settings.hotRounds());
		List<Contender.Kind> order = new ArrayList<>();
		for (int i = 0; i < HOT.length; i++) {
			order.add(HOT[(shift + i) % HOT.length]);
		}
		return order;
	}

	/**
	 * Per contender, in {@link #HOT} order, the round with the median rate (the lower middle one for an even count),
	 * whole: its waits and per-process split belong to the same measurement as its rate.
	 */
	static List<Results.Throughput> medianRounds(Map<Contender.Kind, List<Results.Throughput>> byKind) {
		List<Results.Throughput> medians = new ArrayList<>();
		for (Contender.Kind kind : HOT) {
			List<Results.Throughput> rounds = byKind.get(kind);
			if (rounds != null) {
				List<Results.Throughput> sorted = new ArrayList<>(rounds);
				sorted.sort(java.util.Comparator.comparingDouble(Results.Throughput::perSecond));
				medians.add(sorted.get((sorted.size() - 1) / 2));
			}
		}
		return medians;
	}

	/** The median across rounds of each statistic, and the samples of all rounds. */
	private static Results.Latency medianOf(String label, List<Results.Latency> rounds) {
		return new Results.Latency(label, median(rounds, Results.Latency::p50), median(rounds, Results.Latency::p99),
				median(rounds, Results.Latency::mean), rounds.stream().mapToLong(Results.Latency::samples).sum(),
				median(rounds, Results.Latency::cpuMicrosPerOp), median(rounds, Results.Latency::allocatedBytesPerOp));
	}

	private static double median(List<Results.Latency> rounds, java.util.function.ToDoubleFunction<Results.Latency> f) {
		double[] values = rounds.stream().mapToDouble(f).sorted().toArray();
		return (values.length % 2 == 1) ? values[values.length / 2]
				: (values[values.length / 2 - 1] + values[values.length / 2]) / 2;
	}

	private void tableSize() throws RunnerException {
		for (String table : new String[] { "small", "large" }) {
			Collection<RunResult> runs = new Runner(jmh(UncontendedBenchmark.class.getName())
				.param("kind", Contender.Kind.LEASE.name())
				.param("table", table)
				.param("largeRows", String.valueOf(this.settings.largeRows()))
				.build()).run();
			int rows = table.equals("small") ? BenchSchema.SMALL_ROWS : this.settings.largeRows();
			this.results.tableSize.add(withCost(latency("LEASE, " + rows + " rows", find(runs, "table", table))));
		}
	}

	/** The figures with the measuring thread's CPU time and allocated bytes per operation of the last JMH trial. */
	private static Results.Latency withCost(Results.Latency l) {
		ThreadCost cost = UncontendedBenchmark.lastMeasuredCost();
		long operations = UncontendedBenchmark.lastMeasuredOperations();
		return new Results.Latency(l.label(), l.p50(), l.p99(), l.mean(), l.samples(),
				(operations > 0) ? cost.cpuNanos() / 1000.0 / operations : Double.NaN,
				(operations > 0) ? cost.allocatedBytes() / (double) operations : Double.NaN);
	}

	private void annotation() throws RunnerException {
		AnnotationOverheadBenchmark.resetCosts();
		Collection<RunResult> runs = new Runner(jmh(AnnotationOverheadBenchmark.class.getName()).build()).run();
		for (String method : new String[] { "template", "annotated", "templateReentrant", "annotatedReentrant" }) {
			RunResult run = runs.stream()
				.filter((r) -> r.getParams().getBenchmark().endsWith("." + method))
				.findFirst()
				.orElseThrow();
			Results.Latency l = latency(method, run);
			double[] cost = AnnotationOverheadBenchmark.costPerOp(method);
			this.results.annotation.add(new Results.Latency(l.label(), l.p50(), l.p99(), l.mean(), l.samples(), cost[0],
					cost[1]));
		}
	}

	/**
	 * Scenario 7: distinct resources of the large table (rows exist), 16 threads, until the run's count or time
	 * budget is reached, whichever comes first.
	 */
	private void heap(HikariDataSource pool) throws Exception {
		int max = Math.min(this.settings.heapResources(), this.settings.largeRows());
		int offset = 0;
		for (LockMode mode : new LockMode[] { LockMode.LEASE, LockMode.PESSIMISTIC }) {
			LockTemplate template = Contenders.template(mode, pool, BenchSchema.LARGE, "heap");
			template.execute("r-" + offset, (lock) -> null); // loads the classes and the provider's caches
			long before = usedHeapAfterGc();
			long deadline = System.nanoTime() + this.settings.heapBudget().toNanos();
			java.util.concurrent.atomic.AtomicInteger next = new java.util.concurrent.atomic.AtomicInteger(1);
			java.util.concurrent.atomic.AtomicInteger done = new java.util.concurrent.atomic.AtomicInteger(1);
			ExecutorService threads = Executors.newFixedThreadPool(16);
			List<Future<?>> futures = new ArrayList<>();
			int first = offset;
			for (int t = 0; t < 16; t++) {
				futures.add(threads.submit(() -> {
					while (System.nanoTime() < deadline) {
						int i = next.getAndIncrement();
						if (i >= max) {
							break;
						}
						template.execute("r-" + ((first + i) % this.settings.largeRows()), (lock) -> null);
						done.incrementAndGet();
					}
					return null;
				}));
			}
			for (Future<?> future : futures) {
				future.get(30, TimeUnit.MINUTES);
			}
			threads.shutdown();
			int touched = done.get();
			long after = usedHeapAfterGc();
			this.results.heap.add(new Results.Heap(mode.name(), touched, before, after, template.introspection().localResourceCount()));
			java.lang.ref.Reference.reachabilityFence(template);
			offset = (offset + max / 2) % this.settings.largeRows();
		}
	}

	/** Scenario 10: throughput of one semaphore as N grows, and the most holders seen inside at once. */
	private void semaphore(HikariDataSource pool) throws InterruptedException {
		for (int permits : new int[] { 1, 2, 4 }) {
			try (Contenders.SemaphoreContender contender = Contenders.semaphore(pool, BenchSchema.SMALL, "semaphore")) {
				String name = "hot-semaphore-" + permits;
				contender.semaphores().setPermits(name, permits);
				Contention.Result result = Contention.run(contender, List.of(name), 8, Duration.ofMillis(1),
						this.settings.warmup(), this.settings.measure());
				Results.Throughput t = throughput(Contender.Kind.SEMAPHORE, result);
				this.results.semaphore.add(new Results.SemaphoreRun(permits, new Results.Throughput("N = " + permits,
						t.perSecond(), t.waitP50Millis(), t.waitP99Millis(), t.completed(), t.waitSamples(),
						t.completedPerProcess(), t.cpuMicrosPerOp(), t.allocatedBytesPerOp()), contender.mostInside()));
			}
		}
	}

	private static long usedHeapAfterGc() throws InterruptedException {
		long used = Long.MAX_VALUE;
		for (int i = 0; i < 5; i++) {
			System.gc();
			Thread.sleep(100);
			used = Math.min(used, ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed());
		}
		return used;
	}

	private ChainedOptionsBuilder jmh(String include) {
		TimeValue iteration = TimeValue.milliseconds(this.settings.jmhIteration().toMillis());
		return new OptionsBuilder().include("^" + java.util.regex.Pattern.quote(include) + "\\.")
			.mode(Mode.SampleTime)
			.timeUnit(TimeUnit.MICROSECONDS)
			.forks(0) // in this JVM: the embedded server, the tables and the pools are set up once for all
			.threads(1)
			.warmupIterations(this.settings.jmhWarmupIterations())
			.warmupTime(iteration)
			.measurementIterations(this.settings.jmhMeasurementIterations())
			.measurementTime(iteration)
			.shouldFailOnError(true)
			.verbosity(this.settings.name().equals("smoke") ? org.openjdk.jmh.runner.options.VerboseMode.SILENT
					: org.openjdk.jmh.runner.options.VerboseMode.NORMAL);
	}

	private static RunResult find(Collection<RunResult> runs, String param, String value) {
		return runs.stream()
			.filter((r) -> value.equals(r.getParams().getParam(param)))
			.findFirst()
			.orElseThrow(() -> new IllegalStateException("no JMH result for " + param + "=" + value));
	}

	private static Results.Latency latency(String label, RunResult run) {
		Statistics stats = run.getPrimaryResult().getStatistics();
		return new Results.Latency(label, stats.getPercentile(50), stats.getPercentile(99), stats.getMean(),
				stats.getN());
	}

	private static Results.Throughput throughput(Contender.Kind kind, Contention.Result result) {
		return Results.Throughput.of(kind.label(), result);
	}

	private static void log(String message) {
		System.out.println("[benchmarks] " + Instant.now() + " " + message);
	}

}
