package io.github.dblock.testing;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLIntegrityConstraintViolationException;
import java.sql.SQLTimeoutException;
import java.sql.SQLTransactionRollbackException;
import java.time.Duration;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import javax.sql.DataSource;

import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.LockType;
import io.github.dblock.jdbc.sql.LockTable;
import org.jspecify.annotations.Nullable;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.UncategorizedSQLException;
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;
import org.springframework.jdbc.support.SQLExceptionSubclassTranslator;

/**
 * {@link LockFaults} on the real lock table: each fault is one short transaction of bind-parameter statements on the
 * library's own tables ({@code <table>}, {@code <table>_rw_hold}, {@code <table>_rw}), on a connection of its own
 * taken from the lock {@code DataSource} (never a test's transaction: the fault is committed, and visible to every
 * node, before the method returns). Instants come from the database server's clock, as the locks' own do. The
 * holders find a fault through the library's normal statements: an owner-checked release or renewal that matches no
 * row ({@link io.github.dblock.LockLostException}, {@code onLost} at the next renewal, a third of the lease time
 * later: give the test a short {@code distributed-lock.lease-time}, 1 s at least, to see it within a second), a
 * commit check that finds the row no longer the holder's, a take that finds the lease running.
 * <p>
 * With Spring Boot, {@code @AutoConfigureDistributedLocks} adds one as a bean on the lock table and data source.
 * Without it: {@code new JdbcLockFaults(dataSource, LockTable.of("distributed_lock"), Duration.ofSeconds(5))}.
 * <p>
 * A PESSIMISTIC holder keeps its row locked in an open transaction: a fault on its resource waits for it up to the
 * statement timeout and then fails with {@link IllegalStateException} (such a lock ends only with its transaction),
 * and {@link #isLocked} counts it. Needs MySQL 8.0+ or MariaDB 10.6+ ({@code SKIP LOCKED}).
 * <p>
 * Thread-safe. {@link #close()} ends the stalls still running.
 */
public final class JdbcLockFaults implements LockFaults, AutoCloseable {

	private static final AtomicInteger threads = new AtomicInteger();

	private final DataSource dataSource;

	private final LockTable table;

	private final int timeoutSeconds;

	private final LockFaultStatements sql;

	/** The threads whose transactions hold rows locked for a {@link #stall}. */
	private final Set<Thread> stalls = ConcurrentHashMap.newKeySet();

	/**
	 * @param dataSource the data source of the lock table (a {@code TransactionAwareDataSourceProxy} is unwrapped, so
	 * that faults never join a transaction of the test)
	 * @param table the lock table, as configured ({@code distributed-lock.table-name})
	 * @param statementTimeout how long each statement may run or wait for a row lock, whole seconds, at least 1 s
	 * @throws IllegalArgumentException if an argument is null or the timeout shorter than 1 s
	 */
	public JdbcLockFaults(DataSource dataSource, LockTable table, Duration statementTimeout) {
		if (dataSource == null || table == null) {
			throw new IllegalArgumentException("dataSource and table must not be null");
		}
		if (statementTimeout == null || statementTimeout.compareTo(Duration.ofSeconds(1)) < 0) {
			throw new IllegalArgumentException("statementTimeout must be at least 1 s, was " + statementTimeout);
		}
		this.dataSource = (dataSource instanceof TransactionAwareDataSourceProxy proxy
				&& proxy.getTargetDataSource() != null) ? proxy.getTargetDataSource() : dataSource;
		this.table = table;
		this.timeoutSeconds = (int) Math.min(Integer.MAX_VALUE, Math.max(1, statementTimeout.toSeconds()));
		this.sql = new LockFaultStatements(table);
	}

	/** The lock table the faults act on. */
	public LockTable table() {
		return this.table;
	}

	@Override
	public boolean expire(String resource) {
		LockTemplate.validateResource(resource);
		return inTransaction("expire '" + resource + "'", (connection) -> {
			int exclusive = update(connection, this.sql.expireLease, key(resource));
			int readWrite = update(connection, this.sql.expireReadWrite, key(resource));
			return exclusive + readWrite > 0;
		});
	}

	@Override
	public long takeOver(String resource, LockType type, Duration leaseTime) {
		LockTemplate.validateResource(resource);
		if (type == null) {
			throw new IllegalArgumentException("type must not be null: EXCLUSIVE, READ or WRITE");
		}
		long leaseMicros = micros(positive(leaseTime, "leaseTime"));
		String owner = UUID.randomUUID().toString();
		String task = "take over '" + resource + "' (" + type + ")";
		if (type == LockType.EXCLUSIVE) {
			return inTransaction(task, (connection) -> takeOverRow(connection, resource, owner, leaseMicros));
		}
		return inTransaction(task, (connection) -> {
			lockReadWriteRow(connection, resource);
			update(connection, this.sql.advanceReadWriteToken, key(resource));
			long token = queryLong(connection, this.sql.readWriteToken, key(resource));
			if (type == LockType.WRITE) {
				update(connection, this.sql.expireReadWrite, key(resource));
			}
			else {
				update(connection, this.sql.expireWriters, key(resource), "W");
			}
			update(connection, this.sql.insertReadWriteHold, key(resource), owner, (type == LockType.WRITE) ? "W" : "R",
					InMemoryLockStore.ANOTHER_OWNER, token, leaseMicros);
			return token;
		});
	}

	private long takeOverRow(Connection connection, String resource, String owner, long leaseMicros)
			throws SQLException {
		if (!exists(connection, this.sql.lockRow, resource)) {
			try {
				update(connection, this.sql.insertTakenRow, key(resource), owner, InMemoryLockStore.ANOTHER_OWNER,
						leaseMicros);
				return queryLong(connection, this.sql.rowToken, key(resource));
			}
			catch (SQLIntegrityConstraintViolationException ex) {
				// a node inserted the row meanwhile: take it as it is
				exists(connection, this.sql.lockRow, resource);
			}
		}
		update(connection, this.sql.takeRow, owner, InMemoryLockStore.ANOTHER_OWNER, leaseMicros, key(resource));
		return queryLong(connection, this.sql.rowToken, key(resource));
	}

	private void lockReadWriteRow(Connection connection, String resource) throws SQLException {
		if (!exists(connection, this.sql.lockReadWriteRow, resource)) {
			try {
				update(connection, this.sql.insertReadWriteRow, key(resource));
			}
			catch (SQLIntegrityConstraintViolationException ex) {
				// a node inserted it meanwhile
			}
			exists(connection, this.sql.lockReadWriteRow, resource);
		}
	}

	@Override
	public boolean endLeaseIn(String resource, Duration remaining) {
		LockTemplate.validateResource(resource);
		if (remaining == null || remaining.isNegative() || remaining.compareTo(LockOptions.MAX_LEASE_TIME) > 0) {
			throw new IllegalArgumentException("remaining must be zero to " + LockOptions.MAX_LEASE_TIME.toDays()
					+ " days, was " + remaining);
		}
		long micros = micros(remaining);
		return inTransaction("end the leases of '" + resource + "' in " + remaining, (connection) -> {
			int exclusive = update(connection, this.sql.moveLease, micros, key(resource));
			int readWrite = update(connection, this.sql.moveReadWrite, micros, key(resource));
			return exclusive + readWrite > 0;
		});
	}

	/**
	 * {@inheritDoc}
	 * <p>
	 * On the real table: makes sure the resource has its exclusive and read/write rows (free ones, if it had none),
	 * then a transaction on a daemon thread of its own locks both ({@code SELECT ... FOR UPDATE}) and keeps them
	 * locked for the duration. While it does, {@link #isLocked} answers {@code true}.
	 */
	@Override
	public void stall(String resource, Duration duration) {
		LockTemplate.validateResource(resource);
		long nanos = positive(duration, "duration").toNanos();
		inTransaction("create the rows of '" + resource + "'", (connection) -> {
			insertIfAbsent(connection, this.sql.insertFreeRow, resource);
			insertIfAbsent(connection, this.sql.insertReadWriteRow, resource);
			return Boolean.TRUE;
		});
		CountDownLatch locked = new CountDownLatch(1);
		AtomicReference<@Nullable RuntimeException> failure = new AtomicReference<>();
		Thread thread = new Thread(() -> {
			try {
				inTransaction("stall '" + resource + "'", (connection) -> {
					exists(connection, this.sql.lockRow, resource);
					exists(connection, this.sql.lockReadWriteRow, resource);
					locked.countDown();
					try {
						TimeUnit.NANOSECONDS.sleep(nanos);
					}
					catch (InterruptedException ex) {
						Thread.currentThread().interrupt(); // close(): end the stall now
					}
					return Boolean.TRUE;
				});
			}
			catch (RuntimeException ex) {
				failure.set(ex);
			}
			finally {
				this.stalls.remove(Thread.currentThread());
				locked.countDown();
			}
		}, "lock-faults-stall-" + threads.incrementAndGet());
		thread.setDaemon(true);
		this.stalls.add(thread);
		thread.start();
		try {
			locked.await();
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			thread.interrupt();
			throw new IllegalStateException("Interrupted while stalling '" + resource + "'", ex);
		}
		RuntimeException failed = failure.get();
		if (failed != null) {
			throw failed;
		}
	}

	private void insertIfAbsent(Connection connection, String insert, String resource) throws SQLException {
		try {
			update(connection, insert, key(resource));
		}
		catch (SQLIntegrityConstraintViolationException ex) {
			// the row exists
		}
	}

	@Override
	public boolean isLocked(String resource) {
		LockTemplate.validateResource(resource);
		return inTransaction("read whether '" + resource + "' is locked", (connection) -> {
			Boolean taken = null;
			try (PreparedStatement ps = prepare(connection, this.sql.rowTaken, key(resource));
					ResultSet rs = ps.executeQuery()) {
				if (rs.next()) {
					taken = rs.getBoolean(1);
				}
			}
			if (Boolean.TRUE.equals(taken) || queryLong(connection, this.sql.liveReadWriteHolds, key(resource)) > 0) {
				return true;
			}
			// a PESSIMISTIC holder's row lock is uncommitted: the row is there, but locked by its transaction
			return taken != null && !exists(connection, this.sql.rowUnlessLocked, resource);
		});
	}

	/** Ends the stalls still running now (their transactions roll back and their row locks go). */
	@Override
	public void close() {
		for (Thread thread : this.stalls) {
			thread.interrupt();
		}
	}

	@Override
	public String toString() {
		return "JdbcLockFaults[" + this.table + "]";
	}

	// ---- JDBC ----

	/** One transaction's work. */
	@FunctionalInterface
	private interface Work<T> {

		T run(Connection connection) throws SQLException;

	}

	/**
	 * Runs the work in one transaction on a connection of its own and commits it; a row lock that stays taken for the
	 * statement timeout becomes an {@link IllegalStateException}, other failures a {@link DataAccessException}. The
	 * transaction runs at READ COMMITTED: each statement reads the latest committed rows, so MariaDB's snapshot
	 * isolation (ON by default from 11.6.2, error 1020 at REPEATABLE READ) never refuses a write or locking read after
	 * a plain read of a row another transaction changed meanwhile.
	 */
	private <T> T inTransaction(String task, Work<T> work) {
		try (Connection connection = this.dataSource.getConnection()) {
			boolean autoCommit = connection.getAutoCommit();
			int isolation = connection.getTransactionIsolation();
			connection.setAutoCommit(false);
			connection.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
			try {
				T result = work.run(connection);
				connection.commit();
				return result;
			}
			catch (SQLException | RuntimeException ex) {
				try {
					connection.rollback();
				}
				catch (SQLException ignored) {
					// the original failure is reported
				}
				throw ex;
			}
			finally {
				connection.setAutoCommit(autoCommit);
				connection.setTransactionIsolation(isolation);
			}
		}
		catch (SQLException ex) {
			if (isLockWait(ex)) {
				throw new IllegalStateException("Could not " + task + ": its row in " + this.table + " stayed locked by "
						+ "another transaction (a PESSIMISTIC holder?) for " + this.timeoutSeconds + " s; such a lock "
						+ "ends only with its transaction", ex);
			}
			DataAccessException translated = new SQLExceptionSubclassTranslator().translate(task, null, ex);
			throw (translated != null) ? translated : new UncategorizedSQLException(task, null, ex);
		}
	}

	/** A lock wait timeout (1205), or the driver's query timeout. */
	private static boolean isLockWait(SQLException ex) {
		for (Throwable cause = ex; cause != null; cause = cause.getCause()) {
			if (cause instanceof SQLTimeoutException
					|| (cause instanceof SQLException sql && sql.getErrorCode() == 1205)) {
				return true;
			}
			if (cause instanceof SQLTransactionRollbackException rollback && rollback.getErrorCode() == 1205) {
				return true;
			}
		}
		return false;
	}

	private PreparedStatement prepare(Connection connection, String statement, Object... parameters)
			throws SQLException {
		PreparedStatement ps = connection.prepareStatement(statement);
		try {
			ps.setQueryTimeout(this.timeoutSeconds);
			for (int i = 0; i < parameters.length; i++) {
				ps.setObject(i + 1, parameters[i]);
			}
			return ps;
		}
		catch (SQLException | RuntimeException ex) {
			ps.close();
			throw ex;
		}
	}

	private int update(Connection connection, String statement, Object... parameters) throws SQLException {
		try (PreparedStatement ps = prepare(connection, statement, parameters)) {
			return ps.executeUpdate();
		}
	}

	private long queryLong(Connection connection, String statement, Object... parameters) throws SQLException {
		try (PreparedStatement ps = prepare(connection, statement, parameters); ResultSet rs = ps.executeQuery()) {
			rs.next();
			return rs.getLong(1);
		}
	}

	/** Whether the query (by resource) returns a row. */
	private boolean exists(Connection connection, String statement, String resource) throws SQLException {
		try (PreparedStatement ps = prepare(connection, statement, key(resource)); ResultSet rs = ps.executeQuery()) {
			return rs.next();
		}
	}

	/** The resource as the lock table stores it: UTF-8 bytes. */
	private static byte[] key(String resource) {
		return resource.getBytes(StandardCharsets.UTF_8);
	}

	private static Duration positive(@Nullable Duration duration, String name) {
		if (duration == null || duration.isNegative() || duration.isZero()
				|| duration.compareTo(LockOptions.MAX_LEASE_TIME) > 0) {
			throw new IllegalArgumentException(name + " must be positive and at most "
					+ LockOptions.MAX_LEASE_TIME.toDays() + " days, was " + duration);
		}
		return duration;
	}

	private static long micros(Duration duration) {
		return duration.toNanos() / 1000;
	}

}
