package io.github.dblock.jdbc.lease;

import io.github.dblock.jdbc.sql.CallDeadline;
import io.github.dblock.jdbc.sql.JdbcLockSupport;
import io.github.dblock.jdbc.sql.JdbcWait;
import io.github.dblock.jdbc.sql.KnownRows;
import io.github.dblock.jdbc.sql.LockRows;
import io.github.dblock.jdbc.sql.LockStatements;
import io.github.dblock.jdbc.sql.SqlErrors;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.wait.Backoff;
import io.github.dblock.wait.WaitLoop;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.dao.DataAccessException;

/**
 * The acquisition of an exclusive lease for {@link LeaseLockProvider} (see docs/DESIGN.md, "The LEASE algorithm", for the statements and
 * the waiters next in line): one wait of the shared {@link WaitLoop}, whose attempts take, read and insert the row,
 * and whose pauses announce this waiter as the next in line. Thread-safe; package-private.
 */
final class LeaseAcquisition {

	/** The provider's logger: these messages are the provider's. */
	private static final Log logger = LogFactory.getLog(LeaseAcquisition.class);

	/** Bound on immediate re-attempts after a lost race (insert collision, lease ending between statements). */
	private static final int MAX_RACES_PER_ATTEMPT = 4;

	/**
	 * How often, at most, the waiter next in line tries again while the lease it waits for is younger than
	 * {@link ExclusiveLease#HAND_OFF_BUDGET_NANOS} (a chain of another JVM that ends soon and hands the lease to it): each try is a
	 * take that matches nothing and a read, neither of which writes.
	 */
	private static final long NEXT_IN_LINE_POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(2);

	/**
	 * How long an announcement as next in line lasts at least; renewed by the waiter's attempts before it runs out.
	 * A waiter that dies while next in line holds the lock up after the release for the rest of it plus a second.
	 */
	private static final long NEXT_IN_LINE_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

	private final JdbcLockSupport jdbc;

	private final LockStatements sql;

	private final LockRows rows;

	private final WaitLoop waits;

	/** The provider's resources another node wanted lately (see {@link LeaseLockProvider}). */
	private final KnownRows contended;

	private final Leases leases;

	LeaseAcquisition(JdbcLockSupport jdbc, LockStatements sql, LockRows rows, WaitLoop waits, KnownRows contended,
			Leases leases) {
		this.jdbc = jdbc;
		this.sql = sql;
		this.rows = rows;
		this.waits = waits;
		this.contended = contended;
		this.leases = leases;
	}

	/** Makes a lock of a lease just taken (the provider starts its renewal). */
	@FunctionalInterface
	interface Leases {

		/**
		 * @param blockEnd the last fencing token of the block the take reserved
		 * @param sentAt when the take was sent ({@link System#nanoTime()})
		 * @param contended whether another node wanted the lock lately
		 */
		HeldLock leased(LockRequest request, String owner, long blockEnd, long sentAt, boolean contended);

	}

	/**
	 * Takes the lease of a resource, waiting until the request's deadline (see {@link LeaseLockProvider}); every pool
	 * wait, reply and announcement of the call ends by its {@link JdbcLockSupport#acquisitionDeadline}.
	 */
	AcquireResult acquire(LockRequest request) throws InterruptedException {
		return this.waits.run(request::remainingNanos, new Wait(request, this.jdbc.acquisitionDeadline(request)));
	}

	/** One wait for a lease: its owner token, and whether it is announced as the next in line. */
	private final class Wait implements JdbcWait<Attempt, AcquireResult> {

		private final LockRequest request;

		private final CallDeadline deadline;

		// One owner token for the whole wait: if the connection breaks after a take committed, the next attempt
		// matches the row by this token and takes it again instead of waiting for its own unknown lease to end.
		private final String owner = UUID.randomUUID().toString();

		private boolean announced;

		private boolean lookedAgain;

		Wait(LockRequest request, CallDeadline deadline) {
			this.request = request;
			this.deadline = deadline;
		}

		@Override
		public Attempt attempt(int attempt) {
			if (attempt == 1) {
				LeaseAcquisition.this.contended.add(this.request.resource());
			}
			Attempt result = attemptOnce(this.request, this.owner,
					LeaseAcquisition.this.contended.contains(this.request.resource()), this.deadline);
			HeldLock lock = result.lock();
			if (lock != null && LateLeases.arrivedLate(lock)) {
				// on the server the lease may have passed to another owner: the next take, with the same owner token,
				// takes the row again if it is still free or still this waiter's
				return new Attempt(null, LateLeases.giveBack(this.request, lock), 0);
			}
			return result;
		}

		@Override
		public @Nullable AcquireResult result(Attempt outcome) {
			return (outcome.lock() != null) ? AcquireResult.acquired(outcome.lock()) : null;
		}

		@Override
		public AcquireResult atDeadline(Attempt outcome) {
			return AcquireResult.busy(outcome.holderDescription());
		}

		@Override
		public String waitingFor() {
			return "acquiring '" + this.request.resource() + "'";
		}

		@Override
		public Attempt afterOutage(DataAccessException ex) {
			return Attempt.NONE;
		}

		@Override
		public AcquireResult outageAtDeadline(DataAccessException ex) {
			return JdbcWait.timedOutUnlessUnreachable(ex);
		}

		/**
		 * A lease taken less than a hand-off budget ago may be a chain of this holder's JVM, which ends within the
		 * budget (10 ms while contended) and then hands the lease to the waiter next in line: that one polls every
		 * couple of milliseconds meanwhile, so that it is there when the chain ends; other waiters poll at the first
		 * back-off step, and a longer hold gets the growing back-off.
		 */
		@Override
		public long pauseNanos(Attempt result, int attempt, long remaining, Backoff backoff) {
			boolean young = result.heldForNanos() < ExclusiveLease.HAND_OFF_BUDGET_NANOS;
			long pause = backoff.pauseNanos(young ? 0 : attempt, result.leaseRemainingNanos(), remaining);
			if (result.leaseRemainingNanos() > 0 && pause < remaining) {
				boolean nextInLine = result.nextInLine(this.owner, pause + backoff.initial().toNanos())
						|| announceSuccessor(this.request, this.owner, pause, this.deadline);
				this.announced |= nextInLine;
				if (!nextInLine && !this.lookedAgain) {
					// the announcement found the row released since it was read (freed, or handed to this waiter),
					// or another waiter in line: look once more at once rather than sleep past a free lock
					this.lookedAgain = true;
					return 0;
				}
				this.lookedAgain = false;
				if (nextInLine && young) {
					pause = Math.min(pause, NEXT_IN_LINE_POLL_NANOS / 2
							+ ThreadLocalRandom.current().nextLong(NEXT_IN_LINE_POLL_NANOS / 2 + 1));
				}
			}
			return pause;
		}

		@Override
		public void ended(@Nullable AcquireResult answer) {
			if (this.announced && (answer == null || answer.lock() == null)) {
				withdraw(this.request, this.owner);
			}
		}

	}

	/**
	 * @param contended whether another node wanted the lock lately (a take then gets the short hand-off budget)
	 * @param deadline the call's: bounds the pool wait and every reply of the attempt
	 */
	private Attempt attemptOnce(LockRequest request, String owner, boolean contended, CallDeadline deadline) {
		long leaseMicros = TimeUnit.NANOSECONDS.toMicros(request.leaseTime().toNanos());
		return this.jdbc.execute("acquire lock '" + request.resource() + "'", deadline, (connection) -> {
			int timeout = this.jdbc.queryTimeoutSeconds(request.remainingNanos());
			Attempt last = Attempt.NONE;
			for (int race = 0; race < MAX_RACES_PER_ATTEMPT; race++) {
				long sentAt = System.nanoTime();
				Long token;
				try {
					deadline.boundReads(connection);
					token = take(connection, request, owner, leaseMicros, timeout);
				}
				catch (SQLException ex) {
					if (SqlErrors.isBusy(ex)) {
						// the row is locked by a PESSIMISTIC holder's transaction for longer than this caller waits
						// (query timeout, MariaDB's max_statement_time, or the server's lock wait timeout): busy, not
						// a fault to retry
						return new Attempt(null, "an open transaction holding the row lock", 0);
					}
					throw ex;
				}
				if (token != null) {
					return new Attempt(this.leases.leased(request, owner, token, sentAt, contended), null, 0);
				}
				deadline.boundReads(connection);
				LockRows.Peek peek = this.rows.peek(connection, request.resource(), timeout);
				last = (peek != null) ? new Attempt(null, peek.holderDescription(), peek.leaseRemainingNanos(),
						peek.heldForNanos(), peek) : null;
				if (last != null && last.leaseRemainingNanos > 0) {
					return last;
				}
				if (last == null) {
					deadline.boundReads(connection);
					token = insert(connection, request, owner, leaseMicros, timeout);
					if (token != null) {
						return new Attempt(this.leases.leased(request, owner, token, sentAt, contended), null, 0);
					}
					last = Attempt.NONE;
				}
				// lost a race (another node inserted first, or the lease ended between statements): look again
			}
			return last;
		});
	}

	/**
	 * Makes this waiter the next in line unless another live waiter is (see {@link LockRows#announceSuccessor}), for
	 * at least {@link #NEXT_IN_LINE_NANOS} and past its next attempt after {@code pauseNanos} (plus the initial
	 * back-off as a margin for waking up and reaching the server): the holder's release then hands the lease straight
	 * to it. Only a hint: a failure is logged and the wait goes on.
	 * @return whether this waiter is next in line
	 */
	private boolean announceSuccessor(LockRequest request, String owner, long pauseNanos, CallDeadline deadline) {
		try {
			return this.jdbc.execute("announce a waiter for lock '" + request.resource() + "'", deadline,
					(connection) -> this.rows.announceSuccessor(connection, request.resource(), owner,
							Math.max(NEXT_IN_LINE_NANOS, pauseNanos + 2 * this.waits.backoff().initial().toNanos()),
							this.jdbc.queryTimeoutSeconds(request.remainingNanos())));
		}
		catch (DataAccessException ex) {
			logger.debug("Could not announce a waiter for lock '" + request.resource() + "'", ex);
			return false;
		}
	}

	/**
	 * A waiter that was next in line gives up: a lease handed to it meanwhile is freed at once, instead of holding
	 * the lock up until it runs out. Runs on a background thread, so that the caller's wait time is not overrun by a
	 * clean-up (a slow pool or a silent connection); a failure is logged, and the lease or announcement then runs out
	 * on its own within about a second.
	 */
	@SuppressWarnings("NullAway") // a lambda returns null for ConnectionWork<T extends @Nullable Object>: see pom.xml
	private void withdraw(LockRequest request, String owner) {
		Runnable withdrawal = () -> {
			try {
				this.jdbc.execute("withdraw a waiter for lock '" + request.resource() + "'", (connection) -> {
					this.rows.withdraw(connection, request.resource(), owner, this.jdbc.statementTimeoutSeconds());
					return null;
				});
			}
			catch (DataAccessException ex) {
				logger.warn("Could not withdraw a waiter for lock '" + request.resource() + "'; a lease handed to it "
						+ "ends within about a second: " + ex.getMostSpecificCause());
			}
		};
		try {
			RenewableLease.BACKGROUND.execute(withdrawal);
		}
		catch (java.util.concurrent.RejectedExecutionException ex) {
			withdrawal.run();
		}
	}

	@Nullable
	private Long take(Connection connection, LockRequest request, String owner, long leaseMicros, int timeout)
			throws SQLException {
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.lease.leaseTake, timeout, true)) {
			ps.setString(1, owner);
			ps.setString(2, request.holder());
			ps.setLong(3, leaseMicros);
			ps.setString(4, owner);
			ps.setString(5, owner);
			ps.setBytes(6, LockRows.bytes(request.resource()));
			ps.setString(7, owner);
			int matched = ps.executeUpdate();
			JdbcLockSupport.commitIfNeeded(connection);
			return (matched == 1) ? this.rows.fencingToken(connection, ps, request.resource(), owner, timeout) : null;
		}
	}

	@Nullable
	private Long insert(Connection connection, LockRequest request, String owner, long leaseMicros, int timeout)
			throws SQLException {
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.lease.leaseInsert, timeout, true)) {
			ps.setBytes(1, LockRows.bytes(request.resource()));
			ps.setString(2, owner);
			ps.setString(3, request.holder());
			ps.setLong(4, leaseMicros);
			ps.executeUpdate();
			JdbcLockSupport.commitIfNeeded(connection);
			return this.rows.fencingToken(connection, ps, request.resource(), owner, timeout);
		}
		catch (SQLException ex) {
			if (JdbcLockSupport.lostInsertRace(connection, ex)) {
				return null;
			}
			throw ex;
		}
	}

	/** The result of one attempt: a lock, or what was learned about the holder. */
	record Attempt(@Nullable HeldLock lock, @Nullable String holderDescription, long leaseRemainingNanos,
			long heldForNanos, LockRows.@Nullable Peek peek) {

		static final Attempt NONE = new Attempt(null, null, 0, Long.MAX_VALUE, null);

		Attempt(@Nullable HeldLock lock, @Nullable String holderDescription, long leaseRemainingNanos) {
			this(lock, holderDescription, leaseRemainingNanos, Long.MAX_VALUE, null);
		}

		/** Whether the row, as read by this attempt, has the given owner next in line for at least {@code nanos}. */
		boolean nextInLine(String owner, long nanos) {
			return this.peek != null && this.peek.nextInLine(owner, nanos);
		}

	}

}
