package io.github.dblock.benchmarks;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;

/** The scenarios that need JVM processes of their own: one hot lock across processes, and SIGKILL recovery. */
public final class ProcessScenarios {

	private ProcessScenarios() {
	}

	/** One phase of {@link #contend}: a contender and a hold time. */
	public record Phase(Contender.Kind kind, Duration hold) {
	}

	/**
	 * One hot resource per phase contended by {@code processes} JVMs with {@code threadsEach} threads each. The
	 * processes are started once and run the phases in order; in each phase they build the contender, then all
	 * start together.
	 */
	public static List<Contention.Result> contend(BenchDatabase db, List<Phase> phases, String resourcePrefix,
			int processes, int threadsEach, Duration warmup, Duration measure) throws Exception {
		List<Process> started = new ArrayList<>();
		List<Path> directories = new ArrayList<>();
		String spec = String.join(",",
				phases.stream().map((p) -> p.kind().name() + ":" + p.hold().toNanos() / 1000).toList());
		try {
			for (int p = 0; p < processes; p++) {
				Path dir = Files.createTempDirectory("bench-worker");
				directories.add(dir);
				started.add(start(db, "contend", spec, resourcePrefix, String.valueOf(threadsEach),
						String.valueOf(warmup.toMillis()), String.valueOf(measure.toMillis()),
						dir.resolve("phase-").toString()));
			}
			List<Contention.Result> results = new ArrayList<>();
			for (int phase = 0; phase < phases.size(); phase++) {
				for (Process process : started) {
					awaitLine(process, "READY " + phase);
				}
				for (Process process : started) {
					OutputStream in = process.getOutputStream();
					in.write("GO\n".getBytes(StandardCharsets.UTF_8));
					in.flush();
				}
				for (Process process : started) {
					awaitLine(process, "DONE " + phase);
				}
				long completed = 0;
				Samples waits = new Samples();
				List<Long> perProcess = new ArrayList<>();
				for (Path dir : directories) {
					List<String> lines = Files.readAllLines(dir.resolve("phase-" + phase));
					completed += Long.parseLong(lines.get(0));
					perProcess.add(Long.parseLong(lines.get(0)));
					for (int i = 1; i < lines.size(); i++) {
						waits.add(Long.parseLong(lines.get(i)));
					}
				}
				results.add(new Contention.Result(completed, measure.toNanos() / 1e9, waits, perProcess));
			}
			for (Process process : started) {
				if (!process.waitFor(1, TimeUnit.MINUTES) || process.exitValue() != 0) {
					throw new IllegalStateException("worker failed: " + drain(process));
				}
			}
			return results;
		}
		finally {
			for (Process process : started) {
				process.destroyForcibly();
			}
			started.forEach(READERS::remove);
			for (Path dir : directories) {
				try (var files = Files.list(dir)) {
					for (Path file : files.toList()) {
						Files.deleteIfExists(file);
					}
				}
				Files.deleteIfExists(dir);
			}
		}
	}

	/** The figures of one SIGKILL. */
	public record Recovery(long afterKillMillis, long afterHolderAcquiredMillis) {
	}

	/**
	 * A holder process takes the lock (with the given lease for LEASE) and is killed with SIGKILL while a waiter
	 * in this JVM is already waiting; measures the time from the kill, and from the holder's acquisition, to the
	 * waiter's acquisition.
	 */
	public static Recovery crash(BenchDatabase db, HikariDataSource pool, LockMode mode, String resource,
			Duration lease) throws Exception {
		Process holder = start(db, "hold", mode.name(), resource, String.valueOf(lease.toMillis()));
		try {
			awaitLine(holder, "HOLDING");
			long holderAcquired = System.nanoTime();
			LockTemplate survivor = Contenders.template(mode, pool, BenchSchema.SMALL, "survivor");
			CompletableFuture<Long> acquired = CompletableFuture.supplyAsync(() -> {
				LockHandle lock = survivor.acquire(resource, LockOptions.defaults().withWaitTime(Duration.ofMinutes(1)));
				long at = System.nanoTime();
				lock.close();
				return at;
			});
			Thread.sleep(Math.min(300, lease.toMillis() / 4));
			if (acquired.isDone()) {
				throw new IllegalStateException(mode + ": the lock was taken while its holder lived: " + acquired.get());
			}
			long killedAt = System.nanoTime();
			holder.destroyForcibly(); // SIGKILL on Linux and macOS
			long at = acquired.get(2, TimeUnit.MINUTES);
			return new Recovery(TimeUnit.NANOSECONDS.toMillis(at - killedAt),
					TimeUnit.NANOSECONDS.toMillis(at - holderAcquired));
		}
		finally {
			holder.destroyForcibly();
		}
	}

	private static Process start(BenchDatabase db, String... args) throws Exception {
		List<String> command = new ArrayList<>(List.of(
				System.getProperty("java.home") + File.separator + "bin" + File.separator + "java", "-Xmx256m",
				"-XX:+UseSerialGC"));
		String redis = Contenders.redisUrl();
		if (redis != null) {
			command.add("-Dbench.redis-url=" + redis); // the Redisson contender of the workers
		}
		command.addAll(List.of("-cp", System.getProperty("java.class.path"), BenchWorker.class.getName(), args[0],
				db.jdbcUrl(), db.username(), db.password().isEmpty() ? "-" : db.password()));
		for (int i = 1; i < args.length; i++) {
			command.add(args[i]);
		}
		return new ProcessBuilder(command).redirectErrorStream(true).start();
	}

	private static final java.util.Map<Process, BufferedReader> READERS = new java.util.concurrent.ConcurrentHashMap<>();

	private static void awaitLine(Process process, String prefix) throws Exception {
		BufferedReader reader = READERS.computeIfAbsent(process,
				(p) -> new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8)));
		StringBuilder seen = new StringBuilder();
		String line = CompletableFuture.supplyAsync(() -> {
			try {
				for (String each = reader.readLine(); each != null; each = reader.readLine()) {
					if (each.startsWith(prefix)) {
						return each;
					}
					seen.append(each).append('\n');
				}
				return null;
			}
			catch (java.io.IOException ex) {
				return null;
			}
		}).get(2, TimeUnit.MINUTES);
		if (line == null) {
			throw new IllegalStateException("worker ended before printing " + prefix + ":\n" + seen);
		}
	}

	private static String drain(Process process) {
		BufferedReader reader = READERS.remove(process);
		try {
			if (reader == null) {
				return new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
			}
			StringBuilder all = new StringBuilder();
			for (String line = reader.readLine(); line != null; line = reader.readLine()) {
				all.append(line).append('\n');
			}
			return all.toString();
		}
		catch (java.io.IOException ex) {
			return ex.toString();
		}
	}

}
