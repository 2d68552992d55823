package io.github.dblock.reliability;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

import javax.sql.DataSource;

import io.github.dblock.LockMode;
import io.github.dblock.LockTemplate;
import io.github.dblock.jdbc.pessimistic.PessimisticLockProvider;
import io.github.dblock.spi.LockProvider;

/**
 * What the worker JVMs of {@link ChaosWorker} share: the lock template of a mode argument, the
 * stop signal (standard input closing), the section records and their output protocol (one line per event, flushed).
 */
final class Workers {

	private Workers() {
	}

	/** This JVM as a lock node: {@code process-<pid>}. */
	static String node() {
		return "process-" + ProcessHandle.current().pid();
	}

	/** The mode of a mode argument: {@code LEASE}, {@code PESSIMISTIC/SERVER_CLOCK} and so on. */
	static LockMode mode(String modeArgument) {
		return LockMode.valueOf(modeArgument.split("/")[0]);
	}

	/**
	 * A template on {@code provider} alone in the argument's mode, with the default wait time zero and the given
	 * default lease time; a {@code /<fencing>} after the mode sets the PESSIMISTIC provider's fencing.
	 */
	static LockTemplate template(String modeArgument, LockProvider provider, Duration lease) {
		String[] parts = modeArgument.split("/");
		if (parts.length > 1) {
			((PessimisticLockProvider) provider).setFencing(PessimisticLockProvider.Fencing.valueOf(parts[1]));
		}
		return new LockTemplate(List.of(provider), LockMode.valueOf(parts[0]), Duration.ZERO, lease, node());
	}

	/** A flag that becomes true when standard input closes (the test's way to stop a worker), read by a daemon. */
	static AtomicBoolean stopWhenStandardInputCloses() {
		AtomicBoolean stop = new AtomicBoolean();
		Thread stdin = new Thread(() -> {
			try {
				System.in.transferTo(java.io.OutputStream.nullOutputStream());
			}
			catch (java.io.IOException ex) {
				// stop all the same
			}
			stop.set(true);
		});
		stdin.setDaemon(true);
		stdin.start();
		return stop;
	}

	/**
	 * Records a section's entry in {@code table} (a constant of the caller: {@code resource, holder, token,
	 * entered_at} columns and an auto-increment id), on the server's clock.
	 * @return the section's id
	 */
	static long enter(DataSource dataSource, String table, String resource, String holder, long token) {
		try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
				"INSERT INTO " + table + " (resource, holder, token, entered_at) VALUES (?, ?, ?, UTC_TIMESTAMP(6))",
				java.sql.Statement.RETURN_GENERATED_KEYS)) {
			ps.setString(1, resource);
			ps.setString(2, holder);
			ps.setLong(3, token);
			ps.executeUpdate();
			try (ResultSet keys = ps.getGeneratedKeys()) {
				keys.next();
				return keys.getLong(1);
			}
		}
		catch (SQLException ex) {
			throw new IllegalStateException(ex);
		}
	}

	/** One statement on a connection of its own (autocommit). @return the update count */
	static int update(DataSource dataSource, String sql, Object... args) {
		try (Connection c = dataSource.getConnection()) {
			return update(c, sql, args);
		}
		catch (SQLException ex) {
			throw new IllegalStateException(ex);
		}
	}

	/** One statement on {@code c}. @return the update count */
	static int update(Connection c, String sql, Object... args) throws SQLException {
		try (PreparedStatement ps = c.prepareStatement(sql)) {
			for (int i = 0; i < args.length; i++) {
				ps.setObject(i + 1, args[i]);
			}
			return ps.executeUpdate();
		}
	}

	/** Prints one line of the worker protocol, whole and flushed, whichever thread says it. */
	static synchronized void say(String line) {
		System.out.println(line);
		System.out.flush();
	}
}
