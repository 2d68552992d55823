package io.github.dblock.jdbc.pessimistic;

import io.github.dblock.jdbc.sql.CallDeadline;
import io.github.dblock.jdbc.sql.JdbcLockSupport;
import io.github.dblock.jdbc.sql.JdbcWait;
import io.github.dblock.jdbc.sql.LockRows;
import io.github.dblock.jdbc.sql.LockStatements;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import io.github.dblock.LockLimitExceededException;
import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.wait.WaitLoop;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.dao.DataAccessException;

/**
 * The acquisitions of {@link PessimisticLockProvider} outside any transaction: each on a connection of its own, within
 * the provider's cap, which holds the lock until its release ({@code COMMIT}). The row is waited for in the server,
 * polled with the back-off while held under a lease, created when missing; a broken connection is ridden out on a new
 * one until the deadline ({@link WaitLoop}). Thread-safe.
 */
final class OwnConnectionLocks {

	/** The provider's logger: these messages are the provider's. */
	private static final Log logger = LogFactory.getLog(OwnConnectionLocks.class);

	private final JdbcLockSupport jdbc;

	private final LockRows rows;

	private final PessimisticFencing locking;

	private final PessimisticRows creation;

	private final HolderSessions sessions;

	/** The provider's cap on connections of their own. */
	private final Semaphore connections;

	private final int maxConnections;

	private final WaitLoop waits;

	/** Whether the provider's fencing setting is SERVER_CLOCK, read at each attempt. */
	private final BooleanSupplier serverClockFencing;

	OwnConnectionLocks(JdbcLockSupport jdbc, LockRows rows, PessimisticFencing locking, PessimisticRows creation,
			HolderSessions sessions, Semaphore connections, int maxConnections, WaitLoop waits,
			BooleanSupplier serverClockFencing) {
		this.jdbc = jdbc;
		this.rows = rows;
		this.locking = locking;
		this.creation = creation;
		this.sessions = sessions;
		this.connections = connections;
		this.maxConnections = maxConnections;
		this.waits = waits;
		this.serverClockFencing = serverClockFencing;
	}

	/** Quick re-attempts after a row lock that may belong to another statement rather than a holder. */
	private static final int MAX_LOCKED_RETRIES = 3;

	/**
	 * On a connection of its own, a broken connection ended the attempt's transaction on the server (nothing of it
	 * is left behind), so the attempt is simply made again on a new connection while the wait time lasts: a waiter
	 * rides out a server restart or a killed connection (the shared {@link WaitLoop}; each attempt waits on its own).
	 * Every attempt's pool wait and replies end by the call's one {@link JdbcLockSupport#acquisitionDeadline}.
	 */
	AcquireResult acquire(LockRequest request) throws InterruptedException {
		return this.waits.run(request::remainingNanos,
				new OwnConnectionWait(request, this.jdbc.acquisitionDeadline(request)));
	}

	/** Attempts on connections of their own; each one ends with an answer unless its connection failed. */
	private final class OwnConnectionWait implements JdbcWait<Optional<AcquireResult>, AcquireResult> {

		private final LockRequest request;

		private final CallDeadline deadline;

		/** The last failure ridden out. */
		@Nullable
		private DataAccessException outage;

		OwnConnectionWait(LockRequest request, CallDeadline deadline) {
			this.request = request;
			this.deadline = deadline;
		}

		@Override
		public Optional<AcquireResult> attempt(int attempt) throws InterruptedException {
			return Optional.of(acquireOnOwnConnectionOnce(this.request, this.deadline));
		}

		@Override
		public @Nullable AcquireResult result(Optional<AcquireResult> outcome) {
			return outcome.orElse(null);
		}

		/** Only after an outage (every other attempt answers): as if the deadline had passed during it. */
		@Override
		public AcquireResult atDeadline(Optional<AcquireResult> outcome) {
			DataAccessException last = this.outage;
			return (last != null) ? JdbcWait.timedOutUnlessUnreachable(last) : outcome.orElseThrow();
		}

		@Override
		public String waitingFor() {
			return "acquiring '" + this.request.resource() + "'";
		}

		@Override
		public Optional<AcquireResult> afterOutage(DataAccessException ex) {
			this.outage = ex;
			return Optional.empty();
		}

		/** Reached, but no answer in time: not acquired, with the cause. */
		@Override
		public AcquireResult outageAtDeadline(DataAccessException ex) {
			return JdbcWait.timedOutUnlessUnreachable(ex);
		}

	}

	/**
	 * One attempt on a connection of its own: waits for a slot of the cap, takes a connection and locks the row on it
	 * ({@link #lockOnOwnConnection}); the connection is kept while the lock is held, else closed.
	 */
	private AcquireResult acquireOnOwnConnectionOnce(LockRequest request, CallDeadline deadline)
			throws InterruptedException {
		// a caller with a wait time waits for a slot within it, instead of failing while the slots are all in use
		if (!this.connections.tryAcquire(request.remainingNanos(), TimeUnit.NANOSECONDS)) {
			throw new LockLimitExceededException(request.resource(), this.maxConnections);
		}
		Connection connection = null;
		boolean held = false;
		int previousReads = 0;
		try {
			// every reply of the acquisition is due by the call's deadline, also when the connection itself came late
			connection = this.jdbc.rawConnection(deadline);
			previousReads = connection.getNetworkTimeout();
			deadline.boundLockWaitReads(connection);
			this.sessions.boundIdleSession(connection);
			AcquireResult result = lockOnOwnConnection(connection, request, deadline, previousReads);
			held = result.lock() != null;
			return result;
		}
		catch (SQLException ex) {
			throw this.jdbc.translate("lock '" + request.resource() + "'", JdbcLockSupport.onClosedConnection(connection, ex));
		}
		finally {
			if (!held) {
				if (connection != null) {
					try {
						HolderSessions.execute(connection, LockStatements.ROLLBACK);
					}
					catch (SQLException ex) {
						// the connection is discarded below; the server ends its transaction
					}
				}
				this.sessions.restoreIdleSession(connection);
				HolderSessions.closeQuietly(connection, false, previousReads);
				this.connections.release();
			}
		}
	}

	/**
	 * Locks the row on a connection of its own, one transaction per try, until it is held or found busy at the
	 * deadline: a row locked by a transaction is waited for in the server; one held under a lease is polled with the
	 * back-off; a missing row is created first.
	 */
	private AcquireResult lockOnOwnConnection(Connection connection, LockRequest request, CallDeadline deadline,
			int previousReads) throws SQLException, InterruptedException {
		int lockedRetries = 0;
		int freeRetries = 0;
		for (int attempt = 0;; attempt++) {
			String owner = UUID.randomUUID().toString();
			if (attempt > 0) {
				// a later attempt's statements, and the peek after them, reply by the call's bound
				deadline.boundLockWaitReads(connection);
			}
			HolderSessions.execute(connection, LockStatements.START_TRANSACTION);
			PessimisticFencing.Locking result = this.locking.lockRow(connection, request, owner,
					this.serverClockFencing.getAsBoolean());
			Long token = result.token();
			if (token != null) {
				this.creation.known(request.resource());
				return AcquireResult.acquired(this.sessions.rowLock(connection, owner, token, previousReads));
			}
			HolderSessions.execute(connection, LockStatements.ROLLBACK);
			if (result.rowLocked()) {
				// Other statements hold row locks for an instant too (the duplicate-key check of a node creating the
				// row, a LEASE statement in flight); a no-wait attempt would report busy although nobody holds the
				// lock. So look again a few times, a few milliseconds apart, before saying busy.
				if (lockedRetries++ < MAX_LOCKED_RETRIES) {
					TimeUnit.MILLISECONDS.sleep(1 + java.util.concurrent.ThreadLocalRandom.current().nextInt(3));
					continue;
				}
				return AcquireResult.busy(this.creation.describeBusy(request, deadline));
			}
			LockRows.Peek peek = this.rows.peek(connection, request.resource(), this.jdbc.statementTimeoutSeconds());
			if (peek == null) {
				if (!this.creation.createRow(connection, request)) {
					return AcquireResult.busy("other nodes creating the same new lock row");
				}
				continue;
			}
			if (peek.leaseRemainingNanos() <= 0 && freeRetries++ < PessimisticRows.MAX_CREATION_RACES) {
				// the statement matched nothing although the row is free: its clock (fixed when it started)
				// predated the write that created or freed the row, typically another node's creation of a new
				// row. Now that the row is known to exist, the next attempt re-runs such a statement at once.
				this.creation.known(request.resource());
				continue;
			}
			if (!sleepBeforeRetry(request, attempt, peek, connection)) {
				return AcquireResult.busy(peek.holderDescription());
			}
		}
	}

	/**
	 * Sleeps before the next attempt on a row held by a LEASE-mode owner; false when the deadline has passed. Given a
	 * connection outside any transaction (no row lock of ours on the row) and a lease still running, first announces
	 * the waiter to the LEASE holder's JVM, so that its own queued threads hold back for this one (see
	 * {@link LockRows#announceWaiter}).
	 */
	private boolean sleepBeforeRetry(LockRequest request, int attempt, LockRows.Peek peek,
			@Nullable Connection autocommit) throws InterruptedException {
		long remaining = request.remainingNanos();
		if (remaining <= 0) {
			return false;
		}
		long pause = this.waits.backoff().pauseNanos(attempt, peek.leaseRemainingNanos(), remaining);
		if (autocommit != null && peek.leaseRemainingNanos() > 0 && pause < remaining) {
			try {
				this.rows.announceWaiter(autocommit, request.resource(), pause + this.waits.backoff().initial().toNanos(),
						this.jdbc.statementTimeoutSeconds());
			}
			catch (SQLException ex) {
				logger.debug("Could not announce a waiter for lock '" + request.resource() + "'", ex);
			}
		}
		TimeUnit.NANOSECONDS.sleep(pause);
		return true;
	}

}
