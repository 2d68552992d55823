package io.github.dblock.jdbc;

import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.dao.DataAccessException;

/**
 * A lease held in the database by one owner token (a LEASE lock's row, a semaphore permit's row), as this JVM sees
 * it: renewal on a shared scheduler, the local validity, the lost state, and a release that is retried after a broken
 * connection. Subclasses run the owner-checked statements and tell listeners of a loss.
 * <p>
 * Local validity ({@link #validUntilNanos}) starts as "send time of the acquiring statement + lease" and moves to
 * "send time of the last successful renewal + lease": it errs early, never late, against the server's expiry. A
 * renewal matching no row, or the local validity running out while the database cannot be reached, marks the lease
 * lost. A release racing a renewal is safe: the release sets {@code released} first, and a renewal that then finds
 * the row gone ignores the result. Thread-safe.
 */
abstract class RenewedLease {

	private static final Log logger = LogFactory.getLog(RenewedLease.class);

	/** Re-attempts of a release whose connection broke, while the lease is still valid. */
	private static final int MAX_RELEASE_RETRIES = 5;

	final String resource;

	final String ownerToken;

	final long leaseNanos;

	/** Until when this JVM may consider the lease valid; moved forward by each successful renewal. */
	volatile long validUntilNanos;

	volatile boolean lost;

	volatile boolean released;

	@Nullable
	volatile ScheduledFuture<?> renewal;

	RenewedLease(String resource, String ownerToken, long leaseNanos, long validUntilNanos) {
		this.resource = resource;
		this.ownerToken = ownerToken;
		this.leaseNanos = leaseNanos;
		this.validUntilNanos = validUntilNanos;
	}

	/** What is leased, for log messages: {@code lock 'x'}, {@code a permit of semaphore 'x'}. */
	abstract String describe();

	/**
	 * The renewal statement: {@code expires_at = now + lease} where the row is this owner's and still live.
	 * @return whether it matched that row
	 */
	abstract boolean renewInDatabase();

	/**
	 * The release statement, owner-checked and only on a live lease.
	 * @return whether it matched that row
	 */
	abstract boolean releaseInDatabase();

	/** Logs the loss and runs the lost-callbacks; called once, after {@link #lost} is set and renewal cancelled. */
	abstract void onLost(String reason);

	/** One renewal, on the scheduler's thread. */
	final void renew() {
		if (this.released || this.lost) {
			return;
		}
		long sentAt = System.nanoTime();
		if (sentAt - this.validUntilNanos >= 0) {
			markLost("its lease ran out before it could be renewed");
			return;
		}
		try {
			boolean renewed = renewInDatabase();
			if (this.released) {
				return;
			}
			if (renewed) {
				this.validUntilNanos = sentAt + this.leaseNanos;
			}
			else {
				markLost("the database shows its lease expired or taken over");
			}
		}
		catch (RuntimeException ex) {
			logger.warn("Could not renew " + describe() + "; retrying until its lease must be presumed expired", ex);
			if (System.nanoTime() - this.validUntilNanos >= 0) {
				markLost("the database was unreachable until its lease ran out");
			}
		}
	}

	private void markLost(String reason) {
		this.lost = true;
		cancelRenewal();
		onLost(reason);
	}

	private void cancelRenewal() {
		ScheduledFuture<?> future = this.renewal;
		if (future != null) {
			future.cancel(false);
		}
	}

	/**
	 * Gives the lease back. A release whose connection broke is retried while the lease is still valid by this JVM's
	 * clock; finding the row no longer ours then means the first release committed unheard.
	 * @return {@code false} if the lease was known lost or the database shows it was no longer this owner's
	 * @throws DataAccessException if the database could not be reached in time
	 */
	final boolean releaseLease() {
		this.released = true;
		cancelRenewal();
		if (this.lost) {
			return false; // known lost: another owner may hold it now, so change nothing
		}
		boolean retried = false;
		for (int failures = 0;; failures++) {
			long sentAt = System.nanoTime();
			try {
				boolean released = releaseInDatabase();
				// After a broken connection the first release may have committed without our hearing of it: then
				// the row no longer names us. While the lease is still valid by this JVM's clock nobody else can
				// have taken it, so that means released, not lost.
				return released || (retried && sentAt - this.validUntilNanos < 0);
			}
			catch (DataAccessException ex) {
				if (!JdbcLockSupport.isConnectionFailure(ex) || System.nanoTime() - this.validUntilNanos >= 0
						|| failures >= MAX_RELEASE_RETRIES) {
					throw ex;
				}
				retried = true;
				try {
					TimeUnit.MILLISECONDS.sleep(Math.min(1_000, 50L << failures));
				}
				catch (InterruptedException interrupted) {
					Thread.currentThread().interrupt();
					throw ex;
				}
			}
		}
	}

}
