package io.github.dblock.jdbc;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.dao.DataAccessException;

/**
 * The JVM side of one owner's lease in a lock table, shared by the exclusive and the read/write leases: renewal on a
 * shared scheduler every third of the lease, loss detection, and a release that is retried after a broken
 * connection.
 * <ul>
 * <li>A renewal whose statement matches nothing (the lease expired, or another owner took it), or that cannot reach
 * the database before this JVM must presume the lease over ({@link #validUntilNanos}, measured from before the
 * statement was sent, so it errs early), marks the lease lost: renewal stops and {@link #onLost(String)} is told
 * once.</li>
 * <li>Release stops renewal; a lost lease changes nothing in the database. A release whose connection broke is
 * retried while the lease is still valid; finding the row no longer ours then means the first release did
 * commit.</li>
 * </ul>
 * Thread-safe: renewal runs on the scheduler's threads, release on the owner's.
 */
abstract class RenewableLease {

	private static final Log logger = LogFactory.getLog(RenewableLease.class);

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
	private volatile ScheduledFuture<?> renewal;

	/** Held while a renewal or release statement runs, so that the two never race. */
	private final Object statements = new Object();

	RenewableLease(String resource, String ownerToken, long leaseNanos, long validUntilNanos) {
		this.resource = resource;
		this.ownerToken = ownerToken;
		this.leaseNanos = leaseNanos;
		this.validUntilNanos = validUntilNanos;
	}

	/**
	 * One renewal statement, extending the lease by {@link #leaseNanos} on the server's clock if this owner still
	 * holds it.
	 * @return whether the database showed this owner's lease still running (and now extended)
	 */
	abstract boolean renewInDatabase();

	/**
	 * One release statement, owner-checked.
	 * @return whether the database showed this owner's lease still running (and now released)
	 */
	abstract boolean releaseInDatabase();

	/** Told once, on the scheduler's thread, when the lease is found lost; renewal has stopped. */
	abstract void onLost(String reason);

	/** Renews every third of the lease on the given scheduler until released or lost. */
	final void startRenewal(ScheduledExecutorService scheduler) {
		long period = Math.max(1, this.leaseNanos / 3);
		this.renewal = scheduler.scheduleWithFixedDelay(this::renew, period, period, TimeUnit.NANOSECONDS);
	}

	/** What is leased, for log messages: {@code lock 'x'}, {@code a permit of semaphore 'x'}. */
	String describe() {
		return "lock '" + this.resource + "'";
	}

	/**
	 * One renewal, on the scheduler's thread. It runs under the lease's statement lock, so that a release (or
	 * {@link #finish()}) waits for a renewal in flight instead of racing it: a renewal landing after a release that
	 * keeps the row for a minimum hold would otherwise extend the released lease by a whole lease time.
	 */
	final void renew() {
		String lostReason = null;
		synchronized (this.statements) {
			if (this.released || this.lost) {
				return;
			}
			long sentAt = System.nanoTime();
			if (sentAt - this.validUntilNanos >= 0) {
				lostReason = "its lease ran out before it could be renewed";
			}
			else {
				try {
					boolean renewed = renewInDatabase();
					if (this.released) {
						return;
					}
					if (renewed) {
						this.validUntilNanos = sentAt + this.leaseNanos;
					}
					else {
						lostReason = "the database shows its lease expired or taken over";
					}
				}
				catch (RuntimeException ex) {
					if (this.released) {
						return;
					}
					logger.warn("Could not renew " + describe() + "; retrying until its lease must be presumed expired",
							ex);
					if (System.nanoTime() - this.validUntilNanos >= 0) {
						lostReason = "the database was unreachable until its lease ran out";
					}
				}
			}
			if (lostReason == null) {
				return;
			}
			this.lost = true;
		}
		// outside the statement lock: listeners are the application's code
		stopRenewal();
		onLost(lostReason);
	}

	private void stopRenewal() {
		ScheduledFuture<?> future = this.renewal;
		if (future != null) {
			future.cancel(false);
		}
	}

	/**
	 * Stops renewal without a release statement, for an owner that ends its lease with a statement of its own (an
	 * idempotency claim recording its outcome). A renewal racing this call ignores its result.
	 */
	final void finish() {
		this.released = true;
		stopRenewal();
		synchronized (this.statements) {
			// waits for a renewal in flight, which then ignores its result
		}
	}

	/**
	 * Gives the lease back. Must be called at most once.
	 * @return {@code true} if released; {@code false} if it was no longer this owner's (lost or expired)
	 * @throws DataAccessException if the database stayed unreachable (the lease then ends on its own)
	 */
	public final boolean release() {
		this.released = true;
		stopRenewal();
		synchronized (this.statements) {
			return releaseAfterRenewals();
		}
	}

	private boolean releaseAfterRenewals() {
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

	/**
	 * The listeners of one hold, run once when its lease is found lost: a listener registered after the loss runs at
	 * once. Thread-safe.
	 */
	static final class LostCallbacks {

		private final List<Runnable> callbacks = new CopyOnWriteArrayList<>();

		/** Registers a callback; runs it at once if {@code alreadyLost}. */
		void add(Runnable callback, boolean alreadyLost) {
			this.callbacks.add(callback);
			if (alreadyLost && this.callbacks.remove(callback)) {
				callback.run();
			}
		}

		/** Runs and forgets every callback registered so far; a failing one is logged. */
		void runAll(String resource) {
			for (Runnable callback : this.callbacks) {
				if (this.callbacks.remove(callback)) {
					try {
						callback.run();
					}
					catch (RuntimeException ex) {
						logger.error("A lost-lock callback for '" + resource + "' failed", ex);
					}
				}
			}
		}

		/** Forgets every callback (the hold passed its lease on). */
		void clear() {
			this.callbacks.clear();
		}

	}

}
