package io.github.dblock.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

import com.zaxxer.hikari.HikariDataSource;

/**
 * The issue-20 comparison of PESSIMISTIC with the bare row lock, in one run against one server, without the rest of
 * the harness: (1) uncontended acquire + release, one thread, a random one of 1,000 existing rows per cycle, in 5
 * rounds of interleaved cycles (one of each contender in turn), the median of the rounds' p50; (2) one hot row, 8 threads in this
 * JVM; (3) one hot row, 2 JVMs × 4 threads; (4) 16 threads over 1,000 rows. Hold 0 and 1 ms in (2) and (3). Prints
 * each figure and its ratio to the bare row lock of the same scenario. Run with {@code -Dbench.jdbc-url=...};
 * {@code -Dbench.hot-rounds=n} runs (2) and (3) in n rounds of every contender, the order rotating from round to
 * round, and prints the medians; by default as many rounds as contenders, so that each runs first once.
 */
public final class PessimisticComparison {

	private static final Contender.Kind[] KINDS = { Contender.Kind.BARE_ROW_LOCK, Contender.Kind.PESSIMISTIC_SERVER_CLOCK,
			Contender.Kind.PESSIMISTIC, Contender.Kind.PLAIN_PESSIMISTIC };

	private PessimisticComparison() {
	}

	public static void main(String[] args) throws Exception {
		Duration warmup = Duration.ofSeconds(Long.getLong("bench.warmup-s", 2));
		Duration measure = Duration.ofSeconds(Long.getLong("bench.measure-s", 8));
		int rounds = Integer.getInteger("bench.rounds", 5);
		String only = System.getProperty("bench.scenarios", "1234");
		BenchDatabase db = BenchDatabase.get();
		try (HikariDataSource pool = db.newPool(24, "bench")) {
			BenchSchema.create(db, pool, 1_000);
			if (only.contains("1")) {
				uncontended(pool, rounds, Duration.ofMillis(1500));
			}
			if (only.contains("f")) {
				fixCost(pool, rounds, Duration.ofMillis(1500));
			}
			if (only.contains("2")) {
				for (int hold : new int[] { 0, 1 }) {
					hotRowInOneJvm(pool, hold, Integer.getInteger("bench.hot-rounds", KINDS.length), warmup, measure);
				}
			}
			if (only.contains("3")) {
				hotRowAcrossJvms(db, Integer.getInteger("bench.hot-rounds", KINDS.length), warmup, measure);
			}
			if (only.contains("4")) {
				Map<Contender.Kind, Double> rates = new EnumMap<>(Contender.Kind.class);
				for (Contender.Kind kind : KINDS) {
					try (Contender contender = Contenders.create(kind, pool, BenchSchema.SMALL, "spread")) {
						rates.put(kind, Contention.run(contender, Contention.resources(BenchSchema.SMALL_ROWS), 16,
								Duration.ZERO, warmup, measure).perSecond());
					}
				}
				print("4. 16 threads over 1,000 rows, sections/s", rates);
			}
		}
	}

	/**
	 * Scenario 2, one hot row and 8 threads in this JVM, in {@code rounds} rounds; each round runs every contender once,
	 * starting one further along {@link #KINDS} than the round before, so that a slow phase of the shared machine hits
	 * all alike. Prints each round's figures and ratios, then the medians of the rates and of the ratios.
	 */
	private static void hotRowInOneJvm(HikariDataSource pool, int hold, int rounds, Duration warmup, Duration measure)
			throws Exception {
		Map<Contender.Kind, List<Double>> rates = new EnumMap<>(Contender.Kind.class);
		Map<Contender.Kind, List<Double>> ratios = new EnumMap<>(Contender.Kind.class);
		for (int round = 0; round < rounds; round++) {
			Map<Contender.Kind, Double> figures = new EnumMap<>(Contender.Kind.class);
			for (int i = 0; i < KINDS.length; i++) {
				Contender.Kind kind = KINDS[(round + i) % KINDS.length];
				try (Contender contender = Contenders.create(kind, pool, BenchSchema.SMALL, "jvm")) {
					figures.put(kind, Contention.run(contender, List.of("cmp-hot-jvm-" + hold), 8, Duration.ofMillis(hold),
							warmup, measure).perSecond());
				}
			}
			double bare = java.util.Objects.requireNonNull(figures.get(Contender.Kind.BARE_ROW_LOCK), "the bare row lock ran");
			figures.forEach((kind, value) -> {
				rates.computeIfAbsent(kind, (k) -> new ArrayList<>()).add(value);
				ratios.computeIfAbsent(kind, (k) -> new ArrayList<>()).add(value / bare);
			});
			if (rounds > 1) {
				print("2. one hot row, 8 threads in one JVM, hold " + hold + " ms, round " + (round + 1) + ", sections/s",
						figures);
			}
		}
		String title = "2. one hot row, 8 threads in one JVM, hold " + hold + " ms, sections/s";
		if (rounds == 1) {
			print(title, medians(rates));
			return;
		}
		System.out.println("RESULT " + title + ", median of " + rounds + " rounds (ratio: median of the rounds' ratios)");
		Map<Contender.Kind, Double> medianRatios = medians(ratios);
		medians(rates).forEach((kind, value) -> System.out.printf("RESULT   %-45s %10.1f  %.2f x bare%n", kind.label(),
				value, medianRatios.get(kind)));
	}

	/**
	 * Scenario 3, one hot row and 2 JVMs × 4 threads, in {@code rounds} rounds of every contender at hold 0 and 1 ms,
	 * in the same worker JVMs; each round starts one further along {@link #KINDS} than the round before, so that no
	 * contender always runs first in freshly started JVMs (a cold JIT and pool slowed the bare loop by up to 2.4 ×
	 * when it always did). Prints the medians of the rates and of the per-round ratios to the bare row lock.
	 */
	private static void hotRowAcrossJvms(BenchDatabase db, int rounds, Duration warmup, Duration measure)
			throws Exception {
		List<ProcessScenarios.Phase> phases = new ArrayList<>();
		for (int round = 0; round < rounds; round++) {
			for (int hold : new int[] { 0, 1 }) {
				for (int i = 0; i < KINDS.length; i++) {
					phases.add(new ProcessScenarios.Phase(KINDS[(round + i) % KINDS.length], Duration.ofMillis(hold)));
				}
			}
		}
		List<Contention.Result> results = ProcessScenarios.contend(db, phases, "cmp-hot-processes-", 2, 4, warmup,
				measure);
		for (int hold : new int[] { 0, 1 }) {
			Map<Contender.Kind, List<Double>> rates = new EnumMap<>(Contender.Kind.class);
			Map<Contender.Kind, List<Double>> ratios = new EnumMap<>(Contender.Kind.class);
			for (int round = 0; round < rounds; round++) {
				Map<Contender.Kind, Double> figures = new EnumMap<>(Contender.Kind.class);
				int first = round * 2 * KINDS.length + ((hold == 0) ? 0 : KINDS.length);
				for (int i = first; i < first + KINDS.length; i++) {
					figures.put(phases.get(i).kind(), results.get(i).perSecond());
				}
				double bare = java.util.Objects.requireNonNull(figures.get(Contender.Kind.BARE_ROW_LOCK), "the bare row lock ran");
				figures.forEach((kind, value) -> {
					rates.computeIfAbsent(kind, (k) -> new ArrayList<>()).add(value);
					ratios.computeIfAbsent(kind, (k) -> new ArrayList<>()).add(value / bare);
				});
			}
			System.out.println("RESULT 3. one hot row, 2 JVMs x 4 threads, hold " + hold + " ms, sections/s, median of "
					+ rounds + " round(s) (ratio: median of the rounds' ratios)");
			Map<Contender.Kind, Double> medianRatios = medians(ratios);
			medians(rates).forEach((kind, value) -> System.out.printf("RESULT   %-45s %10.1f  %.2f x bare%n",
					kind.label(), value, medianRatios.get(kind)));
		}
	}

	private static Map<Contender.Kind, Double> medians(Map<Contender.Kind, List<Double>> values) {
		Map<Contender.Kind, Double> medians = new EnumMap<>(Contender.Kind.class);
		values.forEach((kind, list) -> medians.put(kind, list.stream().mapToDouble(Double::doubleValue).sorted()
			.toArray()[list.size() / 2]));
		return medians;
	}

	private static void uncontended(HikariDataSource pool, int rounds, Duration perRound) throws Exception {
		Map<Contender.Kind, List<Double>> p50s = new EnumMap<>(Contender.Kind.class);
		List<Contender> contenders = new ArrayList<>();
		for (Contender.Kind kind : KINDS) {
			Contender contender = Contenders.create(kind, pool, BenchSchema.SMALL, "uncontended");
			for (int r = 0; r < BenchSchema.SMALL_ROWS; r++) {
				contender.cycle("r-" + r, () -> {
				});
			}
			contenders.add(contender);
		}
		// interleaved: one cycle of each contender in turn, so that a slow phase of the shared machine hits all alike
		for (int round = 0; round < rounds; round++) {
			long[][] samples = new long[contenders.size()][50_000];
			int n = 0;
			long end = System.nanoTime() + perRound.toNanos() * contenders.size();
			while (System.nanoTime() < end && n < samples[0].length) {
				String resource = "r-" + ThreadLocalRandom.current().nextInt(BenchSchema.SMALL_ROWS);
				for (int i = 0; i < contenders.size(); i++) {
					long start = System.nanoTime();
					contenders.get(i).cycle(resource, () -> {
					});
					samples[i][n] = System.nanoTime() - start;
				}
				n++;
			}
			for (int i = 0; i < contenders.size(); i++) {
				long[] sorted = Arrays.copyOf(samples[i], n);
				Arrays.sort(sorted);
				p50s.computeIfAbsent(contenders.get(i).kind(), (k) -> new ArrayList<>()).add(sorted[n / 2] / 1000.0);
			}
		}
		Map<Contender.Kind, Double> medians = new EnumMap<>(Contender.Kind.class);
		p50s.forEach((kind, list) -> {
			double[] values = list.stream().mapToDouble(Double::doubleValue).sorted().toArray();
			medians.put(kind, values[values.length / 2]);
		});
		print("1. uncontended acquire+release, p50 us (median of " + rounds + " rounds): " + p50s, medians);
		for (Contender contender : contenders) {
			contender.close();
		}
	}

	/**
	 * The cost of the soak fix for {@code fencing = durable}, in plain JDBC, interleaved: the old single locking
	 * {@code UPDATE} (token {@code GREATEST(fencing_token + 1, clock at its start)}) against the locking read
	 * followed by the {@code UPDATE} (clock after the grant), uncontended on 1,000 existing rows; p50 µs.
	 */
	private static void fixCost(HikariDataSource pool, int rounds, Duration perRound) throws Exception {
		String micros = "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))";
		String t = BenchSchema.SMALL.quoted();
		String oldSql = "SET STATEMENT innodb_lock_wait_timeout=60 FOR UPDATE " + t + " SET owner_token = ?, holder = ?,"
				+ " fencing_token = LAST_INSERT_ID(GREATEST(fencing_token + 1, " + micros + ")), acquired_at = UTC_TIMESTAMP(6),"
				+ " expires_at = UTC_TIMESTAMP(6) WHERE resource = ? AND expires_at <= UTC_TIMESTAMP(6)";
		Contender old = new Contender() {

			@Override
			public Contender.Kind kind() {
				return Contender.Kind.TWO_WRITES; // a label slot only: "old durable statements"
			}

			@Override
			public void cycle(String resource, Runnable section) throws Exception {
				try (java.sql.Connection c = pool.getConnection(); java.sql.Statement s = c.createStatement()) {
					s.execute("START TRANSACTION");
					try (java.sql.PreparedStatement ps = c.prepareStatement(oldSql, java.sql.Statement.RETURN_GENERATED_KEYS)) {
						ps.setString(1, java.util.UUID.randomUUID().toString());
						ps.setString(2, "plain-jdbc");
						ps.setBytes(3, resource.getBytes(java.nio.charset.StandardCharsets.UTF_8));
						if (ps.executeUpdate() != 1 && ps.executeUpdate() != 1) {
							throw new IllegalStateException("row " + resource);
						}
					}
					section.run();
					s.execute("COMMIT");
				}
			}

		};
		Contender bare = Contenders.create(Contender.Kind.BARE_ROW_LOCK, pool, BenchSchema.SMALL, "fix");
		Contender now = Contenders.create(Contender.Kind.PLAIN_PESSIMISTIC, pool, BenchSchema.SMALL, "fix");
		List<Contender> list = Boolean.getBoolean("bench.fix-reversed") ? List.of(bare, now, old) : List.of(bare, old, now);
		Map<Contender.Kind, List<Double>> p50s = new EnumMap<>(Contender.Kind.class);
		for (int round = 0; round < rounds; round++) {
			long[][] samples = new long[list.size()][50_000];
			int n = 0;
			long end = System.nanoTime() + perRound.toNanos() * list.size();
			while (System.nanoTime() < end && n < samples[0].length) {
				String resource = "r-" + ThreadLocalRandom.current().nextInt(BenchSchema.SMALL_ROWS);
				for (int i = 0; i < list.size(); i++) {
					long start = System.nanoTime();
					list.get(i).cycle(resource, () -> {
					});
					samples[i][n] = System.nanoTime() - start;
				}
				n++;
			}
			for (int i = 0; i < list.size(); i++) {
				long[] sorted = Arrays.copyOf(samples[i], n);
				Arrays.sort(sorted);
				p50s.computeIfAbsent(list.get(i).kind(), (k) -> new ArrayList<>()).add(sorted[n / 2] / 1000.0);
			}
		}
		Map<Contender.Kind, Double> medians = new EnumMap<>(Contender.Kind.class);
		p50s.forEach((kind, values) -> medians.put(kind, values.stream().mapToDouble(Double::doubleValue).sorted()
			.toArray()[values.size() / 2]));
		print("f. durable statements, old single UPDATE (label 'two writes') vs read + UPDATE (label 'JDBC row lock'),"
				+ " p50 us: " + p50s, medians);
	}

	private static void print(String title, Map<Contender.Kind, Double> figures) {
		double bare = java.util.Objects.requireNonNull(figures.get(Contender.Kind.BARE_ROW_LOCK), "the bare row lock ran");
		System.out.println("RESULT " + title);
		figures.forEach((kind, value) -> System.out.printf("RESULT   %-45s %10.1f  %.2f x bare%n", kind.label(), value,
				value / bare));
	}

}
