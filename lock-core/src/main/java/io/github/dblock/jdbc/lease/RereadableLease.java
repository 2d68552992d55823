package io.github.dblock.jdbc.lease;

import io.github.dblock.jdbc.sql.CallDeadline;
import io.github.dblock.jdbc.sql.SqlErrors;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.dao.DataAccessException;

/**
 * An {@link OwnedLease} whose holder row can be read back after a failed release (a read/write lease, a semaphore
 * permit): the failure then tells apart a lease that is still ours (the database failure stands), one that ended
 * after the release began (counted as released) and one that ended before it ({@code LockLostException}, with the
 * failure as its cause). Thread-safe.
 */
abstract class RereadableLease extends OwnedLease {

	private static final Log logger = LogFactory.getLog(RereadableLease.class);

	RereadableLease(String resource, String ownerToken, long fencingToken, long leaseNanos, long validUntilNanos) {
		super(resource, ownerToken, fencingToken, leaseNanos, validUntilNanos);
	}

	/** When the first release statement was sent ({@link System#nanoTime()}); 0 before. */
	private volatile long releaseStartedNanos;

	/**
	 * One release statement ({@link #releaseStatement()}), with what a failure of it means: a connection failure while
	 * the lease is still valid is thrown for {@link #release()} to retry; otherwise the row is looked at again.
	 * @throws io.github.dblock.LockLostException if the statement failed and the lease is known to have ended before
	 * the release began
	 * @throws DataAccessException if it failed otherwise
	 */
	@Override
	final boolean releaseInDatabase(CallDeadline deadline) {
		long sentAt = System.nanoTime();
		if (this.releaseStartedNanos == 0) {
			this.releaseStartedNanos = sentAt;
		}
		try {
			return releaseStatement(deadline);
		}
		catch (DataAccessException ex) {
			if (SqlErrors.isConnectionFailure(ex) && System.nanoTime() - this.validUntilNanos < 0) {
				throw ex; // retried by release() while the lease is valid
			}
			return afterFailedRelease(ex, deadline);
		}
	}

	/**
	 * The owner-checked release statement.
	 * @param deadline the release's: the pool wait and the reply end by it
	 * @return whether the database showed this owner's lease still running (and now released)
	 */
	abstract boolean releaseStatement(CallDeadline deadline);

	/**
	 * The microseconds this owner's row still runs on the server's clock, 0 or less once it ended, {@code null} if the
	 * row is gone; a plain read, within the release's deadline.
	 */
	@Nullable
	abstract Long remainingMicrosInDatabase(CallDeadline deadline);

	/** What a holder that lost its lease may have let in, for the {@code LockLostException} message. */
	String lostConsequence() {
		return "another owner may have taken it";
	}

	/**
	 * After a failed release statement: still ours and running, the failure stands; over, and the release began in
	 * time, it counts as released (by the failed statement after all, or by the lease's end); over before the release
	 * began, the lease was lost.
	 */
	private boolean afterFailedRelease(DataAccessException failure, CallDeadline deadline) {
		if (deadline.passed()) {
			throw failure; // no time left to look: the failure stands, and the lease ends on its own
		}
		Long remainingMicros;
		try {
			remainingMicros = remainingMicrosInDatabase(deadline);
		}
		catch (RuntimeException checkFailed) {
			failure.addSuppressed(checkFailed);
			throw failure;
		}
		if (remainingMicros != null && remainingMicros > 0) {
			throw failure; // still ours and running: not released, ends with its lease
		}
		if (this.releaseStartedNanos - this.validUntilNanos < 0) {
			// let go in time: released by the failed statement after all, or ended with the lease since
			logger.warn("The release of " + describe() + " failed, but its lease is over: counted as released ("
					+ failure.getMostSpecificCause() + ")");
			return true;
		}
		String what = describe();
		throw new io.github.dblock.LockLostException(this.resource, this.fencingToken,
				Character.toUpperCase(what.charAt(0)) + what.substring(1) + " (fencing token " + this.fencingToken
						+ ") was no longer held at release: its lease had ended before it was released, and "
						+ lostConsequence() + " (the release statement failed: " + failure.getMostSpecificCause() + ")",
				failure);
	}

}
