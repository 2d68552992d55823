package io.github.dblock.reliability;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.dblock.process.WorkerProcesses;
import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockHandle;
import io.github.dblock.LockLostException;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.test.nodes.LockNodes;
import org.springframework.jdbc.datasource.DataSourceUtils;

import static io.github.dblock.reliability.Workers.enter;
import static io.github.dblock.reliability.Workers.say;
import static io.github.dblock.reliability.Workers.update;
import static io.github.dblock.test.Pauses.sleep;

/**
 * A separate JVM process for {@link ProcessFaultTests}. Arguments: {@code <command> <url> <user> <password> <mode>
 * <leaseMillis> ...}; every lock is taken without a lease time of its own, so LEASE locks are renewed every third of
 * {@code leaseMillis}.
 * <ul>
 * <li>{@code chaos ... <resources,comma-separated> <threads> <maxHoldMillis>}: each thread, until standard input
 * closes, takes a random resource (waiting up to 60 s), records its entry in {@code lock_test_interval} (server time,
 * fencing token), holds for a random time, records its exit and releases. It prints {@code W}, {@code H <resource>},
 * {@code R <resource>} and {@code F} as it waits, holds, releases and finishes, so that a test killing it knows
 * where it was, and {@code RESULT acquisitions=N} at the end. In OPTIMISTIC mode the work instead increments
 * {@code lock_test_counter} and records its token in {@code lock_test_token}, both in the work's transaction.</li>
 * <li>{@code pause ... <resource>}: takes the lock, prints {@code HOLDING <token>}, and on each line of standard
 * input tries a fenced write of its token to {@code lock_test_fenced}, printing {@code WRITE rows=N held=B lost=B};
 * at end of input it releases and prints {@code RELEASED} or {@code RELEASE-LOST}.</li>
 * </ul>
 * The mode may be {@code PESSIMISTIC/SERVER_CLOCK} (PESSIMISTIC with {@code fencing = server-clock}). The checker's
 * worker processes are {@code checker.CheckerWorker}.
 */
public final class ChaosWorker {

	private ChaosWorker() {
	}

	public static void main(String[] args) throws Exception {
		String command = args[0];
		LockMode mode = Workers.mode(args[4]);
		Duration lease = Duration.ofMillis(Long.parseLong(args[5]));
		try (HikariDataSource dataSource = WorkerProcesses.dataSource(args, 10)) {
			LockTemplate locks = Workers.template(args[4], LockNodes.provider(mode, dataSource), lease);
			if (command.equals("pause")) {
				pause(locks, dataSource, args[6]);
			}
			else {
				chaos(locks, dataSource, mode, args[6].split(","), Integer.parseInt(args[7]), Integer.parseInt(args[8]));
			}
		}
	}

	private static void chaos(LockTemplate locks, HikariDataSource dataSource, LockMode mode, String[] resources,
			int threads, int maxHoldMillis) throws Exception {
		AtomicBoolean stop = Workers.stopWhenStandardInputCloses();
		AtomicInteger acquisitions = new AtomicInteger();
		List<Thread> workers = new ArrayList<>();
		for (int t = 0; t < threads; t++) {
			String holder = Workers.node() + "/" + t;
			Thread worker = new Thread(() -> {
				ThreadLocalRandom random = ThreadLocalRandom.current();
				while (!stop.get()) {
					String resource = resources[random.nextInt(resources.length)];
					say("W");
					locks.executeWithoutResult(resource, LockOptions.defaults().withWaitTime(Duration.ofSeconds(60)),
							(lock) -> {
								say("H " + resource);
								if (mode == LockMode.OPTIMISTIC) {
									countInTransaction(dataSource, resource, lock.fencingToken());
								}
								else {
									long interval = enter(dataSource, "lock_test_interval", resource, holder, lock.fencingToken());
									sleep(random.nextInt(maxHoldMillis + 1));
									exit(dataSource, interval);
								}
								say("R " + resource);
							});
					acquisitions.incrementAndGet();
					say("F");
				}
			});
			worker.start();
			workers.add(worker);
		}
		for (Thread worker : workers) {
			worker.join();
		}
		say("RESULT acquisitions=" + acquisitions);
	}

	private static void pause(LockTemplate locks, HikariDataSource dataSource, String resource) throws Exception {
		LockHandle lock = locks.acquire(resource);
		AtomicBoolean lost = new AtomicBoolean();
		lock.onLost((handle) -> lost.set(true));
		say("HOLDING " + lock.fencingToken());
		BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
		while (in.readLine() != null) {
			int rows = update(dataSource, "UPDATE lock_test_fenced SET value = value + 1, token = ? WHERE name = ?"
					+ " AND token <= ?", lock.fencingToken(), resource, lock.fencingToken());
			say("WRITE rows=" + rows + " held=" + lock.isHeld() + " lost=" + lost.get());
		}
		try {
			lock.close();
			say("RELEASED");
		}
		catch (LockLostException ex) {
			say("RELEASE-LOST");
		}
	}

	private static void exit(HikariDataSource dataSource, long interval) {
		if (update(dataSource, "UPDATE lock_test_interval SET exited_at = UTC_TIMESTAMP(6) WHERE id = ?", interval) != 1) {
			throw new IllegalStateException("interval " + interval + " vanished");
		}
	}

	/** OPTIMISTIC work: a non-atomic increment and the token, on the work's transactional connection. */
	private static void countInTransaction(HikariDataSource dataSource, String resource, long token) {
		Connection c = DataSourceUtils.getConnection(dataSource);
		try {
			long value;
			try (PreparedStatement read = c.prepareStatement("SELECT value FROM lock_test_counter WHERE name = ?")) {
				read.setString(1, resource);
				try (ResultSet rs = read.executeQuery()) {
					rs.next();
					value = rs.getLong(1);
				}
			}
			update(c, "UPDATE lock_test_counter SET value = ? WHERE name = ?", value + 1, resource);
			update(c, "INSERT INTO lock_test_token (name, token) VALUES (?, ?)", resource, token);
		}
		catch (SQLException ex) {
			throw new IllegalStateException(ex);
		}
		finally {
			DataSourceUtils.releaseConnection(c, dataSource);
		}
	}
}
