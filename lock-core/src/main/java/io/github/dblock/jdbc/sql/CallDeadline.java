package io.github.dblock.jdbc.sql;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;

/**
 * The one time bound of a lock call, fixed when the call starts: every wait for a pooled connection, every reply and
 * every retry inside the call ends by it. Made by {@link JdbcLockSupport}, one per call:
 * <ul>
 * <li>an acquisition ({@link JdbcLockSupport#acquisitionDeadline}): the caller's deadline (the call's start plus its
 * wait time) plus the statement timeout plus {@link JdbcLockSupport#NETWORK_MARGIN_MILLIS};</li>
 * <li>a release or a renewal ({@link JdbcLockSupport#callDeadline}): its start plus the statement timeout plus the
 * margin.</li>
 * </ul>
 * Inside it, the wait for a pooled connection ends a margin before the deadline, or halfway to it when little is left
 * ({@link #connectionWaitNanos}), so that a connection that comes late still leaves its statements time to answer; each statement's reply is awaited for at most
 * the statement timeout plus the margin, and never past the deadline ({@link #boundReads}); a locking statement that
 * waits in the server's lock queue for the caller's remaining wait time is awaited until the deadline
 * ({@link #boundLockWaitReads}). Immutable and thread-safe; relies on the driver's
 * {@link Connection#setNetworkTimeout} (Connector/J sets a socket option, no round trip).
 * <p>
 * Internal machinery of the JDBC engine, public only so that the other {@code io.github.dblock.jdbc} packages
 * can use it: not API, may change in any release.
 */
public final class CallDeadline {

	/** The least network timeout a statement is given, however little time is left: 100 ms. */
	static final int MIN_REPLY_MILLIS = 100;

	/**
	 * The end of an acquisition's deadline kept for a last look for a grant whose reply was lost (read/write locks,
	 * semaphores): 1 s. Their attempts end by {@link #lessLastLook()}.
	 */
	static final long LAST_LOOK_NANOS = TimeUnit.SECONDS.toNanos(1);

	/** Runs the driver's network timeout change on the calling thread (Connector/J only sets a socket option). */
	private static final Executor DIRECT = Runnable::run;

	private final long atNanos;

	private final long statementReplyNanos;

	/**
	 * @param atNanos the {@link System#nanoTime()} by which the call ends
	 * @param statementReplyNanos how long one statement's reply is awaited at most: the statement timeout plus the
	 * margin
	 */
	public CallDeadline(long atNanos, long statementReplyNanos) {
		this.atNanos = atNanos;
		this.statementReplyNanos = statementReplyNanos;
	}

	/** The {@link System#nanoTime()} by which the call ends. */
	long atNanos() {
		return this.atNanos;
	}

	/**
	 * The same deadline, {@link #LAST_LOOK_NANOS} earlier: for the attempts of an acquisition that, when the wait ends
	 * after an attempt whose outcome is unknown, looks once more for its own grant within this deadline.
	 */
	public CallDeadline lessLastLook() {
		return new CallDeadline(this.atNanos - LAST_LOOK_NANOS, this.statementReplyNanos);
	}

	/** This deadline, or {@code nanos} from now if that is earlier: for a best-effort step inside the call. */
	public CallDeadline within(long nanos) {
		return new CallDeadline(Math.min(this.atNanos, System.nanoTime() + nanos), this.statementReplyNanos);
	}

	/** The time left, in nanoseconds; 0 or less once it passed. */
	public long remainingNanos() {
		return this.atNanos - System.nanoTime();
	}

	/** Whether the deadline has passed. */
	public boolean passed() {
		return remainingNanos() <= 0;
	}

	/**
	 * How long the call may wait for a pooled connection now: until a reply margin before the deadline, or halfway to
	 * the deadline when less than two margins are left (a last look, a retry), at least 1 ms (a free connection is
	 * then still taken at once).
	 */
	public long connectionWaitNanos() {
		long remaining = remainingNanos();
		long wait = Math.max(remaining - TimeUnit.MILLISECONDS.toNanos(JdbcLockSupport.NETWORK_MARGIN_MILLIS),
				remaining / 2);
		return Math.max(TimeUnit.MILLISECONDS.toNanos(1), wait);
	}

	/**
	 * Bounds the reads of the next statements on the connection to one statement timeout plus the margin each, and
	 * to the deadline (at least {@value #MIN_REPLY_MILLIS} ms).
	 */
	public void boundReads(Connection connection) throws SQLException {
		setNetworkTimeout(connection, Math.min(remainingNanos(), this.statementReplyNanos));
	}

	/**
	 * Bounds the reads of the next statements on the connection to the deadline only (at least
	 * {@value #MIN_REPLY_MILLIS} ms): for statements that wait in the server's lock queue for the caller's remaining
	 * wait time (PESSIMISTIC).
	 */
	public void boundLockWaitReads(Connection connection) throws SQLException {
		setNetworkTimeout(connection, remainingNanos());
	}

	private static void setNetworkTimeout(Connection connection, long nanos) throws SQLException {
		long millis = Math.max(MIN_REPLY_MILLIS, TimeUnit.NANOSECONDS.toMillis(nanos));
		connection.setNetworkTimeout(DIRECT, (int) Math.min(millis, Integer.MAX_VALUE));
	}

	@Override
	public String toString() {
		return "CallDeadline[in " + TimeUnit.NANOSECONDS.toMillis(remainingNanos()) + " ms]";
	}

}
