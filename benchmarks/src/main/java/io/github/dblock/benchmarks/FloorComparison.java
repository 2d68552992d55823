package io.github.dblock.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Our modes against the minimal loops a user would write, in one run against one server, each contender on a pool
 * of its own ({@link #POOL} connections, {@link BenchDatabase#newPool} driver settings), with the JVM's CPU time and
 * allocated bytes per operation beside every figure (summed over the threads that run the cycles; the library's
 * renewal thread is not counted); uncontended, also the thread's user CPU time alone, without the kernel's share
 * (on a loopback connection the kernel's TCP work, which varies with the machine's load, is charged to the sending
 * thread). Scenarios ({@code -Dbench.scenarios}, default {@code ush}): {@code u} one thread,
 * acquire + release on a random one of 1,000 rows, cycles of one contender for {@code bench.uncontended-ms} (default
 * 1,500) at a time; {@code s} 16 threads over 1,000 resources; {@code h} one hot resource, 8 threads in this JVM, hold
 * 0. Each runs {@code bench.rounds} rounds (default 3), the order of the contenders rotating from round to round; the
 * figure printed is the median of the rounds, with the lowest and highest. Contenders: {@code -Dbench.kinds} (kind
 * names, comma-separated), by default each scenario's own list. Run with {@code -Dbench.jdbc-url=...}.
 */
public final class FloorComparison {

	static final int POOL = 20;

	private static final Contender.Kind[] UNCONTENDED = { Contender.Kind.LEASE, Contender.Kind.RAW_LEASE_UPSERT,
			Contender.Kind.TWO_WRITES, Contender.Kind.PESSIMISTIC_SERVER_CLOCK, Contender.Kind.MINIMAL_FOR_UPDATE,
			Contender.Kind.BARE_ROW_LOCK, Contender.Kind.GET_LOCK };

	private static final Contender.Kind[] SPREAD = { Contender.Kind.LEASE, Contender.Kind.RAW_LEASE_UPSERT,
			Contender.Kind.PESSIMISTIC_SERVER_CLOCK, Contender.Kind.MINIMAL_FOR_UPDATE, Contender.Kind.GET_LOCK };

	private static final Contender.Kind[] HOT = { Contender.Kind.LEASE, Contender.Kind.GET_LOCK };

	private static final Runnable NOTHING = () -> {
	};

	private FloorComparison() {
	}

	/** One contender's figures in one round. */
	record Figure(double value, double p99, double cpuMicros, double allocatedBytes, double userCpuMicros) {

		Figure(double value, double p99, double cpuMicros, double allocatedBytes) {
			this(value, p99, cpuMicros, allocatedBytes, Double.NaN);
		}

	}

	public static void main(String[] args) throws Exception {
		String only = System.getProperty("bench.scenarios", "ush");
		int rounds = Integer.getInteger("bench.rounds", 3);
		Duration warmup = Duration.ofMillis(Long.getLong("bench.warmup-ms", 2000));
		Duration measure = Duration.ofMillis(Long.getLong("bench.measure-ms", 5000));
		Duration slice = Duration.ofMillis(Long.getLong("bench.uncontended-ms", 1500));
		BenchDatabase db = BenchDatabase.get();
		try (com.zaxxer.hikari.HikariDataSource setup = db.newPool(2, "bench-setup")) {
			BenchSchema.create(db, setup, 1_000);
		}
		List<String> resources = Contention.resources(BenchSchema.SMALL_ROWS);
		if (only.contains("u")) {
			Contender.Kind[] kinds = kinds(UNCONTENDED);
			print("uncontended acquire + release, 1 thread, p50 µs", kinds, rounds(kinds, rounds, (kind) -> {
				try (Contender contender = Contenders.pooled(kind, db, POOL, BenchSchema.SMALL, "floor")) {
					for (String name : resources) {
						contender.cycle(name, NOTHING); // every row once: first-use costs are not measured
					}
					return uncontended(contender, resources, slice);
				}
			}), "p50 µs");
		}
		if (only.contains("s")) {
			Contender.Kind[] kinds = kinds(SPREAD);
			print("16 threads over 1,000 resources, cycles/s", kinds, rounds(kinds, rounds, (kind) -> {
				try (Contender contender = Contenders.pooled(kind, db, POOL, BenchSchema.SMALL, "floor")) {
					return figure(Contention.run(contender, resources, 16, Duration.ZERO, warmup, measure));
				}
			}), "cycles/s");
		}
		if (only.contains("h")) {
			Contender.Kind[] kinds = kinds(HOT);
			print("one hot resource, 8 threads in this JVM, hold 0, cycles/s", kinds, rounds(kinds, rounds, (kind) -> {
				try (Contender contender = Contenders.pooled(kind, db, POOL, BenchSchema.SMALL, "floor")) {
					return figure(Contention.run(contender, List.of("floor-hot"), 8, Duration.ZERO, warmup, measure));
				}
			}), "cycles/s");
		}
	}

	interface Measurement {

		Figure measure(Contender.Kind kind) throws Exception;

	}

	private static Contender.Kind[] kinds(Contender.Kind[] defaults) {
		String names = System.getProperty("bench.kinds", "");
		return names.isBlank() ? defaults
				: Arrays.stream(names.split(",")).map(String::trim).map(Contender.Kind::valueOf).toArray(Contender.Kind[]::new);
	}

	private static Map<Contender.Kind, List<Figure>> rounds(Contender.Kind[] kinds, int rounds, Measurement measurement)
			throws Exception {
		Map<Contender.Kind, List<Figure>> figures = new EnumMap<>(Contender.Kind.class);
		for (int round = 0; round < rounds; round++) {
			for (int i = 0; i < kinds.length; i++) {
				Contender.Kind kind = kinds[(round + i) % kinds.length];
				Figure figure = measurement.measure(kind);
				System.out.printf(Locale.ROOT,
						"[floor] round %d %-40s %12.1f  p99 %9.2f  cpu %8.1f µs/op  alloc %9.0f B/op  user %8.1f µs/op%n",
						round + 1, kind.label(), figure.value(), figure.p99(), figure.cpuMicros(), figure.allocatedBytes(),
						figure.userCpuMicros());
				figures.computeIfAbsent(kind, (k) -> new ArrayList<>()).add(figure);
			}
		}
		return figures;
	}

	private static Figure figure(Contention.Result result) {
		return new Figure(result.perSecond(), result.waits().percentileMillis(99), result.cpuNanosPerCycle() / 1000,
				result.allocatedBytesPerCycle());
	}

	/** Cycles of one contender on random resources, one thread, for the given time: p50 and p99 in µs. */
	private static Figure uncontended(Contender contender, List<String> resources, Duration slice) throws Exception {
		Samples samples = new Samples();
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
		ThreadCost cost = from.since();
		long user = java.lang.management.ManagementFactory.getThreadMXBean().getCurrentThreadUserTime() - userFrom;
		return new Figure(samples.percentileMillis(50) * 1000, samples.percentileMillis(99) * 1000,
				cost.cpuNanos() / 1000.0 / cycles, cost.allocatedBytes() / (double) cycles, user / 1000.0 / cycles);
	}

	private static void print(String title, Contender.Kind[] kinds, Map<Contender.Kind, List<Figure>> figures,
			String unit) {
		System.out.println();
		System.out.println("### " + title);
		System.out.println();
		System.out.println("| contender | " + unit + " (median, min–max) | ratio to " + kinds[kinds.length - 1].label()
				+ " | CPU µs/op | allocated B/op |");
		System.out.println("|---|---:|---:|---:|---:|");
		double reference = median(java.util.Objects.requireNonNull(figures.get(kinds[kinds.length - 1])), Figure::value);
		for (Contender.Kind kind : kinds) {
			List<Figure> list = java.util.Objects.requireNonNull(figures.get(kind));
			double value = median(list, Figure::value);
			System.out.printf(Locale.ROOT, "| %s | %.1f (%.1f–%.1f) | %.2f | %.1f | %.0f |%n", kind.label(), value,
					list.stream().mapToDouble(Figure::value).min().orElse(Double.NaN),
					list.stream().mapToDouble(Figure::value).max().orElse(Double.NaN), value / reference,
					median(list, Figure::cpuMicros), median(list, Figure::allocatedBytes));
		}
		System.out.println();
	}

	private static double median(List<Figure> figures, java.util.function.ToDoubleFunction<Figure> f) {
		double[] values = figures.stream().mapToDouble(f).sorted().toArray();
		return (values.length % 2 == 1) ? values[values.length / 2]
				: (values[values.length / 2 - 1] + values[values.length / 2]) / 2;
	}

}
