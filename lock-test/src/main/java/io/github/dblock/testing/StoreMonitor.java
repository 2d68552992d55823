package io.github.dblock.testing;

import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The monitor of an {@link InMemoryLockStore}, with the state that every lock and hold of the store shares: the
 * store's clock (real time plus the advances), the stalls of resources, and the background threads that run renewals
 * and {@code onLost} listeners.
 * <p>
 * Thread-safe: the clock and the stalls are guarded by this object's monitor, which also guards every row and hold
 * of the store; waits on the store are timed waits on it.
 */
final class StoreMonitor {

	/**
	 * How far ahead a live hold tells the engine it is valid: local waiters look again at least this often, so that a
	 * lease ended by a clock advance or a fault is seen within it.
	 */
	private static final long HORIZON_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

	private static final AtomicInteger threads = new AtomicInteger();

	/** {@link System#nanoTime()} and the instant at the store's creation: the origin of its clock. */
	private final long originNanos = System.nanoTime();

	private final Instant originInstant = Instant.now();

	/** The sum of the clock's advances, in nanoseconds. */
	private long offsetNanos;

	/** Per resource, the {@link System#nanoTime()} until which acquisitions wait. */
	private final Map<String, Long> stalls = new HashMap<>();

	private final ScheduledThreadPoolExecutor background;

	StoreMonitor() {
		this.background = new ScheduledThreadPoolExecutor(2, (task) -> {
			Thread thread = new Thread(task, "in-memory-lock-store-" + threads.incrementAndGet());
			thread.setDaemon(true);
			return thread;
		});
		this.background.setKeepAliveTime(10, TimeUnit.SECONDS);
		this.background.allowCoreThreadTimeOut(true);
		this.background.setRemoveOnCancelPolicy(true);
	}

	// ---- the clock (under the monitor) ----

	/** Moves the clock forward by {@code nanos}. */
	void advance(long nanos) {
		this.offsetNanos = Math.addExact(this.offsetNanos, nanos);
	}

	/** Nanoseconds since the store's origin on its clock. */
	long nowNanos() {
		return System.nanoTime() - this.originNanos + this.offsetNanos;
	}

	/**
	 * How long a real-time wait until the store's clock reads {@code storeNanos} takes, in nanoseconds: the clock runs
	 * at the rate of real time between advances. At least 1, so that it can be passed to a timed wait.
	 */
	long nanosUntil(long storeNanos) {
		long remaining = storeNanos - nowNanos();
		return (remaining < 1) ? 1 : remaining;
	}

	Instant instant(long storeNanos) {
		return this.originInstant.plusNanos(storeNanos);
	}

	/**
	 * A hold's {@code validUntilNanos}: its end on the store's clock, {@code localEnd}, as a {@link System#nanoTime()}
	 * value, but never more than the horizon ahead. One reading of the clock.
	 */
	long validUntilNanos(long localEnd) {
		long real = System.nanoTime();
		long remaining = localEnd - (real - this.originNanos + this.offsetNanos);
		return real + Math.min(remaining, HORIZON_NANOS);
	}

	/** {@code a + b}, saturated at {@link Long#MAX_VALUE}. */
	static long plus(long a, long b) {
		long sum = a + b;
		return (((a ^ sum) & (b ^ sum)) < 0) ? Long.MAX_VALUE : sum;
	}

	// ---- waiting (under the monitor) ----

	/** Waits on the monitor for at most {@code nanos}, or until it is signalled. */
	void await(long nanos) throws InterruptedException {
		TimeUnit.NANOSECONDS.timedWait(this, nanos);
	}

	/** Wakes every thread waiting on the store. */
	void signalAll() {
		notifyAll();
	}

	/** Makes acquisitions of the resource wait until {@code untilNanos} ({@link System#nanoTime()}), or longer. */
	void stall(String resource, long untilNanos) {
		this.stalls.merge(resource, untilNanos, (a, b) -> (a - b > 0) ? a : b);
	}

	/** Waits until a stall of the resource has ended. */
	void awaitStall(String resource) throws InterruptedException {
		Long until = this.stalls.get(resource);
		while (until != null) {
			long remaining = until - System.nanoTime();
			if (remaining <= 0) {
				this.stalls.remove(resource, until);
				return;
			}
			await(remaining);
			until = this.stalls.get(resource);
		}
	}

	// ---- background threads ----

	/** Runs the task every {@code periodNanos}, first after one period, on a background thread. */
	ScheduledFuture<?> scheduleEvery(long periodNanos, Runnable task) {
		return this.background.scheduleWithFixedDelay(task, periodNanos, periodNanos, TimeUnit.NANOSECONDS);
	}

	/** Runs the callbacks on the background threads; called outside the monitor or under it. */
	void runAll(List<Runnable> callbacks) {
		for (Runnable callback : callbacks) {
			this.background.execute(callback);
		}
	}

}
