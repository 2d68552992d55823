package io.github.dblock.testing;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ScheduledFuture;

import io.github.dblock.spi.HeldLock;
import org.jspecify.annotations.Nullable;

/**
 * One owner's hold of a lock in an {@link InMemoryLockStore}: its lease on the store's clock, its renewal every third
 * of the lease time, and its loss (the {@code onLost} listeners). The subclasses know the lock it holds.
 * <p>
 * Thread-safe: its mutable fields are guarded by the store's {@link StoreMonitor}; the token, owner token and
 * settings are final.
 */
abstract class StoreHold implements HeldLock {

	/** The holder of the holds that {@link LockFaults#takeOver} gives another owner, as waiters see it. */
	static final String ANOTHER_OWNER = "lock-test (another owner)";

	final StoreMonitor monitor;

	final String resource;

	final String ownerToken = UUID.randomUUID().toString();

	final String holder;

	final long token;

	final boolean renew;

	final long leaseNanos;

	final long minHoldNanos;

	/** A PESSIMISTIC row lock: no lease, held until released or lost. */
	final boolean rowLock;

	final long acquiredAt;

	/** When the store considers the lease over, on its clock ({@link Long#MAX_VALUE} for a row lock). */
	long serverEnd;

	/** Until when the holder's JVM considers it held, on the store's clock; faults do not move it. */
	long localEnd;

	long lastRenewal;

	boolean lost;

	boolean released;

	final List<Runnable> lostCallbacks = new ArrayList<>();

	@Nullable ScheduledFuture<?> renewal;

	StoreHold(StoreMonitor monitor, String resource, String holder, long token, boolean renew, long leaseNanos,
			long minHoldNanos, boolean rowLock, long now) {
		this.monitor = monitor;
		this.resource = resource;
		this.holder = holder;
		this.token = token;
		this.renew = renew;
		this.leaseNanos = leaseNanos;
		this.minHoldNanos = minHoldNanos;
		this.rowLock = rowLock;
		this.acquiredAt = now;
		this.serverEnd = rowLock ? Long.MAX_VALUE : StoreMonitor.plus(now, leaseNanos);
		this.localEnd = this.serverEnd;
		this.lastRenewal = now;
	}

	/** Whether it is the store's current owner of its lock (not taken over, not dropped); under the monitor. */
	abstract boolean isCurrent();

	/** Frees its lock, if it still has it, once it is found lost; under the monitor. Nothing by default. */
	void dropped() {
	}

	/** Whether it holds its lock now: current, not released or lost, and its lease not over. */
	boolean isLive(long now) {
		return isCurrent() && !this.released && !this.lost && this.serverEnd > now;
	}

	/** Whether it is neither released nor lost (its lease may have ended). */
	boolean isOpen() {
		return !this.released && !this.lost;
	}

	// ---- renewal and loss (under the monitor) ----

	/** Starts its renewal every third of its lease time, on the store's background threads. */
	void scheduleRenewal() {
		this.renewal = this.monitor.scheduleEvery(renewalPeriod(), () -> {
			List<Runnable> lost;
			synchronized (this.monitor) {
				lost = renewNow();
			}
			this.monitor.runAll(lost);
		});
	}

	/** Whether it is renewed and a renewal is due at {@code now}: one ran a renewal period ago or longer. */
	boolean isRenewalDue(long now) {
		return this.renew && now - this.lastRenewal >= renewalPeriod();
	}

	private long renewalPeriod() {
		return Math.max(1, this.leaseNanos / 3);
	}

	/**
	 * One renewal: extends the lease by its lease time if it is still this owner's and has not ended; otherwise marks
	 * it lost.
	 * @return the lost-callbacks to run, outside the monitor
	 */
	List<Runnable> renewNow() {
		if (this.released || this.lost) {
			cancelRenewal();
			return List.of();
		}
		long now = this.monitor.nowNanos();
		if (!isCurrent() || this.serverEnd <= now) {
			return markLost();
		}
		this.serverEnd = StoreMonitor.plus(now, this.leaseNanos);
		this.localEnd = this.serverEnd;
		this.lastRenewal = now;
		return List.of();
	}

	/** {@link #renewNow()} if it is renewed: a fault that ended its lease is found at once. */
	List<Runnable> renewNowIfRenewed() {
		return this.renew ? renewNow() : List.of();
	}

	/**
	 * Marks it lost; a row lock frees the row.
	 * @return the lost-callbacks to run, outside the monitor
	 */
	List<Runnable> markLost() {
		if (this.lost) {
			return List.of();
		}
		this.lost = true;
		cancelRenewal();
		dropped();
		List<Runnable> callbacks = List.copyOf(this.lostCallbacks);
		this.lostCallbacks.clear();
		this.monitor.signalAll();
		return callbacks;
	}

	/** The end of its use by the owner: marks it released; whether it held its lock until now. */
	boolean markReleased(long now) {
		boolean held = isLive(now);
		this.released = true;
		cancelRenewal();
		this.lostCallbacks.clear();
		return held;
	}

	void cancelRenewal() {
		ScheduledFuture<?> task = this.renewal;
		if (task != null) {
			task.cancel(false);
			this.renewal = null;
		}
	}

	// ---- HeldLock ----

	@Override
	public long fencingToken() {
		return this.token;
	}

	@Override
	public String ownerToken() {
		return this.ownerToken;
	}

	@Override
	public long validUntilNanos() {
		synchronized (this.monitor) {
			return this.monitor.validUntilNanos(this.localEnd);
		}
	}

	@Override
	public boolean isLost() {
		synchronized (this.monitor) {
			return this.lost;
		}
	}

	@Override
	public void onLost(Runnable callback) {
		synchronized (this.monitor) {
			if (this.lost) {
				this.monitor.runAll(List.of(callback));
			}
			else if (!this.released) {
				this.lostCallbacks.add(callback);
			}
		}
	}

}
