package io.github.dblock.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

import javax.sql.DataSource;

import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.LockType;

/**
 * Scenario 9: read/write locks on one hot resource, 8 threads in one JVM, 1 ms inside the lock, with 100 %, 90 % and
 * 50 % of the sections reading (the others writing), against the EXCLUSIVE LEASE lock doing the same sections. Shows
 * what readers gain by overlapping and what a share of writers costs them.
 */
final class ReadWriteScenario {

	/** Percentages of read sections, one run each. */
	static final int[] READ_SHARES = { 100, 90, 50 };

	static final int THREADS = 8;

	static final Duration HOLD = Duration.ofMillis(1);

	private ReadWriteScenario() {
	}

	/** Runs the mixes and the exclusive comparison; one entry per run, labelled. */
	static List<Results.Throughput> run(DataSource pool, Settings settings) throws Exception {
		List<Results.Throughput> results = new ArrayList<>();
		for (int readShare : READ_SHARES) {
			LockTemplate template = Contenders.template(LockMode.LEASE, pool, BenchSchema.SMALL, "rw-" + readShare);
			LockOptions read = LockOptions.defaults().withType(LockType.READ).withWaitTime(Contenders.WAIT);
			LockOptions write = LockOptions.defaults().withType(LockType.WRITE).withWaitTime(Contenders.WAIT);
			Contender contender = new Contender() {

				@Override
				public Contender.Kind kind() {
					return Contender.Kind.LEASE;
				}

				@Override
				public void cycle(String resource, Runnable section) {
					boolean reading = ThreadLocalRandom.current().nextInt(100) < readShare;
					template.execute(resource, reading ? read : write, (lock) -> {
						section.run();
						return null;
					});
				}

			};
			results.add(throughput("READ/WRITE, " + readShare + " % reads", Contention.run(contender,
					List.of("rw-hot-" + readShare), THREADS, HOLD, settings.warmup(), settings.measure())));
		}
		try (Contender exclusive = Contenders.create(Contender.Kind.LEASE, pool, BenchSchema.SMALL, "rw-exclusive")) {
			results.add(throughput("EXCLUSIVE (LEASE)", Contention.run(exclusive, List.of("rw-hot-exclusive"), THREADS,
					HOLD, settings.warmup(), settings.measure())));
		}
		return results;
	}

	private static Results.Throughput throughput(String label, Contention.Result result) {
		return Results.Throughput.of(label, result);
	}

}
