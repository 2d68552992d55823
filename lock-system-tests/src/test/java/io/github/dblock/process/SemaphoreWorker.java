package io.github.dblock.process;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.semaphore.PermitHandle;
import io.github.dblock.semaphore.SemaphoreOptions;
import io.github.dblock.semaphore.SemaphoreTemplate;
import io.github.dblock.test.nodes.SemaphoreNodes;

/**
 * A separate JVM process that uses a semaphore, started by {@link CrossProcessSemaphoreTests}.
 * <p>
 * {@code contend <url> <user> <password> <name> <threads> <iterations> <sectionMillis>}: each iteration takes a
 * permit, records its entry on the server's clock ({@code INSERT ... UTC_TIMESTAMP(6)}), stays inside for
 * {@code sectionMillis}, records its exit the same way, and gives the permit back. Prints {@code RESULT
 * acquisitions=N} and exits 0.
 * <p>
 * {@code hold <url> <user> <password> <name> <leaseMillis>}: takes a permit with that lease (no renewal), prints
 * {@code HOLDING <token>} and sleeps until killed.
 */
public final class SemaphoreWorker {

	private SemaphoreWorker() {
	}

	public static void main(String[] args) throws Exception {
		String command = args[0];
		String name = args[4];
		String node = "process-" + ProcessHandle.current().pid();
		try (HikariDataSource dataSource = LockWorker.dataSource(args)) {
			SemaphoreTemplate semaphores = SemaphoreNodes.node(node, dataSource);
			if (command.equals("hold")) {
				PermitHandle permit = semaphores.acquire(name, SemaphoreOptions.defaults()
					.withWaitTime(Duration.ofSeconds(30))
					.withLeaseTime(Duration.ofMillis(Long.parseLong(args[5]))));
				System.out.println("HOLDING " + permit.fencingToken());
				System.out.flush();
				Thread.sleep(Long.MAX_VALUE);
			}
			int threads = Integer.parseInt(args[5]);
			int iterations = Integer.parseInt(args[6]);
			long sectionMillis = Long.parseLong(args[7]);
			AtomicInteger acquisitions = new AtomicInteger();
			ExecutorService pool = Executors.newFixedThreadPool(threads);
			List<Future<?>> futures = new ArrayList<>();
			for (int t = 0; t < threads; t++) {
				String holder = node + "/" + t;
				futures.add(pool.submit(() -> {
					for (int i = 0; i < iterations; i++) {
						semaphores.executeWithoutResult(name, SemaphoreOptions.defaults().withWaitTime(Duration.ofMinutes(2)),
								(permit) -> section(dataSource, name, holder, permit.fencingToken(), sectionMillis));
						acquisitions.incrementAndGet();
					}
					return null;
				}));
			}
			for (Future<?> future : futures) {
				future.get();
			}
			pool.shutdown();
			System.out.println("RESULT acquisitions=" + acquisitions);
		}
	}

	/** Records the stay inside on the server's clock: entry after the permit was taken, exit before it is given back. */
	private static void section(HikariDataSource dataSource, String name, String holder, long token, long millis) {
		try (Connection c = dataSource.getConnection()) {
			long id;
			try (PreparedStatement enter = c.prepareStatement("INSERT INTO sem_test_interval (name, holder, token,"
					+ " entered_at) VALUES (?, ?, ?, UTC_TIMESTAMP(6))", Statement.RETURN_GENERATED_KEYS)) {
				enter.setString(1, name);
				enter.setString(2, holder);
				enter.setLong(3, token);
				enter.executeUpdate();
				try (ResultSet keys = enter.getGeneratedKeys()) {
					keys.next();
					id = keys.getLong(1);
				}
			}
			Thread.sleep(millis);
			try (PreparedStatement leave = c.prepareStatement(
					"UPDATE sem_test_interval SET left_at = UTC_TIMESTAMP(6) WHERE id = ?")) {
				leave.setLong(1, id);
				leave.executeUpdate();
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

}
