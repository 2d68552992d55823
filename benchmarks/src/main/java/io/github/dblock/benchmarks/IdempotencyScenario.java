package io.github.dblock.benchmarks;

import io.github.dblock.jdbc.sql.LockSchema;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.idempotency.IdempotencyTemplate;
import io.github.dblock.idempotency.OnDuplicate;
import io.github.dblock.jdbc.lease.IdempotencyStore;
import io.github.dblock.jdbc.lease.LeaseLockProvider;
import io.github.dblock.jdbc.sql.LockTable;
import io.github.dblock.wait.Backoff;
import tools.jackson.databind.json.JsonMapper;

/**
 * Idempotency keys: the cost of a first call (claim and completion: two statements) and of a duplicate answered from
 * the record (a failed insert and one read), next to a LEASE lock's take and release on the same pool; and bursts of
 * concurrent duplicates, where every thread of the burst calls the same new key at once and exactly one may run it.
 * The burst counts executions itself and reports them, so a run also checks the run-once promise. Real threads,
 * one JVM; no speed is asserted anywhere.
 */
public final class IdempotencyScenario {

	/**
	 * The figures of one run.
	 * @param firstCall latency of calls on new keys (claim, empty work, completion)
	 * @param duplicate latency of calls on a completed key (answered from the record)
	 * @param leaseLock latency of a LEASE lock's {@code execute} with empty work on the same pool, for scale
	 * @param bursts how many bursts of concurrent duplicates ran
	 * @param burstThreads threads per burst
	 * @param executions how many times the work ran in the bursts: must equal {@code bursts}
	 * @param burstLatency time from a burst's start until its last caller had the outcome
	 */
	public record Result(Samples firstCall, Samples duplicate, Samples leaseLock, int bursts, int burstThreads,
			int executions, Samples burstLatency) {
	}

	private IdempotencyScenario() {
	}

	/**
	 * Runs the scenario on the lock table {@code table} (whose {@code _idem} table must exist).
	 * @param measure how long each part runs
	 * @param burstThreads threads per burst of duplicates
	 */
	public static Result run(DataSource pool, LockTable table, Duration measure, int burstThreads) throws Exception {
		LeaseLockProvider lease = new LeaseLockProvider(pool, table, Duration.ofSeconds(5), Duration.ofMillis(5),
				Duration.ofMillis(50));
		try {
			IdempotencyStore store = new IdempotencyStore(pool, table, Duration.ofSeconds(5),
					new Backoff(Duration.ofMillis(2), Duration.ofMillis(20)), lease);
			IdempotencyTemplate idempotency = new IdempotencyTemplate(store, JsonMapper.shared(), Duration.ofHours(1),
					Duration.ofSeconds(30), Duration.ofSeconds(30), OnDuplicate.RETURN_OUTCOME, "bench");
			LockTemplate locks = new LockTemplate(List.of(lease), LockMode.LEASE, Duration.ofSeconds(5),
					Duration.ofSeconds(30), "bench");
			String prefix = "idem-" + UUID.randomUUID() + "-";
			Samples first = new Samples();
			long end = System.nanoTime() + measure.toNanos();
			int i = 0;
			for (; System.nanoTime() < end; i++) {
				ThreadCost from = ThreadCost.now();
				long start = System.nanoTime();
				idempotency.execute(prefix + i, String.class, (claim) -> "ok");
				first.add(System.nanoTime() - start, from.since());
			}
			Samples duplicate = new Samples();
			end = System.nanoTime() + measure.toNanos();
			for (int j = 0; System.nanoTime() < end; j++) {
				ThreadCost from = ThreadCost.now();
				long start = System.nanoTime();
				idempotency.execute(prefix + (j % i), String.class, (claim) -> "ran again");
				duplicate.add(System.nanoTime() - start, from.since());
			}
			Samples leaseLock = new Samples();
			end = System.nanoTime() + measure.toNanos();
			for (int j = 0; System.nanoTime() < end; j++) {
				ThreadCost from = ThreadCost.now();
				long start = System.nanoTime();
				locks.execute("idem-lock-" + (j % 1000), LockOptions.defaults(), (lock) -> null);
				leaseLock.add(System.nanoTime() - start, from.since());
			}
			return burst(idempotency, prefix + "burst-", measure, burstThreads, first, duplicate, leaseLock);
		}
		finally {
			lease.close();
		}
	}

	private static Result burst(IdempotencyTemplate idempotency, String prefix, Duration measure, int threads,
			Samples first, Samples duplicate, Samples leaseLock) throws Exception {
		AtomicInteger executions = new AtomicInteger();
		Samples latency = new Samples();
		ExecutorService pool = Executors.newFixedThreadPool(threads);
		try {
			long end = System.nanoTime() + measure.toNanos();
			int bursts = 0;
			while (System.nanoTime() < end || bursts == 0) {
				String key = prefix + bursts;
				CyclicBarrier barrier = new CyclicBarrier(threads);
				long start = System.nanoTime();
				List<Future<String>> calls = new ArrayList<>();
				for (int t = 0; t < threads; t++) {
					calls.add(pool.submit(() -> {
						barrier.await();
						return idempotency.execute(key, String.class, (claim) -> {
							executions.incrementAndGet();
							return "outcome of " + key;
						});
					}));
				}
				for (Future<String> call : calls) {
					if (!("outcome of " + key).equals(call.get(60, TimeUnit.SECONDS))) {
						throw new IllegalStateException("a duplicate of " + key + " got another outcome");
					}
				}
				latency.add(System.nanoTime() - start);
				bursts++;
			}
			return new Result(first, duplicate, leaseLock, bursts, threads, executions.get(), latency);
		}
		finally {
			pool.shutdownNow();
		}
	}

	/** Runs the scenario alone against {@code -Dbench.jdbc-url} (or the embedded server) and prints the figures. */
	public static void main(String[] args) throws Exception {
		BenchDatabase db = BenchDatabase.get();
		try (com.zaxxer.hikari.HikariDataSource pool = db.newPool(24, "bench-idempotency")) {
			io.github.dblock.jdbc.sql.LockSchema.migrate(pool, BenchSchema.SMALL);
			Result result = run(pool, BenchSchema.SMALL, Duration.ofSeconds(Long.getLong("bench.seconds", 5)), 8);
			System.out.printf("first call  p50 %.3f ms  p99 %.3f ms  (%d calls)%n", result.firstCall().percentileMillis(50),
					result.firstCall().percentileMillis(99), result.firstCall().size());
			System.out.printf("duplicate   p50 %.3f ms  p99 %.3f ms  (%d calls)%n", result.duplicate().percentileMillis(50),
					result.duplicate().percentileMillis(99), result.duplicate().size());
			System.out.printf("LEASE lock  p50 %.3f ms  p99 %.3f ms  (%d calls)%n", result.leaseLock().percentileMillis(50),
					result.leaseLock().percentileMillis(99), result.leaseLock().size());
			System.out.printf("bursts of %d duplicates: %d bursts, %d executions, p50 %.3f ms, p99 %.3f ms%n",
					result.burstThreads(), result.bursts(), result.executions(), result.burstLatency().percentileMillis(50),
					result.burstLatency().percentileMillis(99));
		}
	}

}
