package io.github.dblock.reliability.checker;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;

/**
 * A worker JVM of {@link ProcessWorkload}: one node of the checker's {@link Workload}, its threads making the same
 * random calls as in one JVM, recorded into the run's {@link History} tables on the server. Arguments:
 * {@code <run prefix> <run seed> <node index> <threads> <lock URL> <history URL> <user> <password> <defect>} (a
 * password {@code -} is empty; a defect is the name of a {@link Defects} switch for this node, {@code -} for none). The node's pool goes to the lock URL (the test's fault proxy for this process), the history
 * pool straight to the server. Prints {@code STARTED} once its history pool is up, {@code E <error>} for each error of
 * the workload itself and {@code RESULT errors=<n>} when standard input has closed and every call has ended; then
 * exits with status 0.
 * <p>
 * JVM clocks are not compared across processes: each call is written with its duration on this JVM's clock, less the
 * time this whole JVM stood still meanwhile ({@link PauseWatch}, for SIGSTOP).
 */
public final class CheckerWorker {

	private CheckerWorker() {
	}

	public static void main(String[] args) throws Exception {
		String prefix = args[0];
		long seed = Long.parseLong(args[1]);
		int index = Integer.parseInt(args[2]);
		int threads = Integer.parseInt(args[3]);
		String lockUrl = args[4];
		String historyUrl = args[5];
		String user = args[6];
		String password = args[7].equals("-") ? "" : args[7];
		var defect = args[8].equals("-") ? null : Defects.named(args[8]);
		boolean multiPrimary = Boolean.parseBoolean(args[9]);
		PauseWatch pauses = PauseWatch.start();
		Workload.Pools pools = (url, size, customizer) -> {
			HikariConfig config = new HikariConfig();
			config.setJdbcUrl((url != null) ? url : historyUrl);
			config.setUsername(user);
			config.setPassword(password);
			config.setMaximumPoolSize(size);
			config.setMinimumIdle(0);
			config.setInitializationFailTimeout(-1); // the server may be restarting when a worker starts
			customizer.accept(config);
			return new HikariDataSource(config);
		};
		AtomicBoolean going = new AtomicBoolean(true);
		Thread stdin = new Thread(() -> {
			try {
				System.in.transferTo(java.io.OutputStream.nullOutputStream());
			}
			catch (java.io.IOException ex) {
				// stop all the same
			}
			going.set(false);
		}, "checker-stdin");
		stdin.setDaemon(true);
		stdin.start();
		List<String> errors = new ArrayList<>();
		try (HikariDataSource historyPool = pools.pool(null, threads + 2,
				(config) -> config.setPoolName("checker-history-p" + index))) {
			History history = whenReachable(
					() -> new History(historyPool, prefix, index * 1_000_000_000L, true, pauses::pausedWithin));
			say("STARTED");
			Workload workload = new Workload(
					new Workload.Settings(seed, Duration.ZERO, 1, threads, true, defect), prefix);
			errors.addAll(workload.runNode(index, lockUrl, multiPrimary, pools, history, going::get));
		}
		catch (RuntimeException ex) {
			errors.add("worker p" + index + ": " + ex);
		}
		errors.forEach((error) -> say("E " + error.replace('\n', ' ')));
		say("RESULT errors=" + errors.size());
		System.exit(0);
	}

	/**
	 * The value of {@code setUp}, tried again every 500 ms for up to 3 minutes: a worker may start while the server
	 * restarts.
	 */
	static <T> T whenReachable(java.util.function.Supplier<T> setUp) throws InterruptedException {
		long deadline = System.nanoTime() + Duration.ofMinutes(3).toNanos();
		while (true) {
			try {
				return setUp.get();
			}
			catch (RuntimeException ex) {
				if (System.nanoTime() > deadline) {
					throw ex;
				}
				Thread.sleep(500);
			}
		}
	}

	private static synchronized void say(String line) {
		System.out.println(line);
		System.out.flush();
	}

	/**
	 * A watchdog thread that wakes every 10 ms and takes a gap of more than 250 ms between two of its wake-ups as a
	 * time this JVM stood still (SIGSTOP; a long safepoint counts too). Thread-safe.
	 */
	static final class PauseWatch {

		static final long BEAT = 10_000_000L;

		static final long THRESHOLD = 250_000_000L;

		private final List<long[]> pauses = new ArrayList<>();

		private volatile long lastBeat = System.nanoTime();

		static PauseWatch start() {
			PauseWatch watch = new PauseWatch();
			Thread thread = new Thread(watch::beat, "checker-pause-watch");
			thread.setDaemon(true);
			thread.setPriority(Thread.MAX_PRIORITY);
			thread.start();
			return watch;
		}

		private void beat() {
			while (true) {
				try {
					Thread.sleep(BEAT / 1_000_000);
				}
				catch (InterruptedException ex) {
					return;
				}
				long now = System.nanoTime();
				long last = this.lastBeat;
				if (now - last > THRESHOLD) {
					synchronized (this.pauses) {
						this.pauses.add(new long[] { last + BEAT, now });
					}
				}
				this.lastBeat = now;
			}
		}

		/** How long this JVM stood still between {@code from} and {@code to} ({@link System#nanoTime()} readings). */
		long pausedWithin(long from, long to) {
			long paused = 0;
			synchronized (this.pauses) {
				for (long[] pause : this.pauses) {
					paused += Math.max(0, Math.min(to, pause[1]) - Math.max(from, pause[0]));
				}
			}
			// a pause the watchdog has not woken up from yet (the caller's thread woke first)
			long last = this.lastBeat;
			if (to - last > THRESHOLD) {
				paused += Math.max(0, to - Math.max(from, last + BEAT));
			}
			return paused;
		}

	}

}
