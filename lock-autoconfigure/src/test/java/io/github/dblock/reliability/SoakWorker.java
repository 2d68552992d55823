package io.github.dblock.reliability;

import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.spi.LockProvider;
import io.github.dblock.test.LockNodes;

import static io.github.dblock.reliability.Workers.enter;
import static io.github.dblock.reliability.Workers.say;
import static io.github.dblock.reliability.Workers.update;
import static io.github.dblock.test.Pauses.sleep;

/**
 * A worker JVM of {@link SoakTests}. Arguments: {@code <lockUrl> <lockUser> <lockPassword> <mode> <leaseMillis>
 * <resources,comma-separated> <threads> <maxHoldMillis> <bookUrl> <bookUser> <bookPassword>} (a password {@code -}
 * is empty). The mode may be {@code PESSIMISTIC/SERVER_CLOCK}.
 * <p>
 * Two pools: the lock's (through the test's fault proxy, as a database user of this worker's own, so that the test
 * can find its sessions in {@code information_schema.PROCESSLIST} and kill them), and the bookkeeping pool (straight
 * to the server, so that a partition does not delay the records). Each thread, until standard input closes, takes a
 * random resource (waiting up to 60 s, renewed lease of {@code leaseMillis}) and, in the section: records its entry
 * ({@code lock_soak_section}: server time, fencing token), holds for a random time, makes a fenced write of its token
 * ({@code UPDATE lock_soak_fenced ... WHERE name = ? AND token < ?}) and records the write's outcome with its exit in
 * one statement. A failed call (a lost lock, a broken connection) is counted, and the section it ended, if any, is
 * marked failed at once, or at the end of the run when the database is down then. Prints {@code E <exception>} on a
 * failure, {@code STARTED} once its pools are up and, at the end, {@code RESULT acquisitions=N errors=N worstAcquireMillis=N worstReleaseMillis=N}: the
 * longest time from the call to the callback (the acquisition) and from the callback's end to the call's return (the
 * release).
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
public final class SoakWorker {

	private SoakWorker() {
	}

	public static void main(String[] args) throws Exception {
		LockMode mode = Workers.mode(args[3]);
		Duration lease = Duration.ofMillis(Long.parseLong(args[4]));
		String[] resources = args[5].split(",");
		int threads = Integer.parseInt(args[6]);
		int maxHoldMillis = Integer.parseInt(args[7]);
		try (HikariDataSource lockPool = pool(args[0], args[1], args[2], 10);
				HikariDataSource book = pool(args[8], args[9], args[10], threads + 1)) {
			LockTemplate locks = Workers.template(args[3], provider(mode, lockPool), lease);
			try (Connection c = book.getConnection()) {
				say("STARTED"); // the test starts its clock once every worker is this far
			}
			run(locks, book, Workers.node(), resources, threads, maxHoldMillis);
		}
	}

	/** The provider, once the server tells its version: a worker may start while it restarts or is cut off. */
	private static LockProvider provider(LockMode mode, HikariDataSource lockPool) throws InterruptedException {
		long deadline = System.nanoTime() + Duration.ofMinutes(3).toNanos();
		while (true) {
			try {
				return LockNodes.provider(mode, lockPool);
			}
			catch (RuntimeException ex) {
				if (System.nanoTime() > deadline) {
					throw ex;
				}
				Thread.sleep(500);
			}
		}
	}

	private static HikariDataSource pool(String url, String user, String password, int size) {
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(url);
		config.setUsername(user);
		config.setPassword(password.equals("-") ? "" : password);
		config.setMaximumPoolSize(size);
		config.setConnectionTimeout(5_000);
		config.setInitializationFailTimeout(-1); // the server may be down or slow to answer when a worker starts
		return new HikariDataSource(config);
	}

	private static void run(LockTemplate locks, HikariDataSource book, String node, String[] resources, int threads,
			int maxHoldMillis) throws Exception {
		AtomicBoolean stop = Workers.stopWhenStandardInputCloses();
		AtomicLong acquisitions = new AtomicLong();
		AtomicLong errors = new AtomicLong();
		AtomicLong worstAcquire = new AtomicLong();
		AtomicLong worstRelease = new AtomicLong();
		Map<Long, String> failedSections = new ConcurrentHashMap<>();
		List<Thread> workers = new ArrayList<>();
		for (int t = 0; t < threads; t++) {
			String holder = node + "/" + t;
			Thread worker = new Thread(() -> {
				ThreadLocalRandom random = ThreadLocalRandom.current();
				while (!stop.get()) {
					String resource = resources[random.nextInt(resources.length)];
					long[] section = { -1 };
					long[] leftCallback = { 0 };
					long called = System.nanoTime();
					try {
						locks.executeWithoutResult(resource, LockOptions.defaults().withWaitTime(Duration.ofSeconds(60)),
								(lock) -> {
									worstAcquire.accumulateAndGet((System.nanoTime() - called) / 1_000_000, Math::max);
									try {
										section[0] = enter(book, "lock_soak_section", resource, holder, lock.fencingToken());
										sleep(random.nextInt(maxHoldMillis + 1));
										int written = update(book, "UPDATE lock_soak_fenced SET value = value + 1, token = ?"
												+ " WHERE name = ? AND token < ?", lock.fencingToken(), resource,
												lock.fencingToken());
										if (update(book, "UPDATE lock_soak_section SET wrote = ?, exited_at = UTC_TIMESTAMP(6)"
												+ " WHERE id = ?", written, section[0]) != 1) {
											throw new IllegalStateException("section " + section[0] + " vanished");
										}
									}
									finally {
										leftCallback[0] = System.nanoTime();
									}
								});
						acquisitions.incrementAndGet();
					}
					catch (RuntimeException ex) {
						errors.incrementAndGet();
						if (section[0] >= 0) {
							String text = String.valueOf(ex);
							markFailed(book, section[0], text.substring(0, Math.min(250, text.length())), failedSections);
						}
						say("E " + ex);
					}
					finally {
						if (leftCallback[0] != 0) {
							worstRelease.accumulateAndGet((System.nanoTime() - leftCallback[0]) / 1_000_000, Math::max);
						}
						else {
							worstAcquire.accumulateAndGet((System.nanoTime() - called) / 1_000_000, Math::max);
						}
					}
				}
			}, "soak-" + t);
			worker.start();
			workers.add(worker);
		}
		for (Thread worker : workers) {
			worker.join();
		}
		// the database was down when these sections failed: their marks are written now, retried for a minute
		long deadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
		for (Map.Entry<Long, String> failed : failedSections.entrySet()) {
			while (true) {
				try {
					update(book, "UPDATE lock_soak_section SET failed = ? WHERE id = ?", failed.getValue(), failed.getKey());
					break;
				}
				catch (RuntimeException ex) {
					if (System.nanoTime() > deadline) {
						throw ex;
					}
					sleep(500);
				}
			}
		}
		say("RESULT acquisitions=" + acquisitions + " errors=" + errors + " worstAcquireMillis=" + worstAcquire
				+ " worstReleaseMillis=" + worstRelease);
	}

	/**
	 * Marks the section failed at once, so that the mark survives a SIGKILL of this worker later in the run (SoakCheck
	 * needs it to tell a PESSIMISTIC lock lost with its session from an overlap); when the server is down, the mark
	 * waits in {@code pending} for the end of the run.
	 */
	private static void markFailed(HikariDataSource book, long section, String failure, Map<Long, String> pending) {
		try {
			update(book, "UPDATE lock_soak_section SET failed = ? WHERE id = ?", failure, section);
		}
		catch (RuntimeException ex) {
			pending.put(section, failure);
		}
	}

}
