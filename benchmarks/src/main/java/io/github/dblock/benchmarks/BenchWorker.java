package io.github.dblock.benchmarks;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;

/**
 * A separate JVM started by {@link ProcessScenarios}.
 * <ul>
 * <li>{@code contend <url> <user> <password|-> <KIND:holdMicros,…> <resourcePrefix> <threads> <warmupMs>
 * <measureMs> <outFilePrefix>}: for each phase in turn, builds the contender, prints {@code READY n}, waits for a
 * line on standard input, runs {@link Contention#run} on resource {@code resourcePrefix + n}, writes the completed
 * count and then one wait sample (ns) per line to {@code outFilePrefix + n} and prints {@code DONE n}.</li>
 * <li>{@code hold <url> <user> <password|-> <mode> <resource> <leaseMs>}: takes the lock, prints
 * {@code HOLDING} and sleeps until killed.</li>
 * </ul>
 */
public final class BenchWorker {

	private BenchWorker() {
	}

	/** Runs one command (see the class description); exits 0 when done. */
	public static void main(String[] args) throws Exception {
		BenchDatabase db = BenchDatabase.of(args[1], args[2], args[3].equals("-") ? "" : args[3]);
		String node = "process-" + ProcessHandle.current().pid();
		if (args[0].equals("hold")) {
			try (HikariDataSource pool = db.newPool(2, node)) {
				LockTemplate locks = Contenders.template(LockMode.valueOf(args[4]), pool, BenchSchema.SMALL, node);
				LockHandle lock = locks.acquire(args[5],
						LockOptions.defaults().withLeaseTime(Duration.ofMillis(Long.parseLong(args[6]))));
				System.out.println("HOLDING " + lock.fencingToken());
				System.out.flush();
				Thread.sleep(Long.MAX_VALUE);
			}
		}
		// contend <url> <user> <password> <phases: KIND:holdMicros,...> <resource prefix> <threads> <warmupMs>
		// <measureMs> <outFile prefix>
		String[] phases = args[4].split(",");
		String prefix = args[5];
		int threads = Integer.parseInt(args[6]);
		Duration warmup = Duration.ofMillis(Long.parseLong(args[7]));
		Duration measure = Duration.ofMillis(Long.parseLong(args[8]));
		BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
		for (int p = 0; p < phases.length; p++) {
			String[] phase = phases[p].split(":");
			Contender.Kind kind = Contender.Kind.valueOf(phase[0]);
			Duration hold = Duration.ofNanos(Long.parseLong(phase[1]) * 1000);
			try (Contender contender = Contenders.pooled(kind, db, threads + 2, BenchSchema.SMALL, node)) {
				System.out.println("READY " + p);
				System.out.flush();
				if (in.readLine() == null) {
					throw new IllegalStateException("the harness went away");
				}
				Contention.Result result = Contention.run(contender, List.of(prefix + p), threads, hold, warmup,
						measure);
				try (PrintWriter writer = new PrintWriter(Files.newBufferedWriter(Path.of(args[9] + p)))) {
					writer.println(result.completed());
					for (long wait : result.waits().toArray()) {
						writer.println(wait);
					}
				}
				System.out.println("DONE " + p);
				System.out.flush();
			}
		}
		System.exit(0);
	}

}
