package io.github.dblock.jdbc.lease;

import io.github.dblock.jdbc.sql.CallDeadline;
import io.github.dblock.jdbc.sql.JdbcLockSupport;
import io.github.dblock.jdbc.sql.JdbcWait;
import io.github.dblock.jdbc.sql.LockRows;
import io.github.dblock.jdbc.sql.LockStatements;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import io.github.dblock.LockLostException;
import io.github.dblock.jdbc.lease.ReadWriteAttempts.Attempt;
import io.github.dblock.LockType;
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
 * Read/write leases for {@link io.github.dblock.LockMode#LEASE}: {@link LockType#READ} and {@link LockType#WRITE}
 * locks in {@code <table>_rw} (one row per resource: fencing token counter and writer intent, never deleted) and
 * {@code <table>_rw_hold} (one row per holder: owner token, kind, lease on the server's clock).
 * <p>
 * An acquisition attempt is one short transaction that locks the resource's {@code _rw} row first ({@code FOR
 * UPDATE} by primary key), so every decision about a resource is serialized; a waiting writer keeps readers out with
 * an intent lease (writer preference). Renewal, release, unknown outcomes and failed releases follow
 * docs/DESIGN.md, "Read/write locks" and "Unknown outcomes and failed releases of read/write leases and permits".
 * <p>
 * Relies on InnoDB row locks and locking reads ({@code FOR UPDATE}, {@code LOCK IN SHARE MODE}). Deadlocks and lock
 * wait timeouts are retried; a release whose lease was over before it began throws {@link LockLostException}; other
 * failures surface as {@link DataAccessException}. Thread-safe.
 */
final class ReadWriteLeases {

	private static final Log logger = LogFactory.getLog(ReadWriteLeases.class);

	static final String READ = "R";

	static final String WRITE = "W";

	private final JdbcLockSupport jdbc;

	/** The waits, with the lease provider's back-off. */
	private final WaitLoop waits;

	private final Supplier<ScheduledExecutorService> renewals;

	/** How long a waiting writer's intent holds without refresh, in microseconds. */
	private final long intentMicros;

	/** Every statement, in the lease provider's dialect. */
	private final LockStatements sql;

	/** The leases once held: renewal, release, commit checks. */
	private final HeldReadWriteLeases holds;

	/** The attempts of the waits: one short transaction each. */
	private final ReadWriteAttempts attempts;

	/**
	 * @param jdbc the lock data source's statement support
	 * @param sql the lease provider's statements (the read/write tables are named after the lock table)
	 * @param backoff pauses between attempts
	 * @param renewals the lease provider's shared renewal scheduler
	 * @param transactions the application's transactions, in which commit checks run
	 */
	ReadWriteLeases(JdbcLockSupport jdbc, LockStatements sql, Backoff backoff,
			Supplier<ScheduledExecutorService> renewals, ApplicationTransactions transactions) {
		this.jdbc = jdbc;
		this.waits = new WaitLoop(backoff, logger);
		this.renewals = renewals;
		// at least 5 of the longest pauses between a waiting writer's attempts, and at least 2 s
		this.intentMicros = Math.max(TimeUnit.SECONDS.toMicros(2), 5 * backoff.max().toNanos() / 1000);
		this.sql = sql;
		this.holds = new HeldReadWriteLeases(jdbc, sql, transactions);
		this.attempts = new ReadWriteAttempts(jdbc, sql, this.holds, this.intentMicros);
	}

	/** The statements of a write lease's commit check, in order (tests). */
	java.util.List<String> commitCheckSql() {
		return this.holds.commitCheckSql();
	}

	/** How long a waiting writer's intent keeps new readers out without being refreshed. */
	Duration intentTime() {
		return Duration.ofNanos(TimeUnit.MICROSECONDS.toNanos(this.intentMicros));
	}

	/**
	 * Takes a read or write lock for a new owner, waiting until the request's deadline (see the class comment).
	 * @throws IllegalArgumentException for {@link LockType#EXCLUSIVE}
	 */
	AcquireResult acquire(LockRequest request, LockType type) throws InterruptedException {
		if (type != LockType.READ && type != LockType.WRITE) {
			throw new IllegalArgumentException("Read/write leases are READ or WRITE, not " + type);
		}
		return this.waits.run(request::remainingNanos, new Wait(request, type, this.jdbc.acquisitionDeadline(request)));
	}

	/** One wait for a read or write lease: its owner token, its writer intent, whether an outcome is unknown. */
	private final class Wait implements JdbcWait<Attempt, AcquireResult> {

		private final LockRequest request;

		private final LockType type;

		private final String kind;

		private final String owner = UUID.randomUUID().toString();

		/** The call's: bounds every pool wait and reply of the attempts, the last look and the intent's clearing. */
		private final CallDeadline deadline;

		/** Whether this owner's writer intent may be set (and is to be cleared if the wait gives up). */
		private boolean intentSet;

		/** Whether an earlier attempt may have committed a grant without our hearing of it. */
		private boolean recovering;

		Wait(LockRequest request, LockType type, CallDeadline deadline) {
			this.request = request;
			this.deadline = deadline;
			this.type = type;
			this.kind = (type == LockType.READ) ? READ : WRITE;
		}

		@Override
		public Attempt attempt(int attempt) {
			boolean mayWait = this.kind.equals(WRITE) && this.request.remainingNanos() > 0;
			// set before the attempt: an intent whose commit reply is lost must still be cleared (clearing one
			// that was never set matches nothing)
			this.intentSet |= mayWait;
			// the attempts leave the end of the deadline to the last look for a grant whose reply was lost
			Attempt result = ReadWriteLeases.this.attempts.attempt(this.request, this.kind, this.owner, this.recovering, mayWait,
					this.deadline.lessLastLook());
			this.recovering = result.outcomeUnknown();
			this.intentSet |= result.intentSet();
			if (result.lock() != null && LateLeases.arrivedLate(result.lock())) {
				// the next attempt looks for this owner's row first: the give-back deletes it only while it runs on the
				// server, and an expired one left behind would collide with the next grant's insert
				this.recovering = true;
				return new Attempt(null, LateLeases.giveBack(this.request, result.lock()), 0, result.intentSet());
			}
			return result;
		}

		/**
		 * Deadlocks (gap locks of a neighbouring resource's acquisition) that outlasted the retries, or a lock wait
		 * timeout: the lock is contended, not broken; try again until the wait time ends.
		 */
		@Override
		public @Nullable Attempt contended(DataAccessException ex) {
			return (ex instanceof org.springframework.dao.PessimisticLockingFailureException) ? Attempt.NONE : null;
		}

		@Override
		public Attempt afterOutage(DataAccessException ex) {
			this.recovering = true;
			return Attempt.NONE;
		}

		@Override
		public AcquireResult outageAtDeadline(DataAccessException ex) {
			// an attempt that got no connection sent nothing: no grant of ours to look for
			HeldLock own = (ex instanceof org.springframework.jdbc.CannotGetJdbcConnectionException) ? null
					: lastLookForOwnHold(this.request, this.kind, this.owner, this.deadline);
			if (own != null) {
				return acquired(this.request, own); // any intent of ours is cleared at the end (a no-op if granted)
			}
			// reached, but no answer in time: not acquired, with the cause (as for exclusive leases)
			return JdbcWait.timedOutUnlessUnreachable(ex);
		}

		@Override
		public @Nullable AcquireResult result(Attempt outcome) {
			if (outcome.lock() == null) {
				return null;
			}
			this.intentSet = false; // the grant cleared it
			return acquired(this.request, outcome.lock());
		}

		@Override
		public AcquireResult atDeadline(Attempt outcome) {
			HeldLock own = this.recovering ? lastLookForOwnHold(this.request, this.kind, this.owner, this.deadline) : null;
			if (own != null) {
				return acquired(this.request, own); // any intent of ours is cleared at the end (a no-op if granted)
			}
			return AcquireResult.busy(outcome.holderDescription());
		}

		@Override
		public String waitingFor() {
			return "acquiring the " + this.type + " lock '" + this.request.resource() + "'";
		}

		/** Never longer than a fifth of the intent time, so that a waiting writer's intent never lapses. */
		@Override
		public long pauseNanos(Attempt outcome, int attempt, long remaining, Backoff backoff) {
			return Math.min(backoff.pauseNanos(attempt, outcome.leaseRemainingNanos(), remaining),
					TimeUnit.MICROSECONDS.toNanos(ReadWriteLeases.this.intentMicros) / 5);
		}

		@Override
		public void ended(@Nullable AcquireResult answer) {
			if (this.intentSet) {
				// at once, so that readers are not held back by a writer that gave up: within the call's deadline, or on a
				// background thread once it has passed
				clearIntentQuietly(this.request.resource(), this.owner, this.deadline);
			}
		}

	}

	/**
	 * Clears a writer's intent: within the call's deadline on the caller's thread, or on a background thread with a
	 * deadline of its own once the call's has passed. Quiet: a failure is logged, and the intent then runs out.
	 */
	private void clearIntentQuietly(String resource, String owner, CallDeadline deadline) {
		if (!deadline.passed()) {
			clearIntentNow(resource, owner, deadline);
			return;
		}
		try {
			RenewableLease.BACKGROUND.execute(() -> clearIntentNow(resource, owner, this.jdbc.callDeadline()));
		}
		catch (java.util.concurrent.RejectedExecutionException ex) {
			clearIntentNow(resource, owner, this.jdbc.callDeadline());
		}
	}

	@SuppressWarnings("NullAway") // a lambda returns null for ConnectionWork<T extends @Nullable Object>: see pom.xml
	private void clearIntentNow(String resource, String owner, CallDeadline deadline) {
		try {
			this.jdbc.execute("clear the writer intent of '" + resource + "'", deadline, (connection) -> {
				try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.readWrite.rwClearIntent, this.jdbc.statementTimeoutSeconds(), false)) {
					ps.setBytes(1, LockRows.bytes(resource));
					ps.setString(2, owner);
					ps.executeUpdate();
					JdbcLockSupport.commitIfNeeded(connection);
					return null;
				}
			});
		}
		catch (RuntimeException ex) {
			logger.warn("Could not clear the intent of a writer that gave up waiting for '" + resource + "'; new readers "
					+ "wait until it ends (" + intentTime().toMillis() + " ms)", ex);
		}
	}

	/** {@link LateLeases#lastLook} for this owner's holder row of the resource. */
	@SuppressWarnings("NullAway") // a lambda returns null for ConnectionWork<T extends @Nullable Object>: see pom.xml
	private @Nullable HeldLock lastLookForOwnHold(LockRequest request, String kind, String owner,
			CallDeadline deadline) {
		return LateLeases.lastLook(this.jdbc, "the " + (kind.equals(READ) ? "read" : "write") + " lock '"
				+ request.resource() + "'", request, deadline, (connection) -> {
					Attempt own = this.attempts.ownHold(connection, request, LockRows.bytes(request.resource()), owner, kind,
							this.jdbc.queryTimeoutSeconds(0), System.nanoTime());
					return (own != null) ? own.lock() : null;
				});
	}

	/** A grant known to be committed: starts its renewal if the request asks for it. */
	private AcquireResult acquired(LockRequest request, HeldLock lock) {
		if (request.renew()) {
			((HeldReadWriteLeases.Lease) lock).startRenewal(this.renewals.get());
		}
		return AcquireResult.acquired(lock);
	}
}
