package io.github.dblock.jdbc.pessimistic;

import io.github.dblock.jdbc.sql.InsertIds;
import io.github.dblock.jdbc.sql.JdbcLockSupport;
import io.github.dblock.jdbc.sql.LockRows;
import io.github.dblock.jdbc.sql.LockStatements;
import io.github.dblock.jdbc.sql.PessimisticStatements;
import io.github.dblock.jdbc.sql.SqlErrors;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import io.github.dblock.spi.LockRequest;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * The row lock of {@link PessimisticLockProvider} and its fencing token (see {@link PessimisticLockProvider.Fencing} for the guarantees): the
 * waiting locking read, then the token from a clock read after the grant, written ({@link PessimisticLockProvider.Fencing#DURABLE}) or only
 * read ({@link PessimisticLockProvider.Fencing#SERVER_CLOCK}), waiting holding the row while the stored token is ahead of the clock. Runs on a
 * connection inside its open transaction; statements in {@link LockStatements} ({@code pessimistic*}). Thread-safe.
 */
final class PessimisticFencing {

	/** The provider's logger: these messages are the provider's. */
	private static final Log logger = LogFactory.getLog(PessimisticFencing.class);

	private final JdbcLockSupport jdbc;

	private final LockStatements sql;

	private final LockRows rows;

	PessimisticFencing(JdbcLockSupport jdbc, LockStatements sql, LockRows rows) {
		this.jdbc = jdbc;
		this.sql = sql;
		this.rows = rows;
	}

	/** The caller's remaining wait in whole seconds, rounded up (the unit of {@code innodb_lock_wait_timeout}). */
	static int waitSeconds(LockRequest request) {
		return (int) Math.min(Integer.MAX_VALUE / 2,
				(request.remainingNanos() + TimeUnit.SECONDS.toNanos(1) - 1) / TimeUnit.SECONDS.toNanos(1));
	}

	/**
	 * Takes the row lock and hands out the fencing token, on the connection inside its open transaction. The row is
	 * taken by a locking read ({@link PessimisticStatements#pessimisticClockRead}) that waits in the row's lock queue, bounded by the caller's
	 * remaining wait time, and writes nothing. Every clock the token comes from is read by a later statement, so
	 * after the row was granted, hence after the previous holder (alive or dead) read its own: {@code UTC_TIMESTAMP(6)}
	 * is fixed when a statement starts, and the waiting statement may have started before the previous holder's.
	 * @return the token; {@link Locking#NOT_MATCHED} for a missing row (the transaction keeps a gap lock) or one
	 * held under a lease (it keeps the row lock) until the caller rolls it back; {@link Locking#ROW_LOCKED} when
	 * the wait ended
	 * @throws SQLException on any other failure
	 * @throws InterruptedException if interrupted while waiting or catching up with the clock
	 */
	Locking lockRow(Connection connection, LockRequest request, String owner, boolean serverClockFencing)
			throws SQLException, InterruptedException {
		int waitSeconds = waitSeconds(request);
		int timeout = waitSeconds + this.jdbc.statementTimeoutSeconds();
		boolean clock = serverClockFencing && request.minHoldMicros() == 0;
		@Nullable Read read;
		try {
			read = this.sql.runWithLockWait(connection, waitSeconds, this.sql.pessimistic.pessimisticClockRead, true, false,
					(ps) -> Optional.ofNullable(lockingRead(ps, request, timeout))).orElse(null);
		}
		catch (SQLException ex) {
			if (Thread.currentThread().isInterrupted()) {
				throw new InterruptedException("interrupted while waiting for the row lock of '" + request.resource() + "'");
			}
			if (SqlErrors.isLockUnavailable(ex)) {
				return Locking.ROW_LOCKED;
			}
			throw ex;
		}
		if (read == null) {
			return Locking.NOT_MATCHED;
		}
		if (!clock) {
			return writeToken(connection, request, owner, timeout, read.stored());
		}
		long afterGrant = read.clockAfterGrant();
		if (afterGrant < 0) {
			return clockToken(connection, request, owner, timeout); // the clock of a second read
		}
		if (read.expiresMicros() > afterGrant) {
			return Locking.NOT_MATCHED; // held under a lease, judged by a clock read after the grant
		}
		if (afterGrant > read.stored()) {
			return new Locking(afterGrant, false);
		}
		afterGrant = awaitClockPast(connection, request, timeout);
		return (afterGrant >= 0) ? new Locking(afterGrant, false)
				: writeTokenAfterAStepBack(connection, request, owner, timeout);
	}

	/** Runs the waiting locking read: what it read, or {@code null} for a missing row. */
	private static @Nullable Read lockingRead(PreparedStatement ps, LockRequest request, int timeout)
			throws SQLException {
		ps.setQueryTimeout(timeout);
		ps.setBytes(1, LockRows.bytes(request.resource()));
		long sent = System.nanoTime();
		try (java.sql.ResultSet rs = JdbcLockSupport.query(ps)) {
			long tookMicros = TimeUnit.NANOSECONDS.toMicros(System.nanoTime() - sent);
			return rs.next() ? new Read(rs.getLong(1), rs.getLong(3), rs.getLong(4), rs.getLong(5), tookMicros) : null;
		}
	}

	/**
	 * What the waiting locking read saw, all server figures in µs.
	 * @param stored the committed token (read under the granted row lock)
	 * @param startClock the server's UTC clock when the statement started, possibly before the previous holder read
	 * its own
	 * @param sinceStart {@code SYSDATE(6) - NOW(6)}: from the statement's start to the evaluation of the row, which
	 * happens after the row lock was granted; both in the session's time zone
	 * @param expiresMicros the row's {@code expires_at}
	 * @param clientMicros how long the statement took as seen by this client (send to reply)
	 */
	private record Read(long stored, long startClock, long sinceStart, long expiresMicros, long clientMicros) {

		/** Tolerance for the rates of the server's and the client's clocks when comparing the two durations. */
		private static final long RATE_TOLERANCE_MICROS = 1_000;

		/**
		 * The server's UTC clock when the row was evaluated, after the grant: {@code startClock + sinceStart}, or -1
		 * when that cannot be trusted and a second statement must read the clock. {@code SYSDATE(6)} is evaluated when
		 * called, but in the session's time zone, so a daylight-saving change between the statement's start and the
		 * evaluation shifts the difference by that change (at least 30 minutes; caught because the difference must lie
		 * between 1 µs and the time the client waited for the reply), and a server started with
		 * {@code --sysdate-is-now} makes it 0 (caught by the lower bound, at the cost of the second read).
		 */
		long clockAfterGrant() {
			if (this.sinceStart < 1 || this.sinceStart > this.clientMicros + RATE_TOLERANCE_MICROS) {
				return -1;
			}
			return this.startClock + this.sinceStart;
		}

	}

	/**
	 * The token of {@link PessimisticLockProvider.Fencing#DURABLE} (and of any acquisition with a minimum hold time), on a row this transaction
	 * holds: one {@code UPDATE} records the owner, checks the lease with a clock read after the grant and sets the
	 * token to that clock when it exceeds the stored token. If it does not (the stored token is ahead of the clock),
	 * the token is not taken from the counter, since a counter-derived token handed to a holder that dies before its
	 * {@code COMMIT} is rolled back and would be handed out again: the acquisition waits, holding the row, until the
	 * clock passes the stored token ({@link #awaitClockPast}) and sets the token to the clock then. Only when the
	 * clock is further behind than {@link #MAX_CLOCK_CATCH_UP_MICROS} (it stepped back) is the token the stored one +
	 * 1, as before.
	 * @param stored the token committed in the row, read by the locking read under the row lock
	 */
	private Locking writeToken(Connection connection, LockRequest request, String owner, int timeout, long stored)
			throws SQLException, InterruptedException {
		long token;
		try (PreparedStatement ps = this.sql.prepareInTransaction(connection, this.sql.pessimistic.pessimisticLock, timeout, true)) {
			if (!lock(ps, request, owner)) {
				return Locking.NOT_MATCHED; // held under a lease, judged by a clock read after the grant
			}
			token = this.rows.fencingToken(connection, ps, request.resource(), owner, timeout);
		}
		if (token > stored) {
			return new Locking(token, false);
		}
		boolean caughtUp = awaitClockPast(connection, request, timeout) >= 0;
		return new Locking(retoken(connection, request, timeout, caughtUp ? 0 : 1), false);
	}

	/**
	 * The token of {@link PessimisticLockProvider.Fencing#SERVER_CLOCK}, on a row this transaction holds: the locking read runs again (it does
	 * not wait: the row is ours) and its clock, read after the grant, is the token when it exceeds the stored token;
	 * nothing is written. A stored token ahead of the clock is waited out as in {@link #writeToken}; when the clock is
	 * further behind, the durable write runs and the token is the stored one + 1.
	 */
	private Locking clockToken(Connection connection, LockRequest request, String owner, int timeout)
			throws SQLException, InterruptedException {
		long stored;
		try (PreparedStatement ps = this.sql.prepareInTransaction(connection, this.sql.pessimistic.pessimisticClockRead, timeout,
				false)) {
			ps.setBytes(1, LockRows.bytes(request.resource()));
			try (java.sql.ResultSet granted = JdbcLockSupport.query(ps)) {
				if (!granted.next() || !granted.getBoolean(2)) {
					return Locking.NOT_MATCHED;
				}
				stored = granted.getLong(1);
				long clock = granted.getLong(3);
				if (clock > stored) {
					return new Locking(clock, false);
				}
			}
		}
		long clock = awaitClockPast(connection, request, timeout);
		if (clock >= 0) {
			return new Locking(clock, false);
		}
		return writeTokenAfterAStepBack(connection, request, owner, timeout);
	}

	/**
	 * Runs the durable write ({@link PessimisticStatements#pessimisticLock}) on the row this transaction holds.
	 * @return whether it matched (else the row is held under a lease, judged by a clock read after the grant)
	 */
	private static boolean lock(PreparedStatement ps, LockRequest request, String owner) throws SQLException {
		ps.setString(1, owner);
		ps.setString(2, request.holder());
		ps.setLong(3, request.minHoldMicros());
		ps.setBytes(4, LockRows.bytes(request.resource()));
		return ps.executeUpdate() == 1;
	}

	/** {@link PessimisticLockProvider.Fencing#SERVER_CLOCK} with the clock far behind the stored token: the durable write of stored + 1. */
	private Locking writeTokenAfterAStepBack(Connection connection, LockRequest request, String owner, int timeout)
			throws SQLException {
		try (PreparedStatement ps = this.sql.prepareInTransaction(connection, this.sql.pessimistic.pessimisticLock, timeout, false)) {
			if (!lock(ps, request, owner)) {
				return Locking.NOT_MATCHED;
			}
		}
		return new Locking(retoken(connection, request, timeout, 1), false);
	}

	/**
	 * Waits, holding the row, until the server clock exceeds the row's stored token, reading both with the locking
	 * read (which does not wait: the row is ours) and sleeping for the difference in between.
	 * @return the first clock read above the stored token (µs), or -1 if the token is more than
	 * {@link #MAX_CLOCK_CATCH_UP_MICROS} ahead of the clock (a step back: the caller writes the stored token + 1)
	 * @throws InterruptedException if interrupted while sleeping
	 */
	private long awaitClockPast(Connection connection, LockRequest request, int timeout)
			throws SQLException, InterruptedException {
		long deadline = System.nanoTime() + TimeUnit.MICROSECONDS.toNanos(MAX_CLOCK_CATCH_UP_MICROS);
		try (PreparedStatement ps = this.sql.prepareInTransaction(connection, this.sql.pessimistic.pessimisticClockRead, timeout,
				false)) {
			ps.setBytes(1, LockRows.bytes(request.resource()));
			while (true) {
				long stored;
				long clock;
				try (java.sql.ResultSet rs = JdbcLockSupport.query(ps)) {
					if (!rs.next()) {
						throw new SQLException("the lock row of '" + request.resource() + "' vanished while locked");
					}
					stored = rs.getLong(1);
					clock = rs.getLong(3);
				}
				if (clock > stored) {
					return clock;
				}
				long gapNanos = TimeUnit.MICROSECONDS.toNanos(stored - clock + 1);
				if (stored - clock >= MAX_CLOCK_CATCH_UP_MICROS || System.nanoTime() + gapNanos - deadline > 0) {
					logger.warn("The fencing token of lock '" + request.resource() + "' is " + (stored - clock)
							+ " µs ahead of the server clock (did the clock step back?); handing out the stored token + 1,"
							+ " which a holder that dies before its release can leave to be handed out again");
					return -1;
				}
				TimeUnit.NANOSECONDS.sleep(gapNanos);
			}
		}
	}

	/**
	 * Sets the held row's token to {@code GREATEST(fencing_token + increment, <server µs>)} and returns it.
	 * @param increment 0 once the clock has passed the stored token (the token is then the clock), 1 after a step back
	 */
	private long retoken(Connection connection, LockRequest request, int timeout, int increment) throws SQLException {
		try (PreparedStatement ps = this.sql.prepareInTransaction(connection, this.sql.pessimistic.pessimisticRetoken, timeout, true)) {
			ps.setInt(1, increment);
			ps.setBytes(2, LockRows.bytes(request.resource()));
			if (ps.executeUpdate() != 1) {
				throw new SQLException("the lock row of '" + request.resource() + "' vanished while locked");
			}
			long token = InsertIds.lastInsertId(ps);
			if (token <= 0) {
				throw new SQLException("the driver did not return the fencing token of '" + request.resource() + "'");
			}
			return token;
		}
	}

	/** The outcome of the locking statement. */
	record Locking(@Nullable Long token, boolean rowLocked) {

		static final Locking ROW_LOCKED = new Locking(null, true);

		static final Locking NOT_MATCHED = new Locking(null, false);

	}

	/**
	 * How far the stored token may be ahead of the server clock for an acquisition to wait, holding the row, until
	 * the clock passes it (see {@link #awaitClockPast}). A LEASE take leaves the token up to a block (1,024 µs) ahead
	 * of the clock while its lease runs, and its release writes back the last token it handed out, so that LEASE takes
	 * at any rate keep the counter within about a millisecond of the clock (one token per take or hand-off, the clock
	 * a microsecond per microsecond); more means that the server clock stepped back, and the acquisition then writes
	 * the stored token + 1.
	 */
	static final long MAX_CLOCK_CATCH_UP_MICROS = 100_000;

}
