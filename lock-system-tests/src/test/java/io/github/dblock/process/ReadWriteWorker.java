package io.github.dblock.process;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.LockType;
import io.github.dblock.test.nodes.LockNodes;

/**
 * A separate JVM process that takes read and write locks, started by {@link CrossProcessReadWriteLockTests}.
 * <p>
 * {@code mix <url> <user> <password> <resource> <threads> <iterations> <writeOneIn> <processes>}: once all
 * {@code processes} have checked in ({@code lock_test_rw_ready}), each iteration takes the
 * write lock (one in {@code writeOneIn}) or the read lock, and checks exclusion on the probe row
 * {@code lock_test_rw_probe} on a connection of its own, without trusting the lock: a reader enters with
 * {@code readers = readers + 1 WHERE writers = 0}, a writer with {@code writers = 1 WHERE writers = 0 AND readers =
 * 0}; an entry that matches no row, or a leave that finds the state changed, is a violation. The probe also records
 * the most readers inside at once ({@code max_readers}), and every section its kind and fencing token in
 * {@code lock_test_rw_token}. Prints {@code RESULT reads=N writes=M violations=V} and exits 0.
 * <p>
 * {@code stream <url> <user> <password> <resource> <threads> <holdMillis> <runMillis>}: reader threads take the
 * read lock, hold it for {@code holdMillis} and take it again at once, for {@code runMillis}; prints {@code READING}
 * once every thread has read, then {@code RESULT reads=N}.
 * <p>
 * {@code hold <url> <user> <password> <resource> <READ|WRITE> <leaseMillis>}: takes the lock, prints
 * {@code HOLDING <token>} and sleeps until killed.
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
public final class ReadWriteWorker {

	private ReadWriteWorker() {
	}

	public static void main(String[] args) throws Exception {
		String command = args[0];
		String resource = args[4];
		String node = "process-" + ProcessHandle.current().pid();
		try (HikariDataSource dataSource = WorkerProcesses.dataSource(args, 16)) {
			LockTemplate locks = LockNodes.node(LockMode.LEASE, node, dataSource);
			switch (command) {
				case "hold" -> hold(locks, resource, LockType.valueOf(args[5]), Long.parseLong(args[6]));
				case "stream" -> stream(locks, resource, Integer.parseInt(args[5]), Long.parseLong(args[6]),
						Long.parseLong(args[7]));
				case "mix" -> {
					awaitAllReady(dataSource, resource, node, Integer.parseInt(args[8]));
					mix(locks, dataSource, resource, node, Integer.parseInt(args[5]), Integer.parseInt(args[6]),
							Integer.parseInt(args[7]));
				}
				default -> throw new IllegalArgumentException("unknown command " + command);
			}
		}
	}

	private static void hold(LockTemplate locks, String resource, LockType type, long leaseMillis) throws Exception {
		LockHandle lock = locks.acquire(resource, LockOptions.defaults().withType(type)
			.withWaitTime(Duration.ofSeconds(30)).withLeaseTime(Duration.ofMillis(leaseMillis)));
		System.out.println("HOLDING " + lock.fencingToken());
		System.out.flush();
		Thread.sleep(Long.MAX_VALUE);
	}

	private static void stream(LockTemplate locks, String resource, int threads, long holdMillis, long runMillis)
			throws Exception {
		AtomicInteger reads = new AtomicInteger();
		AtomicInteger started = new AtomicInteger();
		long end = System.nanoTime() + runMillis * 1_000_000;
		ExecutorService pool = Executors.newFixedThreadPool(threads);
		List<Future<?>> futures = new ArrayList<>();
		for (int t = 0; t < threads; t++) {
			long stagger = t * holdMillis / threads;
			futures.add(pool.submit(() -> {
				Thread.sleep(stagger);
				boolean first = true;
				while (System.nanoTime() < end) {
					try (LockHandle lock = locks.acquire(resource, LockOptions.defaults().withType(LockType.READ)
						.withWaitTime(Duration.ofSeconds(30)))) {
						if (first && started.incrementAndGet() == threads) {
							System.out.println("READING");
							System.out.flush();
						}
						first = false;
						Thread.sleep(holdMillis);
						reads.incrementAndGet();
					}
				}
				return null;
			}));
		}
		for (Future<?> future : futures) {
			future.get();
		}
		pool.shutdown();
		System.out.println("RESULT reads=" + reads);
	}

	/**
	 * A start line for the processes of one run: JVMs start at different speeds, and a process that finished before
	 * the next one started would leave nothing to overlap.
	 */
	private static void awaitAllReady(HikariDataSource dataSource, String resource, String node, int processes)
			throws Exception {
		try (Connection c = dataSource.getConnection()) {
			update(c, "INSERT INTO lock_test_rw_ready (name, node) VALUES (?, ?)", resource, node);
			long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
			while (true) {
				try (PreparedStatement ps = c.prepareStatement("SELECT COUNT(*) FROM lock_test_rw_ready WHERE name = ?")) {
					ps.setString(1, resource);
					try (ResultSet rs = ps.executeQuery()) {
						rs.next();
						if (rs.getInt(1) >= processes) {
							return;
						}
					}
				}
				if (System.nanoTime() - deadline > 0) {
					throw new IllegalStateException("not all " + processes + " processes started within 2 minutes");
				}
				Thread.sleep(10);
			}
		}
	}

	private static void mix(LockTemplate locks, HikariDataSource dataSource, String resource, String node, int threads,
			int iterations, int writeOneIn) throws Exception {
		AtomicInteger reads = new AtomicInteger();
		AtomicInteger writes = new AtomicInteger();
		AtomicInteger violations = new AtomicInteger();
		ExecutorService pool = Executors.newFixedThreadPool(threads);
		List<Future<?>> futures = new ArrayList<>();
		for (int t = 0; t < threads; t++) {
			futures.add(pool.submit(() -> {
				for (int i = 0; i < iterations; i++) {
					boolean write = ThreadLocalRandom.current().nextInt(writeOneIn) == 0;
					LockOptions options = LockOptions.defaults().withType(write ? LockType.WRITE : LockType.READ)
						.withWaitTime(Duration.ofMinutes(2));
					locks.executeWithoutResult(resource, options,
							(lock) -> section(dataSource, resource, write, lock.fencingToken(), violations));
					(write ? writes : reads).incrementAndGet();
				}
				return null;
			}));
		}
		for (Future<?> future : futures) {
			future.get();
		}
		pool.shutdown();
		System.out.println("RESULT reads=" + reads + " writes=" + writes + " violations=" + violations);
	}

	private static void section(HikariDataSource dataSource, String resource, boolean write, long token,
			AtomicInteger violations) {
		try (Connection c = dataSource.getConnection()) {
			if (write) {
				if (update(c, "UPDATE lock_test_rw_probe SET writers = 1 WHERE name = ? AND writers = 0 AND readers = 0",
						resource) != 1) {
					violations.incrementAndGet();
				}
			}
			else if (update(c, "UPDATE lock_test_rw_probe SET max_readers = GREATEST(max_readers, readers + 1),"
					+ " readers = readers + 1 WHERE name = ? AND writers = 0", resource) != 1) {
				violations.incrementAndGet();
			}
			update(c, "INSERT INTO lock_test_rw_token (name, kind, token) VALUES (?, ?, ?)", resource, write ? "W" : "R",
					token);
			Thread.sleep(write ? 2 : 10);
			if (write) {
				if (update(c, "UPDATE lock_test_rw_probe SET writers = 0 WHERE name = ? AND writers = 1 AND readers = 0",
						resource) != 1) {
					violations.incrementAndGet();
				}
			}
			else if (update(c, "UPDATE lock_test_rw_probe SET readers = readers - 1 WHERE name = ? AND writers = 0"
					+ " AND readers > 0", resource) != 1) {
				violations.incrementAndGet();
			}
		}
		catch (SQLException ex) {
			throw new IllegalStateException(ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}

	private static int update(Connection c, String sql, Object... args) throws SQLException {
		try (PreparedStatement ps = c.prepareStatement(sql)) {
			for (int i = 0; i < args.length; i++) {
				ps.setObject(i + 1, args[i]);
			}
			return ps.executeUpdate();
		}
	}

}
