package io.github.dblock.testing;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import io.github.dblock.LockType;
import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.LockRequest;
import org.jspecify.annotations.Nullable;

/**
 * The read/write locks of an {@link InMemoryLockStore}, one per resource: many readers or one writer, with writer
 * preference (a waiting writer keeps new readers out), their own fencing tokens, and what the faults do to them.
 * <p>
 * Thread-safe: its rows and holds are guarded by the store's {@link StoreMonitor}; the methods other than
 * {@link #acquire} are called under it.
 */
final class ReadWriteLocks {

	private final StoreMonitor monitor;

	private final Map<String, Row> rows = new HashMap<>();

	ReadWriteLocks(StoreMonitor monitor) {
		this.monitor = monitor;
	}

	private Row row(String resource) {
		return this.rows.computeIfAbsent(resource, (key) -> new Row());
	}

	/** Takes the read or write lock of a resource for a new owner, waiting until the request's deadline. */
	AcquireResult acquire(LockRequest request, LockType type) throws InterruptedException {
		if (type != LockType.READ && type != LockType.WRITE) {
			throw new IllegalArgumentException("A read/write lock is READ or WRITE, not " + type);
		}
		String intent = UUID.randomUUID().toString();
		synchronized (this.monitor) {
			this.monitor.awaitStall(request.resource());
			Row row = row(request.resource());
			try {
				return acquireOrWait(request, type, row, intent);
			}
			finally {
				if (intent.equals(row.intentOwner)) {
					row.intentOwner = null;
					row.intentHolder = null;
					this.monitor.signalAll();
				}
			}
		}
	}

	/** The loop of {@link #acquire}, under the monitor: a writer that waits leaves its {@code intent} on the row. */
	private AcquireResult acquireOrWait(LockRequest request, LockType type, Row row, String intent)
			throws InterruptedException {
		while (true) {
			long now = this.monitor.nowNanos();
			row.prune(now);
			ReadWriteHold blocking = row.strongestLive(now, (type == LockType.WRITE) ? LockType.READ : LockType.WRITE,
					null);
			boolean intentOfAnother = row.intentOwner != null && !row.intentOwner.equals(intent);
			if (blocking == null && !intentOfAnother) {
				ReadWriteHold hold = new ReadWriteHold(this.monitor, row, request.resource(), request.holder(),
						++row.token, type, request.renew(), request.leaseTime().toNanos(),
						request.minHoldTime().toNanos(), now);
				row.holders.add(hold);
				if (hold.renew) {
					hold.scheduleRenewal();
				}
				return AcquireResult.acquired(hold);
			}
			long remaining = request.deadlineNanos() - System.nanoTime();
			if (remaining <= 0) {
				return AcquireResult.busy(describeBusy(row, blocking, now));
			}
			if (type == LockType.WRITE && row.intentOwner == null) {
				row.intentOwner = intent; // writer preference: new readers stay out while it waits
				row.intentHolder = request.holder();
			}
			long wait = remaining;
			if (blocking != null) {
				wait = Math.min(wait, this.monitor.nanosUntil(blocking.serverEnd));
			}
			this.monitor.await(Math.max(1, wait));
		}
	}

	/** What kept a request out: the blocking hold with the rest of its lease, or the waiting writer. */
	private static String describeBusy(Row row, @Nullable ReadWriteHold blocking, long now) {
		if (blocking == null) {
			return "a writer waiting for the lock: " + row.intentHolder;
		}
		return blocking.holder + " (" + ((blocking.type == LockType.WRITE) ? "write" : "read")
				+ " lock, lease ends in " + TimeUnit.NANOSECONDS.toMillis(Math.max(0, blocking.serverEnd - now))
				+ " ms)";
	}

	// ---- inspection ----

	boolean isLocked(String resource, long now) {
		Row row = this.rows.get(resource);
		return row != null && row.strongestLive(now, LockType.READ, null) != null;
	}

	/** Adds the holds neither released nor lost to {@code holds}. */
	void addOpenHolds(List<StoreHold> holds) {
		for (Row row : this.rows.values()) {
			for (ReadWriteHold hold : row.holders) {
				if (hold.isOpen()) {
					holds.add(hold);
				}
			}
		}
	}

	// ---- faults ----

	/** {@link LockFaults#expire} of the read/write lock; adds the lost-callbacks to run to {@code lost}. */
	boolean expire(String resource, long now, List<Runnable> lost) {
		Row row = this.rows.get(resource);
		if (row == null) {
			return false;
		}
		boolean ended = false;
		for (ReadWriteHold hold : List.copyOf(row.holders)) {
			if (hold.serverEnd > now) {
				ended = true;
				hold.serverEnd = now;
				lost.addAll(hold.renewNowIfRenewed());
			}
		}
		return ended;
	}

	/** {@link LockFaults#takeOver} of the read or write lock; returns the new owner's fencing token. */
	long takeOver(String resource, LockType type, long leaseNanos, long now, List<Runnable> lost) {
		Row row = row(resource);
		for (ReadWriteHold hold : List.copyOf(row.holders)) {
			if (hold.serverEnd > now && (type == LockType.WRITE || hold.type == LockType.WRITE)) {
				hold.serverEnd = now;
				lost.addAll(hold.renewNowIfRenewed());
			}
		}
		ReadWriteHold other = new ReadWriteHold(this.monitor, row, resource, StoreHold.ANOTHER_OWNER,
				++row.token, type, false, leaseNanos, 0, now);
		row.holders.add(other);
		return other.token;
	}

	/** {@link LockFaults#endLeaseIn} of the read/write lock; whether a lease was moved. */
	boolean endLeaseIn(String resource, long remainingNanos, long now, List<Runnable> lost) {
		Row row = this.rows.get(resource);
		if (row == null) {
			return false;
		}
		boolean moved = false;
		for (ReadWriteHold hold : List.copyOf(row.holders)) {
			if (hold.serverEnd > now) {
				hold.serverEnd = StoreMonitor.plus(now, remainingNanos);
				moved = true;
				if (remainingNanos == 0) {
					lost.addAll(hold.renewNowIfRenewed());
				}
			}
		}
		return moved;
	}

	// ---- rows and holds ----

	/** The read/write lock of a resource; guarded by the store's monitor. */
	private static final class Row {

		long token;

		final List<ReadWriteHold> holders = new ArrayList<>();

		@Nullable String intentOwner;

		@Nullable String intentHolder;

		/** Drops holds whose lease (or minimum hold) has ended. */
		void prune(long now) {
			this.holders.removeIf((hold) -> hold.serverEnd <= now);
		}

		/** The live hold, writers first, of at least {@code kind} (READ: any), other than {@code except}. */
		@Nullable ReadWriteHold strongestLive(long now, LockType kind, @Nullable ReadWriteHold except) {
			ReadWriteHold found = null;
			for (ReadWriteHold hold : this.holders) {
				if (hold != except && hold.serverEnd > now && (kind == LockType.READ || hold.type == LockType.WRITE)) {
					if (hold.type == LockType.WRITE) {
						return hold;
					}
					found = hold;
				}
			}
			return found;
		}

	}

	/** A read or write hold of a resource's read/write lock. */
	private static final class ReadWriteHold extends StoreHold {

		private final Row row;

		final LockType type;

		ReadWriteHold(StoreMonitor monitor, Row row, String resource, String holder, long token, LockType type,
				boolean renew, long leaseNanos, long minHoldNanos, long now) {
			super(monitor, resource, holder, token, renew, leaseNanos, minHoldNanos, false, now);
			this.row = row;
			this.type = type;
		}

		@Override
		boolean isCurrent() {
			return this.row.holders.contains(this);
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
					long keep = StoreMonitor.plus(this.acquiredAt, this.minHoldNanos);
					if (keep > now) {
						this.serverEnd = keep; // the holder row stays for the minimum hold time
					}
					else {
						this.row.holders.remove(this);
					}
					this.monitor.signalAll();
				}
				return held;
			}
		}

	}

}
