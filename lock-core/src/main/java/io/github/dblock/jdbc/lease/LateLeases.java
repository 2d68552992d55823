package io.github.dblock.jdbc.lease;

import io.github.dblock.jdbc.sql.CallDeadline;
import io.github.dblock.jdbc.sql.JdbcLockSupport;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.dao.DataAccessException;

/**
 * Leases whose reply came too late to be handed out. A lease's validity in this JVM counts from the sending of the
 * statement that took it ({@link HeldLock#validUntilNanos()}, which errs early); when the reply arrives after that
 * (a slow network, or a partition that held the traffic and then passed it on) the lease may have ended on the
 * server and passed to another owner, so an acquisition gives it back and goes on waiting instead of handing out a
 * lease that is already over by its own clock. Used by the waits of {@code LeaseAcquisition}, {@code ReadWriteLeases}
 * and {@code JdbcSemaphoreProvider} (and {@code IdempotencyStore}, which drops a late claim without
 * {@link #giveBack}: a release would mark its key {@code FAILED}). Stateless; thread-safe.
 */
final class LateLeases {

	private static final Log logger = LogFactory.getLog(LateLeases.class);

	private LateLeases() {
	}

	/** Whether the lease is over by this JVM's clock (its reply came after its lease time had passed). */
	static boolean arrivedLate(HeldLock lock) {
		return System.nanoTime() - lock.validUntilNanos() >= 0;
	}

	/**
	 * The last look, when a wait's deadline has passed after an attempt whose outcome is unknown: one query on a fresh
	 * connection for this owner's live holder row, within what is left of the call's deadline. A lease found but over
	 * by this JVM's clock already is given back, not handed out.
	 * @param what what is looked for, for the log (for example {@code "a permit of semaphore 's'"})
	 * @param look the query for this owner's row; {@code null} when there is none
	 * @return the lease if the row is there and still runs, else {@code null} (also if the database cannot be asked:
	 * the row, if any, then ends with its lease, unrenewed)
	 */
	@SuppressWarnings("NullAway") // a lambda returns null for ConnectionWork<T extends @Nullable Object>: see pom.xml
	static <L extends HeldLock> @Nullable L lastLook(JdbcLockSupport jdbc, String what, LockRequest request,
			CallDeadline deadline, JdbcLockSupport.ConnectionWork<@Nullable L> look) {
		try {
			L found = jdbc.execute("look for " + what + ", whose take may have committed unacknowledged", deadline,
					(connection) -> {
						L own = look.run(connection);
						JdbcLockSupport.commitIfNeeded(connection);
						return own;
					});
			if (found != null && arrivedLate(found)) {
				giveBack(request, found);
				return null;
			}
			return found;
		}
		catch (RuntimeException ex) {
			logger.warn("Could not look for " + what + ", whose take may have committed unacknowledged; if it did, it "
					+ "ends with its lease (" + request.leaseTime().toMillis() + " ms), unrenewed: " + ex);
			return null;
		}
	}

	/**
	 * Gives a late lease back: an owner-checked release, which changes nothing once another owner has the row; a
	 * failure is logged and the lease then ends on its own.
	 * @return the description of the lock's holder for the caller's "not acquired" answer
	 */
	static String giveBack(LockRequest request, HeldLock lock) {
		try {
			lock.release();
		}
		catch (DataAccessException ex) {
			logger.debug("Could not give back the late lease of '" + request.resource() + "'", ex);
		}
		String description = "nobody known to this node (the reply to its take came after the lease time of "
				+ request.leaseTime().toMillis() + " ms had passed, a slow or held network, so the lease was given back)";
		logger.debug("'" + request.resource() + "': " + description);
		return description;
	}

}
