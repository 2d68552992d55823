package io.github.dblock.benchmarks;

import io.github.dblock.jdbc.pessimistic.PessimisticLockProvider;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;

/**
 * The JDBC calls of one uncontended LEASE and PESSIMISTIC ({@code server-clock}) acquire + release, counted per
 * cycle over {@code bench.cycles} cycles (default 2,000) on random rows of the small table, with the thread's CPU
 * time and allocated bytes per cycle; for profiling with JFR alongside. Run with {@code -Dbench.jdbc-url=...}.
 */
public final class CycleProfile {

	private CycleProfile() {
	}

	public static void main(String[] args) throws Exception {
		int cycles = Integer.getInteger("bench.cycles", 2000);
		BenchDatabase db = BenchDatabase.get();
		try (HikariDataSource pool = db.newPool(FloorComparison.POOL, "bench-profile")) {
			if (!Boolean.getBoolean("bench.keep-schema")) {
				BenchSchema.create(db, pool, 1_000);
			}
			JdbcCallCount counted = new JdbcCallCount(pool);
			List<String> names = Contention.resources(BenchSchema.SMALL_ROWS);
			for (LockMode mode : new LockMode[] { LockMode.LEASE, LockMode.PESSIMISTIC }) {
				LockTemplate template = Contenders.template(mode,
						(mode == LockMode.PESSIMISTIC) ? io.github.dblock.jdbc.pessimistic.PessimisticLockProvider.Fencing.SERVER_CLOCK
								: io.github.dblock.jdbc.pessimistic.PessimisticLockProvider.Fencing.DURABLE,
						counted, BenchSchema.SMALL, "profile");
				LockOptions options = LockOptions.defaults().withWaitTime(Contenders.WAIT);
				for (String name : names) {
					template.acquire(name, options).close();
				}
				counted.reset();
				ThreadCost from = ThreadCost.now();
				long started = System.nanoTime();
				for (int i = 0; i < cycles; i++) {
					template.acquire(names.get(i % names.size()), options).close();
				}
				long elapsed = System.nanoTime() - started;
				ThreadCost cost = from.since();
				System.out.printf(Locale.ROOT, "[profile] %s: %.1f µs/cycle wall, %.1f µs CPU, %.0f B allocated%n", mode,
						elapsed / 1000.0 / cycles, cost.cpuNanos() / 1000.0 / cycles, cost.allocatedBytes() / (double) cycles);
				for (Map.Entry<String, Long> call : counted.counts().entrySet()) {
					System.out.printf(Locale.ROOT, "[profile]   %-45s %.2f per cycle%n", call.getKey(),
							call.getValue() / (double) cycles);
				}
			}
		}
	}

}
