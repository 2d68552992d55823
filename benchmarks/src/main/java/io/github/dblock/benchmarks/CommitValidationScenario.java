package io.github.dblock.benchmarks;

import io.github.dblock.jdbc.sql.LockSchema;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

import javax.sql.DataSource;

import io.github.dblock.CommitValidation;
import io.github.dblock.LockMode;
import io.github.dblock.LockTemplate;
import io.github.dblock.jdbc.sql.LockTable;
import org.jspecify.annotations.Nullable;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Scenario 12: what commit-time validation ({@code distributed-lock.validate-at-commit}) costs per transaction. The
 * unit is what {@code @DistributedLock} on a {@code @Transactional} method does: take a LEASE lock, begin a
 * transaction of {@code DataSourceTransactionManager} on the lock's data source, write one row (an {@code UPDATE} by
 * primary key), commit, release the lock. It runs in three variants, interleaved one unit at a time in a rotating
 * order so that the noise of a shared machine falls on all three alike:
 * <ul>
 * <li><b>on</b>: the template and the transaction manager as the auto-configuration builds them by default (the
 * manager has the {@link CommitValidation} listener, so the commit runs the check's locking read of the lock
 * row);</li>
 * <li><b>off</b>: {@code validate-at-commit=false} (no listener, {@link LockTemplate#setValidateAtCommit} false);</li>
 * <li><b>no lock</b>: the same transaction without any lock, for scale.</li>
 * </ul>
 * Each unit records the whole cycle (take, transaction, release) and the transaction alone (begin to commit). During
 * the warm-up the scenario checks in every transaction that the check is registered with validation on and absent
 * with it off, so that it cannot silently measure two identical variants. One thread, one JVM; no speed is asserted.
 */
public final class CommitValidationScenario {

	/** The table the transactions write: {@link BenchSchema#SMALL_ROWS} rows, one per lock resource. */
	static final String DATA_TABLE = "bench_commit_data";

	/** The run measures this many times the contended scenarios' measuring time: three variants share it. */
	static final int MEASURE_FACTOR = 4;

	/** The name of the synchronization that {@link CommitValidation} registers for a hold in a transaction. */
	private static final String CHECK_CLASS = "io.github.dblock.engine.CommitCheck";

	/**
	 * The figures of one run, in nanosecond samples.
	 * @param onCycle lock + transaction + release, validation on
	 * @param onTransaction the transaction alone (begin, write, commit), validation on
	 * @param offCycle lock + transaction + release, validation off
	 * @param offTransaction the transaction alone, validation off
	 * @param noLock the same transaction without a lock
	 */
	public record Result(Samples onCycle, Samples onTransaction, Samples offCycle, Samples offTransaction,
			Samples noLock) {
	}

	private CommitValidationScenario() {
	}

	/**
	 * Runs the scenario on the lock table {@code table} (whose rows {@code r-0} … {@code r-999} exist); creates the
	 * data table anew.
	 * @param warmup how long the variants run before measuring
	 * @param measure how long they run measured
	 */
	public static Result run(DataSource pool, LockTable table, Duration warmup, Duration measure) {
		JdbcTemplate jdbc = new JdbcTemplate(pool);
		jdbc.execute("DROP TABLE IF EXISTS " + DATA_TABLE);
		jdbc.execute("CREATE TABLE " + DATA_TABLE + " (id INT NOT NULL PRIMARY KEY, n BIGINT NOT NULL) ENGINE=InnoDB");
		StringBuilder rows = new StringBuilder("INSERT INTO " + DATA_TABLE + " (id, n) VALUES ");
		for (int i = 0; i < BenchSchema.SMALL_ROWS; i++) {
			rows.append((i == 0) ? "" : ", ").append('(').append(i).append(", 0)");
		}
		jdbc.execute(rows.toString());

		LockTemplate on = Contenders.template(LockMode.LEASE, pool, table, "commit-on");
		DataSourceTransactionManager validating = new DataSourceTransactionManager(pool);
		validating.addListener(new CommitValidation());
		LockTemplate off = Contenders.template(LockMode.LEASE, pool, table, "commit-off");
		off.setValidateAtCommit(false);
		DataSourceTransactionManager plain = new DataSourceTransactionManager(pool);
		Variant withCheck = new Variant(on, new TransactionTemplate(validating), jdbc, true);
		Variant withoutCheck = new Variant(off, new TransactionTemplate(plain), jdbc, false);
		Variant noLock = new Variant(null, new TransactionTemplate(plain), jdbc, false);
		List<Variant> variants = List.of(withCheck, withoutCheck, noLock);

		loop(variants, warmup, true);
		for (Variant variant : variants) {
			variant.cycles = new Samples();
			variant.transactions = new Samples();
		}
		loop(variants, measure, false);
		return new Result(withCheck.cycles, withCheck.transactions, withoutCheck.cycles, withoutCheck.transactions,
				noLock.transactions);
	}

	/** Runs every variant once per round, in an order that rotates by one each round, until the time is up. */
	private static void loop(List<Variant> variants, Duration time, boolean verify) {
		long end = System.nanoTime() + time.toNanos();
		int round = 0;
		do {
			int id = ThreadLocalRandom.current().nextInt(BenchSchema.SMALL_ROWS);
			for (int i = 0; i < variants.size(); i++) {
				variants.get((i + round) % variants.size()).unit(id, verify);
			}
			round++;
		}
		while (System.nanoTime() < end);
	}

	/** One of the three variants and its samples. */
	private static final class Variant {

		/** The lock the transaction runs under; {@code null} for the variant without a lock. */
		private final @Nullable LockTemplate lock;

		private final TransactionTemplate template;

		private final JdbcTemplate jdbc;

		private final boolean validated;

		Samples cycles = new Samples();

		Samples transactions = new Samples();

		Variant(@Nullable LockTemplate lock, TransactionTemplate transactions, JdbcTemplate jdbc, boolean validated) {
			this.lock = lock;
			this.template = transactions;
			this.jdbc = jdbc;
			this.validated = validated;
		}

		void unit(int id, boolean verify) {
			ThreadCost from = ThreadCost.now();
			long start = System.nanoTime();
			if (this.lock == null) {
				transaction(id, verify);
			}
			else {
				this.lock.executeWithoutResult("r-" + id, (held) -> transaction(id, verify));
			}
			this.cycles.add(System.nanoTime() - start, from.since());
		}

		private void transaction(int id, boolean verify) {
			ThreadCost from = ThreadCost.now();
			long start = System.nanoTime();
			this.template.executeWithoutResult((status) -> {
				if (this.jdbc.update("UPDATE " + DATA_TABLE + " SET n = n + 1 WHERE id = ?", id) != 1) {
					throw new IllegalStateException("row " + id + " of " + DATA_TABLE + " is missing");
				}
				if (verify) {
					boolean registered = TransactionSynchronizationManager.getSynchronizations()
						.stream()
						.anyMatch((s) -> s.getClass().getName().equals(CHECK_CLASS));
					if (registered != this.validated) {
						throw new IllegalStateException("commit-time validation is " + (registered ? "" : "not ")
								+ "registered in a transaction of the variant with validation "
								+ (this.validated ? "on" : "off"));
					}
				}
			});
			this.transactions.add(System.nanoTime() - start, from.since());
		}

	}

	/**
	 * Runs the scenario alone against {@code -Dbench.jdbc-url} (or the embedded server) with the settings of
	 * {@code -Dbench.mode} (default {@code full}) and prints the figures. With {@code -Dbench.output=DIR} it also
	 * puts section 12 and its target rows into {@code DIR/BENCHMARKS.md}, replacing those of an earlier run, and says
	 * in the section that it was run alone: the other sections keep the figures of their own run.
	 */
	public static void main(String[] args) throws Exception {
		Settings settings = Settings.named(System.getProperty("bench.mode", "full"));
		BenchDatabase db = BenchDatabase.get();
		Results results = new Results();
		try (com.zaxxer.hikari.HikariDataSource pool = db.newPool(8, "bench-commit-validation")) {
			io.github.dblock.jdbc.sql.LockSchema.migrate(pool, BenchSchema.SMALL);
			results.commitValidation = run(pool, BenchSchema.SMALL, settings.warmup(),
					settings.measure().multipliedBy(MEASURE_FACTOR));
			Result result = results.commitValidation;
			for (Object[] row : new Object[][] { { "on, cycle", result.onCycle() }, { "off, cycle", result.offCycle() },
					{ "on, transaction", result.onTransaction() }, { "off, transaction", result.offTransaction() },
					{ "no lock, transaction", result.noLock() } }) {
				Samples s = (Samples) row[1];
				System.out.printf("%-22s p50 %7.0f µs  p99 %7.0f µs  (%d)%n", row[0], s.percentileMillis(50) * 1000,
						s.percentileMillis(99) * 1000, s.size());
			}
			String output = System.getProperty("bench.output", "");
			if (!output.isBlank()) {
				String note = "Run alone (`CommitValidationScenario.main`, " + settings.name() + " settings) on "
						+ java.time.Instant.now() + " against " + db.queryString("SELECT VERSION()") + " ("
						+ db.description() + ", `innodb_flush_log_at_trx_commit` = "
						+ db.queryString("SELECT @@innodb_flush_log_at_trx_commit") + "), load average "
						+ String.format(java.util.Locale.ROOT, "%.1f",
								java.lang.management.ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage())
						+ " on " + Runtime.getRuntime().availableProcessors() + " cores; the other sections are from "
						+ "the run described at the top.\n\n";
				splice(java.nio.file.Path.of(output, "BENCHMARKS.md"),
						new Report(settings, results).commitValidationOnly(), note);
			}
		}
	}

	/** Replaces section 12 of the report (up to the next section), or adds it at the end. */
	static void splice(java.nio.file.Path file, String[] section, String note) throws java.io.IOException {
		String md = java.nio.file.Files.readString(file);
		String heading = "## 12. Commit-time validation";
		String body = section[0];
		int paragraph = body.indexOf("\n\n") + 2; // after the heading
		body = body.substring(0, paragraph) + note + body.substring(paragraph);
		int old = md.indexOf(heading);
		if (old < 0) {
			md = md + (md.endsWith("\n\n") ? "" : "\n") + body;
		}
		else {
			int next = md.indexOf("\n## ", old + heading.length());
			md = md.substring(0, old) + body + ((next < 0) ? "" : md.substring(next + 1));
		}
		java.nio.file.Files.writeString(file, md);
	}

}
