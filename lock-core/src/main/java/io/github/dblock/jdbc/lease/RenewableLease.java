package io.github.dblock.jdbc.lease;

import io.github.dblock.jdbc.sql.CallDeadline;
import io.github.dblock.jdbc.sql.JdbcLockSupport;
import io.github.dblock.jdbc.sql.SqlErrors;
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
 * The JVM side of one owner's lease in a lock table, shared by the exclusive and the read/write leases, the semaphore
 * permits and the idempotency claims: renewal every third of the lease, loss detection, and a release that is retried
 * after a broken connection.
 * <ul>
 * <li>Renewal and the loss check count from the lease's own end by this JVM's clock ({@link #validUntilNanos}), not
 * from the grant: a hold granted with little of its lease left (a take that waited behind another session's row lock,
 * a late reply, a hold found again by reading its row) is renewed at once, and if that renewal is not confirmed the
 * loss is declared when the lease ends, before the server can give the lock to another owner.</li>
 * <li>The scheduler's threads never wait for the database: each renewal runs on a background thread
 * ({@link #BACKGROUND}), at most one per lease at a time, so a renewal stuck on a silent connection delays neither
 * another lease's renewal nor this lease's release.</li>
 * <li>The loss is driven by time, not by a renewal call returning: once {@link #validUntilNanos} (measured from before
 * the last confirmed renewal's statement was sent, so it errs early) passes without a newer confirmed renewal, the
 * lease is marked lost and {@link #onLost(String)} is told once, at that moment (within the scheduler's delay), even
 * while a renewal is still waiting for its reply. A renewal whose statement matches nothing (the lease expired, or
 * another owner took it) marks it lost at once. A lost lease stays lost: a renewal confirmed after the loss was
 * declared does not revive it (the row then simply runs out).</li>
 * <li>Release stops renewal without waiting for a renewal in flight; a lost lease changes nothing in the database. A
 * renewal that still lands after the release was sent, and that finds the lease ours again (a release that keeps the
 * row and its owner for a minimum hold, {@link #releaseKeepsOwner()}), is followed by the release once more, so it
 * cannot extend a released lease. A release
 * whose connection broke is retried while the lease is still valid and the release's deadline has not passed; finding
 * the row no longer ours then means the first release did commit.</li>
 * </ul>
 * Each renewal and each release has one {@link CallDeadline}, made by {@link #callDeadline()} when it starts (the
 * statement timeout plus the margin): its pool waits, replies and retries all end by it, whatever the network does.
 * <p>
 * Thread-safe: renewal runs on the scheduler's and the background threads, release on the owner's.
 */
abstract class RenewableLease {

	private static final Log logger = LogFactory.getLog(RenewableLease.class);

	/** Re-attempts of a release whose connection broke, while the lease is still valid. */
	private static final int MAX_RELEASE_RETRIES = 5;

	/**
	 * Runs the renewal statements (and other clean-up that no caller waits for): daemon threads, created as needed and
	 * ended after a minute idle. Each task is bounded by the network timeout, so the threads in use are bounded by the
	 * renewals and clean-ups in flight.
	 */
	static final java.util.concurrent.ExecutorService BACKGROUND = newBackground();

	final String resource;

	final String ownerToken;

	final long leaseNanos;

	/** Until when this JVM may consider the lease valid; moved forward by each confirmed renewal. */
	volatile long validUntilNanos;

	volatile boolean lost;

	volatile boolean released;

	/** Set by {@link #release()} (not by {@link #finish()}): a renewal landing later releases again. */
	private volatile boolean releaseSent;

	/** Whether a renewal statement is waiting for its reply. */
	private final java.util.concurrent.atomic.AtomicBoolean renewing = new java.util.concurrent.atomic.AtomicBoolean();

	@Nullable
	private volatile ScheduledFuture<?> renewal;

	@Nullable
	private volatile ScheduledExecutorService scheduler;

	RenewableLease(String resource, String ownerToken, long leaseNanos, long validUntilNanos) {
		this.resource = resource;
		this.ownerToken = ownerToken;
		this.leaseNanos = leaseNanos;
		this.validUntilNanos = validUntilNanos;
	}

	private static java.util.concurrent.ExecutorService newBackground() {
		java.util.concurrent.atomic.AtomicInteger count = new java.util.concurrent.atomic.AtomicInteger();
		java.util.concurrent.ThreadPoolExecutor executor = new java.util.concurrent.ThreadPoolExecutor(0,
				Integer.MAX_VALUE, 60, TimeUnit.SECONDS, new java.util.concurrent.SynchronousQueue<>(), (task) -> {
					Thread thread = new Thread(task, "distributed-lock-background-" + count.incrementAndGet());
					thread.setDaemon(true);
					return thread;
				});
		return executor;
	}

	/**
	 * One renewal statement, extending the lease by {@link #leaseNanos} on the server's clock if this owner still
	 * holds it.
	 * @param deadline the renewal's: its pool wait and reply end by it
	 * @return whether the database showed this owner's lease still running (and now extended)
	 */
	abstract boolean renewInDatabase(CallDeadline deadline);

	/**
	 * One release statement, owner-checked.
	 * @param deadline the release's (shared by its retries): every pool wait and reply ends by it
	 * @return whether the database showed this owner's lease still running (and now released)
	 */
	abstract boolean releaseInDatabase(CallDeadline deadline);

	/**
	 * A new deadline for one renewal or release starting now: the provider's statement timeout plus
	 * {@link JdbcLockSupport#NETWORK_MARGIN_MILLIS} ({@link JdbcLockSupport#callDeadline()}).
	 */
	abstract CallDeadline callDeadline();

	/** Told once, on a scheduler or background thread, when the lease is found lost; renewal has stopped. */
	abstract void onLost(String reason);

	/**
	 * Whether {@link #releaseInDatabase()} leaves the row with this owner (a release that keeps the lease for a
	 * minimum hold time), so that a renewal landing after it could extend it; then such a renewal is followed by the
	 * release once more. {@code false} by default: a release that clears the owner or deletes the row cannot be
	 * undone by a renewal, which is owner-checked.
	 */
	boolean releaseKeepsOwner() {
		return false;
	}

	/**
	 * Renews on the given scheduler until released or lost, every third of the lease, the first time when two thirds of
	 * the lease are left by {@link #validUntilNanos}: a third of the lease after the take was sent for a hold granted
	 * at once, at once for one granted with less left (a take that waited behind another session's row lock, a late
	 * reply, a hold found again by reading its row). Counting from the grant instead would let the first renewal come
	 * after such a hold's lease had ended.
	 */
	final void startRenewal(ScheduledExecutorService scheduler) {
		long period = renewalPeriodNanos();
		this.scheduler = scheduler;
		this.renewal = scheduler.scheduleWithFixedDelay(this::renew, firstRenewalDelayNanos(System.nanoTime()), period,
				TimeUnit.NANOSECONDS);
	}

	/** The time between renewals: a third of the lease. */
	private long renewalPeriodNanos() {
		return Math.max(1, this.leaseNanos / 3);
	}

	/**
	 * The delay from {@code now} until the first renewal: until two thirds of the lease are left by
	 * {@link #validUntilNanos}, 0 if less is left already, at most one period.
	 */
	private long firstRenewalDelayNanos(long now) {
		long period = renewalPeriodNanos();
		long untilTwoThirdsLeft = (this.validUntilNanos - now) - (this.leaseNanos - period);
		return Math.max(0, Math.min(period, untilTwoThirdsLeft));
	}

	/** What is leased, for log messages: {@code lock 'x'}, {@code a permit of semaphore 'x'}. */
	String describe() {
		return "lock '" + this.resource + "'";
	}

	/**
	 * One renewal tick, on the scheduler's thread; never waits for the database. Declares the loss once the lease has
	 * run out by this JVM's clock; otherwise sends a renewal on a background thread unless one is still in flight, and
	 * while one is, makes sure the loss is checked again when the lease runs out.
	 */
	final void renew() {
		if (this.released || this.lost) {
			return;
		}
		long sentAt = System.nanoTime();
		if (sentAt - this.validUntilNanos >= 0) {
			declareLost("its lease ran out before a renewal was confirmed");
			return;
		}
		if (!this.renewing.compareAndSet(false, true)) {
			checkLossAtLeaseEnd(); // the previous renewal still waits for its reply
			return;
		}
		if (this.validUntilNanos - sentAt <= renewalPeriodNanos()) {
			// the lease ends before the next tick (a hold granted late): if this renewal is not confirmed by then, the
			// loss must be declared when the lease ends, not at the next tick
			checkLossAtLeaseEnd();
		}
		try {
			BACKGROUND.execute(() -> renewNow(sentAt));
		}
		catch (java.util.concurrent.RejectedExecutionException ex) {
			this.renewing.set(false);
			checkLossAtLeaseEnd();
		}
	}

	/** One renewal statement, on a background thread. */
	private void renewNow(long sentAt) {
		try {
			boolean renewed = renewInDatabase(callDeadline());
			if (this.releaseSent) {
				if (renewed && releaseKeepsOwner()) {
					releaseAgainQuietly(); // may have landed after the release: the release must have the last word
				}
				return;
			}
			if (this.released || this.lost) {
				return;
			}
			if (!renewed) {
				declareLost("the database shows its lease expired or taken over");
				return;
			}
			synchronized (this) {
				if (!this.lost && sentAt - this.validUntilNanos < 0) {
					this.validUntilNanos = Math.max(this.validUntilNanos, sentAt + this.leaseNanos);
				}
			}
		}
		catch (RuntimeException ex) {
			if (this.released || this.lost) {
				return;
			}
			logger.warn("Could not renew " + describe() + "; retrying until its lease must be presumed expired: "
					+ ex.getMessage());
			checkLossAtLeaseEnd();
		}
		finally {
			this.renewing.set(false);
		}
	}

	/** Schedules a one-off loss check for when the lease runs out by this JVM's clock. */
	private void checkLossAtLeaseEnd() {
		ScheduledExecutorService executor = this.scheduler;
		if (executor == null) {
			return;
		}
		long delay = Math.max(0, this.validUntilNanos - System.nanoTime()) + 1;
		try {
			executor.schedule(() -> {
				if (!this.released && !this.lost && System.nanoTime() - this.validUntilNanos >= 0) {
					declareLost(this.renewing.get() ? "its lease ran out while a renewal still waited for the database"
							: "the database was unreachable until its lease ran out");
				}
			}, delay, TimeUnit.NANOSECONDS);
		}
		catch (java.util.concurrent.RejectedExecutionException ex) {
			// shut down: the lease ends on its own
		}
	}

	/** Marks the lease lost once, stops renewal and tells {@link #onLost(String)}. */
	private void declareLost(String reason) {
		synchronized (this) {
			if (this.lost || this.released) {
				return;
			}
			this.lost = true;
		}
		stopRenewal();
		onLost(reason); // the application's listeners: no lock held
	}

	private void releaseAgainQuietly() {
		try {
			releaseInDatabase(callDeadline());
		}
		catch (RuntimeException ex) {
			logger.warn("Could not release " + describe() + " again after a late renewal; it ends with its lease: "
					+ ex.getMessage());
		}
	}

	private void stopRenewal() {
		ScheduledFuture<?> future = this.renewal;
		if (future != null) {
			future.cancel(false);
		}
	}

	/**
	 * Stops renewal without a release statement, for an owner that ends its lease with a statement of its own (an
	 * idempotency claim recording its outcome, whose renewal matches only a running claim). A renewal in flight
	 * ignores its result.
	 */
	final void finish() {
		this.released = true;
		stopRenewal();
	}

	/**
	 * Gives the lease back. Must be called at most once. Does not wait for a renewal in flight.
	 * @return {@code true} if released; {@code false} if it was no longer this owner's (lost or expired)
	 * @throws DataAccessException if the database stayed unreachable (the lease then ends on its own)
	 */
	public final boolean release() {
		synchronized (this) {
			this.released = true;
		}
		stopRenewal();
		if (this.lost) {
			return false; // known lost: another owner may hold it now, so change nothing
		}
		this.releaseSent = true;
		return releaseWithRetries(callDeadline());
	}

	/** The release statement, retried after a broken connection while the lease is valid and the deadline allows. */
	private boolean releaseWithRetries(CallDeadline deadline) {
		boolean retried = false;
		for (int failures = 0;; failures++) {
			long sentAt = System.nanoTime();
			try {
				boolean released = releaseInDatabase(deadline);
				// After a broken connection the first release may have committed without our hearing of it: then
				// the row no longer names us. While the lease is still valid by this JVM's clock nobody else can
				// have taken it, so that means released, not lost.
				return released || (retried && sentAt - this.validUntilNanos < 0);
			}
			catch (DataAccessException ex) {
				long pause = TimeUnit.MILLISECONDS.toNanos(Math.min(200, 50L << failures));
				if (!SqlErrors.isConnectionFailure(ex) || System.nanoTime() - this.validUntilNanos >= 0
						|| failures >= MAX_RELEASE_RETRIES || deadline.remainingNanos() <= pause) {
					throw ex;
				}
				retried = true;
				try {
					TimeUnit.NANOSECONDS.sleep(pause);
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
