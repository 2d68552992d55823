package io.github.dblock.process;

import io.github.dblock.jdbc.pessimistic.PessimisticLockProvider;
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
import java.util.concurrent.atomic.AtomicInteger;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.test.nodes.LockNodes;
import org.springframework.jdbc.datasource.DataSourceUtils;

/**
 * A separate JVM process that contends for a lock, started by {@link CrossProcessLockTests}.
 * <p>
 * {@code contend <url> <user> <password> <mode> <resource> <threads> <iterations>}: each iteration takes the lock,
 * claims the probe row (a claim that fails means another holder is inside: a violation), increments a counter
 * with a non-atomic read and write, records its fencing token, clears the probe and releases. Prints
 * {@code RESULT acquisitions=N violations=M} and exits 0.
 * <p>
 * {@code hold <url> <user> <password> <mode> <resource> <leaseMillis>}: takes the lock, prints {@code HOLDING
 * <token>} and sleeps until killed.
 */
public final class LockWorker {

	private LockWorker() {
	}

	public static void main(String[] args) throws Exception {
		String command = args[0];
		// "<MODE>" or "PESSIMISTIC/<fencing>", e.g. PESSIMISTIC/SERVER_CLOCK
		String[] modeArg = args[4].split("/");
		LockMode mode = LockMode.valueOf(modeArg[0]);
		String resource = args[5];
		String node = "process-" + ProcessHandle.current().pid();
		try (HikariDataSource dataSource = dataSource(args)) {
			io.github.dblock.spi.LockProvider provider = LockNodes.provider(mode, dataSource);
			if (modeArg.length > 1) {
				((io.github.dblock.jdbc.pessimistic.PessimisticLockProvider) provider)
					.setFencing(io.github.dblock.jdbc.pessimistic.PessimisticLockProvider.Fencing.valueOf(modeArg[1]));
			}
			LockTemplate locks = LockNodes.node(provider, node);
			if (command.equals("hold")) {
				LockHandle lock = locks.acquire(resource,
						LockOptions.defaults().withLeaseTime(Duration.ofMillis(Long.parseLong(args[6]))));
				System.out.println("HOLDING " + lock.fencingToken());
				System.out.flush();
				Thread.sleep(Long.MAX_VALUE);
			}
			int threads = Integer.parseInt(args[6]);
			int iterations = Integer.parseInt(args[7]);
			AtomicInteger acquisitions = new AtomicInteger();
			AtomicInteger violations = new AtomicInteger();
			ExecutorService pool = Executors.newFixedThreadPool(threads);
			List<Future<?>> futures = new ArrayList<>();
			for (int t = 0; t < threads; t++) {
				String holder = node + "/" + t;
				futures.add(pool.submit(() -> {
					for (int i = 0; i < iterations; i++) {
						locks.executeWithoutResult(resource, LockOptions.defaults().withWaitTime(Duration.ofMinutes(2)),
								(lock) -> criticalSection(dataSource, mode, resource, holder, lock.fencingToken(), violations));
						acquisitions.incrementAndGet(); // counted once committed and released, not per OPTIMISTIC re-run
					}
					return null;
				}));
			}
			for (Future<?> future : futures) {
				future.get();
			}
			pool.shutdown();
			System.out.println("RESULT acquisitions=" + acquisitions + " violations=" + violations);
		}
	}

	/** A pool of 8 on {@code args[1..3]}: URL, user and password ({@code -} for none). */
	static HikariDataSource dataSource(String[] args) {
		return WorkerProcesses.dataSource(args, 8);
	}

	/**
	 * OPTIMISTIC work may overlap in time (only its commits are serialized), so it skips the probe and writes in
	 * the work's transaction, where a conflict rolls everything back; the other modes must exclude each other in
	 * time, which the probe checks on a connection of its own.
	 */
	private static void criticalSection(HikariDataSource dataSource, LockMode mode, String resource, String holder,
			long token, AtomicInteger violations) {
		boolean probe = mode != LockMode.OPTIMISTIC;
		Connection c = probe ? null : DataSourceUtils.getConnection(dataSource);
		try {
			if (c == null) {
				c = dataSource.getConnection();
			}
			if (probe && update(c, "UPDATE lock_test_probe SET holder = ? WHERE name = ? AND holder IS NULL", holder,
					resource) != 1) {
				violations.incrementAndGet();
			}
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
			if (probe && update(c, "UPDATE lock_test_probe SET holder = NULL WHERE name = ? AND holder = ?", resource,
					holder) != 1) {
				violations.incrementAndGet();
			}
		}
		catch (SQLException ex) {
			throw new IllegalStateException(ex);
		}
		finally {
			if (probe) {
				closeQuietly(c);
			}
			else {
				DataSourceUtils.releaseConnection(c, dataSource);
			}
		}
	}

	private static void closeQuietly(Connection c) {
		try {
			if (c != null) {
				c.close();
			}
		}
		catch (SQLException ex) {
			// the test fails elsewhere if the database is gone
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
