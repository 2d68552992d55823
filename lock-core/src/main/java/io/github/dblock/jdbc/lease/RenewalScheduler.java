package io.github.dblock.jdbc.lease;

import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The renewal scheduler of {@link LeaseLockProvider} (shared with the semaphore, read/write and idempotency leases):
 * a {@link ScheduledThreadPoolExecutor} that keeps a no-op "pacer" task queued ahead of the renewals while renewals
 * are being scheduled, so that scheduling one does not wake a scheduler thread.
 * <p>
 * Why: a {@code ScheduledThreadPoolExecutor} signals a waiting worker whenever a new task becomes the head of its
 * delay queue (the earliest one), and the worker wakes up only to find the task due in a third of a lease and go back
 * to sleep. With one lock held at a time, every acquisition's renewal is such a head, so every acquisition paid a
 * thread wake-up (and its context switches) on top of its statements; on a 2-core machine that was about a tenth of
 * the uncontended acquire-and-release time. The pacer runs every {@link #PACE_NANOS} (250 ms) and so is almost always due
 * before any renewal (a renewal's first run is a third of its lease after its take was sent, at least 333 ms for the
 * shortest renewed lease, 1 s; a shorter lease, and a hold granted late, whose first renewal is due at once, only get
 * the old behavior). Renewals themselves are scheduled, run and cancelled
 * exactly as by the plain executor: their timing does not change.
 * <p>
 * The pacer stops when no renewal was scheduled for {@link #IDLE_NANOS}, so an idle application's scheduler thread
 * sleeps; the first renewal afterwards starts it again (one wake-up).
 * <p>
 * Thread-safe.
 */
final class RenewalScheduler extends ScheduledThreadPoolExecutor {

	/** How often the pacer runs while renewals are being scheduled: 250 ms. */
	static final long PACE_NANOS = TimeUnit.MILLISECONDS.toNanos(250);

	/** How long the pacer keeps running after the last renewal was scheduled: 10 s. */
	static final long IDLE_NANOS = TimeUnit.SECONDS.toNanos(10);

	private final long paceNanos;

	private final long idleNanos;

	private final AtomicBoolean pacing = new AtomicBoolean();

	/** {@link System#nanoTime()} when the last renewal was scheduled. */
	private volatile long lastScheduledNanos;

	/**
	 * Creates a scheduler whose cancelled renewals leave its queue at once.
	 * @param threads the number of scheduler threads
	 * @param threadFactory makes the (daemon) scheduler threads
	 */
	RenewalScheduler(int threads, ThreadFactory threadFactory) {
		this(threads, threadFactory, PACE_NANOS, IDLE_NANOS);
	}

	/** For tests: other pacer period and idle time, in nanoseconds. */
	RenewalScheduler(int threads, ThreadFactory threadFactory, long paceNanos, long idleNanos) {
		super(threads, threadFactory);
		this.paceNanos = paceNanos;
		this.idleNanos = idleNanos;
		setRemoveOnCancelPolicy(true);
	}

	/**
	 * Schedules a renewal like {@link ScheduledThreadPoolExecutor#scheduleWithFixedDelay}, after making sure the pacer
	 * is queued ahead of it.
	 * @throws RejectedExecutionException if the scheduler was shut down
	 */
	@Override
	public ScheduledFuture<?> scheduleWithFixedDelay(Runnable command, long initialDelay, long delay, TimeUnit unit) {
		this.lastScheduledNanos = System.nanoTime();
		if (!this.pacing.get() && this.pacing.compareAndSet(false, true)) {
			schedulePace();
		}
		return super.scheduleWithFixedDelay(command, initialDelay, delay, unit);
	}

	private void schedulePace() {
		try {
			schedule(this::pace, this.paceNanos, TimeUnit.NANOSECONDS);
		}
		catch (RejectedExecutionException ex) {
			this.pacing.set(false); // shut down: the renewal itself is rejected too
		}
	}

	/**
	 * The pacer's run: queues its next run while renewals were scheduled lately, else stops (and starts again if a
	 * renewal was scheduled while it was stopping).
	 */
	private void pace() {
		if (System.nanoTime() - this.lastScheduledNanos < this.idleNanos) {
			schedulePace();
			return;
		}
		this.pacing.set(false);
		if (System.nanoTime() - this.lastScheduledNanos < this.idleNanos && this.pacing.compareAndSet(false, true)) {
			schedulePace();
		}
	}

}
