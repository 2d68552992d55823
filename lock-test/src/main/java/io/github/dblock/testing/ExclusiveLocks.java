package io.github.dblock.testing;

import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import io.github.dblock.jdbc.admin.LockTableAdmin;
import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.LockRequest;
import org.jspecify.annotations.Nullable;

/**
 * The exclusive locks of an {@link InMemoryLockStore}, one per resource and shared by every mode: LEASE holds,
 * PESSIMISTIC row locks, the version that OPTIMISTIC work reads, and what the faults do to them.
 * <p>
 * Thread-safe: its rows and holds are guarded by the store's {@link StoreMonitor}; the methods other than
 * {@link #acquire} are called under it.
 */
final class ExclusiveLocks {

	private final StoreMonitor monitor;

	private final Map<String, Row> rows = new HashMap<>();

	ExclusiveLocks(StoreMonitor monitor) {
		this.monitor = monitor;
	}

	private Row row(String resource) {
		return this.rows.computeIfAbsent(resource, (key) -> new Row());
	}

	/**
	 * Takes the resource's exclusive lock for a new owner, waiting until the request's deadline (a row lock: until
	 * the deadline rounded up to whole seconds from now, as the server's lock wait).
	 */
	AcquireResult acquire(LockRequest request, boolean rowLock) throws InterruptedException {
		long deadline = rowLock ? roundedUpToSeconds(request) : request.deadlineNanos();
		long minHold = request.minHoldTime().toNanos();
		boolean renew = request.renew() && !rowLock;
		synchronized (this.monitor) {
			this.monitor.awaitStall(request.resource());
			Row row = row(request.resource());
			while (true) {
				long now = this.monitor.nowNanos();
				if (row.isFree(now)) {
					ExclusiveHold hold = new ExclusiveHold(this.monitor, row, request.resource(), request.holder(),
							++row.token, renew, request.leaseTime().toNanos(), minHold, rowLock, now);
					row.take(hold, now);
					if (renew) {
						hold.scheduleRenewal();
					}
					return AcquireResult.acquired(hold);
				}
				long remaining = deadline - System.nanoTime();
				if (remaining <= 0) {
					return AcquireResult.busy(row.describeBusy(now));
				}
				this.monitor.await(Math.min(remaining, this.monitor.nanosUntil(row.endsAt())));
			}
		}
	}

	/** The request's deadline for a wait in whole seconds (a zero wait stays a single attempt). */
	private static long roundedUpToSeconds(LockRequest request) {
		long now = System.nanoTime();
		long remaining = request.deadlineNanos() - now;
		if (remaining <= 0) {
			return request.deadlineNanos();
		}
		long second = TimeUnit.SECONDS.toNanos(1);
		return StoreMonitor.plus(now, ((remaining + second - 1) / second) * second);
	}

	// ---- inspection ----

	/** {@link InMemoryLockStore#find}. */
	Optional<LockTableAdmin.LockRow> find(String resource) {
		Row row = this.rows.get(resource);
		if (row == null) {
			return Optional.empty();
		}
		long now = this.monitor.nowNanos();
		ExclusiveHold owner = row.owner;
		boolean held = owner != null && owner.isLive(now);
		Instant expiresAt = (owner != null && owner.rowLock) ? Instant.MAX : this.monitor.instant(row.endsAt());
		return Optional.of(new LockTableAdmin.LockRow(resource, row.lastHolder, row.token,
				this.monitor.instant(row.acquiredAt), expiresAt, held));
	}

	boolean isLocked(String resource, long now) {
		Row row = this.rows.get(resource);
		return row != null && !row.isFree(now);
	}

	/** Adds the current owners, neither released nor lost, to {@code holds}. */
	void addOpenHolds(List<StoreHold> holds) {
		for (Row row : this.rows.values()) {
			if (row.owner != null && row.owner.isOpen()) {
				holds.add(row.owner);
			}
		}
	}

	// ---- OPTIMISTIC ----

	/** The version OPTIMISTIC work starts from: the highest fencing token handed out. */
	long version(String resource) {
		return row(resource).token;
	}

	/**
	 * Commits OPTIMISTIC work that started from {@code version}: if the version did not move and nobody holds the
	 * lock, the version moves on and the holder is recorded as the last one.
	 * @return whether it committed
	 */
	boolean commit(String resource, long version, String holder) {
		Row row = row(resource);
		if (row.token != version || !row.isFree(this.monitor.nowNanos())) {
			return false;
		}
		row.token++;
		row.lastHolder = holder;
		row.acquiredAt = this.monitor.nowNanos();
		row.releasedAt = row.acquiredAt;
		return true;
	}

	// ---- faults ----

	/** {@link LockFaults#expire} of the exclusive lock; adds the lost-callbacks to run to {@code lost}. */
	boolean expire(String resource, long now, List<Runnable> lost) {
		Row row = this.rows.get(resource);
		if (row == null) {
			return false;
		}
		boolean ended = false;
		ExclusiveHold owner = row.owner;
		if (owner != null && owner.isLive(now)) {
			ended = true;
			if (owner.rowLock) {
				lost.addAll(owner.markLost()); // its connection dropped: the server ended its transaction
			}
			else {
				owner.serverEnd = now;
				lost.addAll(owner.renewNowIfRenewed());
			}
		}
		if (row.keptUntil > now) {
			row.keptUntil = now;
			ended = true;
		}
		return ended;
	}

	/** {@link LockFaults#takeOver} of the exclusive lock; returns the new owner's fencing token. */
	long takeOver(String resource, long leaseNanos, long now, List<Runnable> lost) {
		Row row = row(resource);
		ExclusiveHold previous = row.owner;
		boolean previousLive = previous != null && previous.isLive(now);
		ExclusiveHold other = new ExclusiveHold(this.monitor, row, resource, StoreHold.ANOTHER_OWNER,
				++row.token, false, leaseNanos, 0, false, now);
		row.take(other, now);
		if (previous != null && previousLive) {
			lost.addAll(previous.rowLock ? previous.markLost() : previous.renewNowIfRenewed());
		}
		return other.token;
	}

	/** {@link LockFaults#endLeaseIn} of the exclusive lock; whether a lease was moved. */
	boolean endLeaseIn(String resource, long remainingNanos, long now, List<Runnable> lost) {
		Row row = this.rows.get(resource);
		if (row == null || row.owner == null || row.owner.rowLock || !row.owner.isLive(now)) {
			return false;
		}
		row.owner.serverEnd = StoreMonitor.plus(now, remainingNanos);
		if (remainingNanos == 0) {
			lost.addAll(row.owner.renewNowIfRenewed());
		}
		return true;
	}

	// ---- rows and holds ----

	/** The exclusive lock of a resource; guarded by the store's monitor. */
	private static final class Row {

		/** The current (or last) owner; a lease of it may have ended already. */
		@Nullable ExclusiveHold owner;

		/** The highest fencing token handed out, also the OPTIMISTIC version. */
		long token;

		/** After a release with a minimum hold time: the row stays taken, without owner, until then. */
		long keptUntil = Long.MIN_VALUE;

		@Nullable String lastHolder;

		long acquiredAt;

		/** When the last owner released it or was dropped, on the store's clock. */
		long releasedAt;

		void take(ExclusiveHold hold, long now) {
			this.owner = hold;
			this.keptUntil = Long.MIN_VALUE;
			this.lastHolder = hold.holder;
			this.acquiredAt = now;
		}

		boolean isFree(long now) {
			ExclusiveHold current = this.owner;
			return (current == null || !current.isLive(now)) && this.keptUntil <= now;
		}

		/**
		 * When its lease ends or ended, on the store's clock ({@link Long#MAX_VALUE} for a row lock): when a busy row
		 * is free at the earliest, and the {@code expires_at} of {@link #find}.
		 */
		long endsAt() {
			ExclusiveHold current = this.owner;
			long end = (current != null && current.isOpen()) ? current.serverEnd : this.releasedAt;
			return Math.max(end, this.keptUntil);
		}

		/** The holder as the lock table's busy answer names it: with the rest of its lease, as the real table's. */
		String describeBusy(long now) {
			ExclusiveHold current = this.owner;
			if (current != null && current.rowLock && current.isOpen()) {
				return "an open transaction holding the row lock (holder: " + current.holder + ")";
			}
			return ((this.lastHolder != null) ? this.lastHolder : "another owner") + " (lease ends in "
					+ TimeUnit.NANOSECONDS.toMillis(Math.max(0, endsAt() - now)) + " ms)";
		}

	}

	/** A LEASE or PESSIMISTIC hold of a resource's exclusive lock. */
	private static final class ExclusiveHold extends StoreHold {

		private final Row row;

		ExclusiveHold(StoreMonitor monitor, Row row, String resource, String holder, long token, boolean renew,
				long leaseNanos, long minHoldNanos, boolean rowLock, long now) {
			super(monitor, resource, holder, token, renew, leaseNanos, minHoldNanos, rowLock, now);
			this.row = row;
		}

		@Override
		boolean isCurrent() {
			return this.row.owner == this;
		}

		@Override
		void dropped() {
			if (this.rowLock && this.row.owner == this) {
				this.row.owner = null;
				this.row.releasedAt = this.monitor.nowNanos();
			}
		}

		@Override
		public boolean extend(Duration leaseTime) {
			synchronized (this.monitor) {
				if (this.renew) {
					throw new IllegalStateException("Lock '" + this.resource + "' is renewed automatically while held; "
							+ "only a lock taken with a lease time of its own can be extended");
				}
				if (this.rowLock) {
					throw new UnsupportedOperationException("A row lock has no lease to extend");
				}
				long now = this.monitor.nowNanos();
				if (!isLive(now)) {
					return false;
				}
				this.serverEnd = StoreMonitor.plus(now, leaseTime.toNanos());
				this.localEnd = this.serverEnd;
				this.monitor.signalAll();
				return true;
			}
		}

		@Override
		public boolean release() {
			synchronized (this.monitor) {
				if (this.released) {
					return false;
				}
				long now = this.monitor.nowNanos();
				boolean held = markReleased(now);
				if (held) {
					this.row.owner = null;
					this.row.releasedAt = now;
					this.row.keptUntil = Math.max(now, StoreMonitor.plus(this.acquiredAt, this.minHoldNanos));
					this.monitor.signalAll();
				}
				return held;
			}
		}

	}

}
