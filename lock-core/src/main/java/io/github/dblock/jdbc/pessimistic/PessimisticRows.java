package io.github.dblock.jdbc.pessimistic;

import io.github.dblock.jdbc.sql.CallDeadline;
import io.github.dblock.jdbc.sql.JdbcLockSupport;
import io.github.dblock.jdbc.sql.KnownRows;
import io.github.dblock.jdbc.sql.LockRows;
import io.github.dblock.jdbc.sql.LockStatements;
import io.github.dblock.jdbc.sql.SqlErrors;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.TimeUnit;

import io.github.dblock.spi.LockRequest;
import org.jspecify.annotations.Nullable;

/**
 * The lock rows of {@link PessimisticLockProvider}: a missing row is created as a free row by its own autocommit
 * statement, outside the locking transaction (see the provider's class comment for why), and this JVM remembers for
 * a while which rows exist; and the holder of a busy row, for messages. Thread-safe.
 */
final class PessimisticRows {

	/** Bound on immediate re-attempts of a locking statement that met a free row with a stale clock. */
	static final int MAX_CREATION_RACES = 5;

	private final JdbcLockSupport jdbc;

	private final LockStatements sql;

	private final LockRows rows;

	/** Rows known to exist (a hint kept for a minute). */
	private final KnownRows knownRows = new KnownRows();

	PessimisticRows(JdbcLockSupport jdbc, LockStatements sql, LockRows rows) {
		this.jdbc = jdbc;
		this.sql = sql;
		this.rows = rows;
	}

	/** Notes that a resource's row exists (it was just locked or seen). */
	void known(String resource) {
		this.knownRows.add(resource);
	}

	/** Forgets a row found deleted. */
	void forget(String resource) {
		this.knownRows.forget(resource);
	}

	/**
	 * How long a caller with a shorter wait time keeps trying to create a missing row while other nodes' locking
	 * statements hold the gap where it goes (see {@link #createRow}).
	 */
	private static final long CREATION_PATIENCE_NANOS = TimeUnit.MILLISECONDS.toNanos(250);

	/**
	 * Creates the free row of a resource found missing, on a connection outside any transaction, and returns once
	 * the row exists: {@code true}, or {@code false} when it could not be created within the caller's wait time
	 * (at least {@link #CREATION_PATIENCE_NANOS}).
	 * <p>
	 * While the row is missing, the locking statement must not run again: an InnoDB {@code UPDATE} of a missing
	 * primary key (REPEATABLE READ) locks the gap where the key would go until its transaction ends, and that gap
	 * lock blocks every node's {@code INSERT} of the row. With a zero wait, nodes that kept alternating between the
	 * two could each block the others' inserts until all gave up, and nobody got a lock that nobody held. So a node
	 * that could not insert looks at the row (a plain read, no lock) and tries the insert again a few milliseconds
	 * later, until the row exists. The gap locks it waits out belong to other nodes' first locking statements, each
	 * held for one round trip.
	 */
	boolean createRow(Connection connection, LockRequest request) throws SQLException, InterruptedException {
		long patience = Math.max(request.remainingNanos(), CREATION_PATIENCE_NANOS);
		long start = System.nanoTime();
		while (!insertFreeRow(connection, request)
				&& this.rows.peek(connection, request.resource(), this.jdbc.statementTimeoutSeconds()) == null) {
			if (System.nanoTime() - start >= patience) {
				return false;
			}
			TimeUnit.MILLISECONDS.sleep(1 + java.util.concurrent.ThreadLocalRandom.current().nextInt(3));
		}
		this.knownRows.add(request.resource());
		return true;
	}

	/**
	 * Inserts a free row for a never-seen resource in its own autocommit statement: {@code true} once the row exists
	 * (inserted here, or a duplicate key), {@code false} when a lock blocked the insert for the caller's wait time.
	 * The insert waits for a lock when another node has just created and locked the row (its duplicate-key check) or
	 * when another transaction holds the gap where the row goes, so that wait is bounded like the lock wait.
	 */
	@SuppressWarnings("NullAway") // a lambda returns null for BoundedStatement<T extends @Nullable Object>: see pom.xml
	private boolean insertFreeRow(Connection connection, LockRequest request) throws SQLException, InterruptedException {
		try {
			this.sql.runWithLockWait(connection, PessimisticFencing.waitSeconds(request), this.sql.lease.rowInsertFree, false, false, (ps) -> {
				ps.setQueryTimeout(PessimisticFencing.waitSeconds(request) + this.jdbc.statementTimeoutSeconds());
				ps.setBytes(1, LockRows.bytes(request.resource()));
				ps.executeUpdate();
				return null;
			});
			JdbcLockSupport.commitIfNeeded(connection); // a pool may hand out connections with autocommit off
			return true;
		}
		catch (SQLException ex) {
			if (Thread.currentThread().isInterrupted()) {
				throw new InterruptedException("interrupted while creating the lock row of '" + request.resource() + "'");
			}
			if (SqlErrors.isDuplicateKey(ex)) {
				return true;
			}
			if (SqlErrors.isLockUnavailable(ex)) {
				return false;
			}
			throw ex;
		}
	}

	/**
	 * Makes sure a row exists before a transaction we do not own locks it (see the class comment of {@link PessimisticLockProvider}); {@code false}
	 * when other nodes' statements kept it from being created (see {@link #createRow}). The pool wait and every reply
	 * end by the call's deadline.
	 */
	boolean ensureRow(LockRequest request, CallDeadline deadline) throws InterruptedException {
		if (this.knownRows.contains(request.resource())) {
			return true;
		}
		try (Connection connection = this.jdbc.rawConnection(deadline)) {
			int previousReads = connection.getNetworkTimeout();
			deadline.boundLockWaitReads(connection); // the insert may wait for a row lock as long as the caller
			try {
				if (this.rows.peek(connection, request.resource(), this.jdbc.statementTimeoutSeconds()) == null) {
					return createRow(connection, request);
				}
			}
			finally {
				JdbcLockSupport.restoreReads(connection, previousReads);
			}
		}
		catch (SQLException ex) {
			throw this.jdbc.translate("create the lock row of '" + request.resource() + "'", ex);
		}
		this.knownRows.add(request.resource());
		return true;
	}

	/** Reads the lock row on a connection of its own, within the call's deadline. */
	@SuppressWarnings("NullAway") // a lambda returns null for ConnectionWork<T extends @Nullable Object>: see pom.xml
	LockRows.@Nullable Peek peek(LockRequest request, CallDeadline deadline) {
		return this.jdbc.execute("read the lock row of '" + request.resource() + "'", deadline,
				(connection) -> this.rows.peek(connection, request.resource(), this.jdbc.statementTimeoutSeconds()));
	}

	/**
	 * How long a description of a busy row may take: the caller already holds a connection (its transaction's, or
	 * its own), so on an exhausted pool the description is left out after half of this rather than waited for.
	 */
	private static final long DESCRIPTION_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

	/**
	 * The row is locked by another transaction, whose holder is not committed yet: say who held it last, if the
	 * call's deadline, and at most {@link #DESCRIPTION_NANOS}, leave time to read it.
	 */
	String describeBusy(LockRequest request, CallDeadline deadline) {
		if (deadline.passed()) {
			return "an open transaction holding the row lock";
		}
		try {
			LockRows.Peek peek = peek(request, deadline.within(DESCRIPTION_NANOS));
			String last = (peek != null && peek.holder() != null) ? "; last committed holder: " + peek.holder() : "";
			return "an open transaction holding the row lock" + last;
		}
		catch (RuntimeException ex) {
			return "an open transaction holding the row lock";
		}
	}

}
