package io.github.dblock.jdbc.sql;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.HikariPoolMXBean;
import com.zaxxer.hikari.pool.HikariPool;
import org.springframework.util.ClassUtils;

/**
 * Takes a connection from the lock data source within a bound of the caller's, whatever the pool's own
 * {@code connectionTimeout} (HikariCP's default: 30 s), so that a lock call waiting for a pooled connection never
 * outlasts its own wait time by that much.
 * <p>
 * Relies on HikariCP: for a started {@link HikariDataSource} the connection comes from
 * {@link HikariPool#getConnection(long)}, HikariCP's own bounded borrow (the same one
 * {@code HikariDataSource.getConnection()} calls with the pool's timeout), so the pool's validation, eviction and
 * leak detection apply as usual. HikariCP may still overrun the bound by its {@code validationTimeout} when it finds
 * an idle connection dead on borrow. Any other pool is asked with {@link DataSource#getConnection()} and its own
 * timeout applies; the start-up checks warn about that. Thread-safe.
 * <p>
 * Internal machinery of the JDBC engine, public only so that the other {@code io.github.dblock.jdbc} packages
 * can use it: not API, may change in any release.
 */
public final class BoundedConnections {

	private static final boolean HIKARI_PRESENT = ClassUtils.isPresent("com.zaxxer.hikari.HikariDataSource",
			BoundedConnections.class.getClassLoader());

	private BoundedConnections() {
	}

	/**
	 * A connection within {@code timeoutNanos} (at least 1 ms), or the pool's failure.
	 * @throws SQLException the pool's failure: for HikariCP a {@link java.sql.SQLTransientConnectionException} when
	 * none came in time
	 */
	static Connection get(DataSource dataSource, long timeoutNanos) throws SQLException {
		if (HIKARI_PRESENT) {
			Connection connection = Hikari.get(dataSource, timeoutNanos);
			if (connection != null) {
				return connection;
			}
		}
		return dataSource.getConnection();
	}

	/**
	 * How long the pool itself waits for a free connection, in nanoseconds: HikariCP's {@code connectionTimeout}, or
	 * {@link Long#MAX_VALUE} for any other pool (unknown).
	 */
	public static long poolWaitNanos(DataSource dataSource) {
		return (HIKARI_PRESENT && Hikari.isHikari(dataSource)) ? Hikari.poolWaitNanos(dataSource) : Long.MAX_VALUE;
	}

	/** Whether connections of the data source are bounded per call (it is a HikariCP pool). */
	static boolean isBounded(DataSource dataSource) {
		return HIKARI_PRESENT && Hikari.isHikari(dataSource);
	}

	/** Loaded only when HikariCP is on the class path. */
	private static final class Hikari {

		static boolean isHikari(DataSource dataSource) {
			return dataSource instanceof HikariDataSource;
		}

		public static long poolWaitNanos(DataSource dataSource) {
			return TimeUnit.MILLISECONDS.toNanos(((HikariDataSource) dataSource).getConnectionTimeout());
		}

		/** The connection, or {@code null} when the data source is not a started HikariCP pool. */
		@org.jspecify.annotations.Nullable
		static Connection get(DataSource dataSource, long timeoutNanos) throws SQLException {
			if (!(dataSource instanceof HikariDataSource hikari) || hikari.isClosed()) {
				return null;
			}
			HikariPoolMXBean bean = hikari.getHikariPoolMXBean(); // null until the pool has started
			if (!(bean instanceof HikariPool pool)) {
				return null;
			}
			long millis = Math.max(1, Math.min(TimeUnit.NANOSECONDS.toMillis(timeoutNanos),
					hikari.getConnectionTimeout()));
			return pool.getConnection(millis);
		}

	}

}
