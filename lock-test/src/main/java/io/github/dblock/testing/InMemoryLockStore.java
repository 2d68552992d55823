package io.github.dblock.testing;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.LockType;
import io.github.dblock.jdbc.LockTableAdmin;
import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.spi.WorkLockProvider;
import org.jspecify.annotations.Nullable;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The store of {@link InMemoryLockTemplate}s, in place of the database: the rows of the locks (an exclusive lock per
 * resource, shared by every {@link LockMode}, and a read/write lock per resource), a clock, and the
 * {@link LockFaults}. Templates built on one store are separate nodes that meet only here, as application instances
 * meet in the lock table.
 * <p>
 * It keeps the documented semantics of the lock table (docs/reference/lock-modes.md, read-write-locks.md, safety.md):
 * <ul>
 * <li>one owner at a time per exclusive lock, in every mode; many readers or one writer per read/write lock, with
 * writer preference (a waiting writer keeps new readers out);</li>
 * <li>fencing tokens that strictly increase per resource with every acquisition (the exclusive lock's counter is
 * shared by the modes, the read/write lock has its own);</li>
 * <li>leases on this store's clock: a lease given a lease time ends then; one without is renewed every third of the
 * lease time, on a background thread, and found lost (its {@code onLost} listeners run) when a renewal finds it ended
 * or taken over; a minimum hold time keeps the lock taken after an early release;</li>
 * <li>waiting with real threads until the wait time ends (PESSIMISTIC: rounded up to whole seconds, as the server's
 * lock wait is); waiting is interruptible.</li>
 * </ul>
 * What memory cannot do: there are no transactions, so a PESSIMISTIC hold ends when its handle is closed (not with a
 * transaction), commits are not validated, and OPTIMISTIC work cannot be rolled back; so units of OPTIMISTIC work on
 * one resource never overlap here, and a unit whose version moved meanwhile (another mode took the lock, or a fault)
 * is run again, up to the template's maximum attempts.
 * <p>
 * The clock: {@link #now()} follows real time, plus every {@link #advanceClock(Duration) advance}. Advancing it is
 * time passing at once for the store and for the templates' view of their leases: leases whose end it passes are
 * over (their holders' {@code isHeld()} turns false, others may take the locks, a release throws
 * {@link io.github.dblock.LockLostException}), and renewals due meanwhile run at once, so a renewed lease is found
 * lost when the clock is advanced by its whole lease time or more (a pause longer than the lease).
 * <p>
 * The faults act like the real events, and a renewed lease or a PESSIMISTIC hold that a fault ends is found lost at
 * once (on the real table: at its next renewal). A hold with a lease time of its own does not learn of a fault until
 * it is released, extended or validated, as on the real table.
 * <p>
 * Thread-safe: all state is guarded by the store's monitor. Renewals and {@code onLost} listeners run on up to two
 * daemon threads of the store, which end after 10 s idle.
 */
public final class InMemoryLockStore implements LockFaults {

	/** How the owner of {@link #takeOver} is described to waiters. */
	static final String ANOTHER_OWNER = "lock-test (another owner)";

	/**
	 * How far ahead a live hold tells the engine it is valid ({@link HeldLock#validUntilNanos()}): local waiters look
	 * again at least this often, so that a lease ended by {@link #advanceClock} or a fault is seen within it.
	 */
	private static final long HORIZON_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

	/** The pauses between the attempts of OPTIMISTIC work: 5 ms doubling to 50 ms. */
	private static final long FIRST_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

	private static final long LONGEST_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

	private static final AtomicInteger threads = new AtomicInteger();

	/** {@link System#nanoTime()} and the instant at the store's creation: the origin of its clock. */
	private final long originNanos = System.nanoTime();

	private final Instant originInstant = Instant.now();

	/** The sum of the clock's advances, in nanoseconds. */
	private long offsetNanos;

	private final Map<String, Row> rows = new HashMap<>();

	private final Map<String, ReadWriteRow> readWriteRows = new HashMap<>();

	/** Per resource, the {@link System#nanoTime()} until which acquisitions wait ({@link #stall}). */
	private final Map<String, Long> stalls = new HashMap<>();

	/** Resources whose OPTIMISTIC work runs now. */
	private final Set<String> optimisticRuns = new HashSet<>();

	private final ScheduledThreadPoolExecutor background;

	/** Creates an empty store whose clock starts at the current time. */
	public InMemoryLockStore() {
		this.background = new ScheduledThreadPoolExecutor(2, (task) -> {
			Thread thread = new Thread(task, "in-memory-lock-store-" + threads.incrementAndGet());
			thread.setDaemon(true);
			return thread;
		});
		this.background.setKeepAliveTime(10, TimeUnit.SECONDS);
		this.background.allowCoreThreadTimeOut(true);
		this.background.setRemoveOnCancelPolicy(true);
	}

	// ---- the clock ----

	/**
	 * Moves the store's clock forward: leases whose end it passes are over at once, and renewals due meanwhile run at
	 * once (see the class comment).
	 * @param duration how far, zero or positive, at most {@link LockOptions#MAX_LEASE_TIME}
	 * @throws IllegalArgumentException if the duration is null, negative or longer than that
	 */
	public void advanceClock(Duration duration) {
		if (duration == null || duration.isNegative() || duration.compareTo(LockOptions.MAX_LEASE_TIME) > 0) {
			throw new IllegalArgumentException("The clock moves forward by zero to " + LockOptions.MAX_LEASE_TIME.toDays()
					+ " days at a time, not by " + duration);
		}
		List<Runnable> lost = new ArrayList<>();
		synchronized (this) {
			this.offsetNanos = Math.addExact(this.offsetNanos, duration.toNanos());
			long now = nowNanos();
			for (Hold hold : liveHolds()) {
				if (hold.renew && now - hold.lastRenewal >= renewalPeriod(hold)) {
					lost.addAll(renewNow(hold)); // due while the clock jumped: it runs now that the "pause" is over
				}
			}
			notifyAll();
		}
		runAll(lost);
	}

	/** The current time on the store's clock: real time plus every advance. */
	public synchronized Instant now() {
		return instant(nowNanos());
	}

	/**
	 * A {@link Clock} (UTC) that reads this store's clock, for code under test that takes a {@code Clock}: advancing
	 * the store's clock moves it too.
	 */
	public Clock clock() {
		return new StoreClock(ZoneOffset.UTC);
	}

	/** Nanoseconds since the store's origin on its clock; called under the monitor. */
	private long nowNanos() {
		return System.nanoTime() - this.originNanos + this.offsetNanos;
	}

	/**
	 * How long a real-time wait until the store's clock reads {@code storeNanos} takes, in nanoseconds: the clock runs
	 * at the rate of real time between advances. At least 1, so that it can be passed to a timed wait.
	 */
	private long nanosUntil(long storeNanos) {
		long remaining = storeNanos - nowNanos();
		return (remaining < 1) ? 1 : remaining;
	}

	private Instant instant(long storeNanos) {
		return this.originInstant.plusNanos(storeNanos);
	}

	private static long plus(long a, long b) {
		long sum = a + b;
		return (((a ^ sum) & (b ^ sum)) < 0) ? Long.MAX_VALUE : sum;
	}

	// ---- inspection ----

	/**
	 * The resource's exclusive lock as the store holds it, in the shape {@link LockTableAdmin#find(String)} reads
	 * from the lock table: the (last) holder, the highest fencing token handed out, when it was (last) acquired and
	 * when its lease ends or ended on the store's clock, and whether it is held now. A PESSIMISTIC hold, which has no
	 * lease, ends at {@link Instant#MAX}.
	 * @param resource the resource name
	 * @return the row, or empty if the resource was never locked exclusively
	 * @throws IllegalArgumentException if the resource name is invalid
	 */
	public synchronized Optional<LockTableAdmin.LockRow> find(String resource) {
		LockTemplate.validateResource(resource);
		Row row = this.rows.get(resource);
		if (row == null) {
			return Optional.empty();
		}
		long now = nowNanos();
		Hold owner = row.owner;
		boolean held = owner != null && owner.isLive(now);
		Instant expiresAt = (owner != null && owner.rowLock) ? Instant.MAX : instant(row.endsAt());
		return Optional.of(new LockTableAdmin.LockRow(resource, row.lastHolder, row.token, instant(row.acquiredAt),
				expiresAt, held));
	}

	@Override
	public synchronized boolean isLocked(String resource) {
		LockTemplate.validateResource(resource);
		long now = nowNanos();
		Row row = this.rows.get(resource);
		if (row != null && !row.isFree(now)) {
			return true;
		}
		ReadWriteRow readWrite = this.readWriteRows.get(resource);
		return readWrite != null && readWrite.strongestLive(now, LockType.READ, null) != null;
	}

	// ---- faults ----

	@Override
	public boolean expire(String resource) {
		LockTemplate.validateResource(resource);
		List<Runnable> lost = new ArrayList<>();
		boolean ended = false;
		synchronized (this) {
			long now = nowNanos();
			Row row = this.rows.get(resource);
			if (row != null) {
				Hold owner = row.owner;
				if (owner != null && owner.isLive(now)) {
					ended = true;
					if (owner.rowLock) {
						lost.addAll(markLost(owner)); // its connection dropped: the server ended its transaction
					}
					else {
						owner.serverEnd = now;
						lost.addAll(renewNowIfRenewed(owner));
					}
				}
				if (row.keptUntil > now) {
					row.keptUntil = now;
					ended = true;
				}
			}
			ReadWriteRow readWrite = this.readWriteRows.get(resource);
			if (readWrite != null) {
				for (ReadWriteHold hold : List.copyOf(readWrite.holders)) {
					if (hold.serverEnd > now) {
						ended = true;
						hold.serverEnd = now;
						lost.addAll(renewNowIfRenewed(hold));
					}
				}
			}
			notifyAll();
		}
		runAll(lost);
		return ended;
	}

	@Override
	public long takeOver(String resource, LockType type, Duration leaseTime) {
		LockTemplate.validateResource(resource);
		if (type == null) {
			throw new IllegalArgumentException("type must not be null: EXCLUSIVE, READ or WRITE");
		}
		long leaseNanos = positive(leaseTime, "leaseTime");
		List<Runnable> lost = new ArrayList<>();
		long token;
		synchronized (this) {
			long now = nowNanos();
			if (type == LockType.EXCLUSIVE) {
				Row row = this.rows.computeIfAbsent(resource, (key) -> new Row());
				Hold previous = row.owner;
				boolean previousLive = previous != null && previous.isLive(now);
				ExclusiveHold other = new ExclusiveHold(resource, ANOTHER_OWNER, ++row.token, false, leaseNanos, 0,
						false, now);
				row.take(other, now);
				if (previous != null && previousLive) {
					lost.addAll(previous.rowLock ? markLost(previous) : renewNowIfRenewed(previous));
				}
				token = other.token;
			}
			else {
				ReadWriteRow row = this.readWriteRows.computeIfAbsent(resource, (key) -> new ReadWriteRow());
				for (ReadWriteHold hold : List.copyOf(row.holders)) {
					if (hold.serverEnd > now && (type == LockType.WRITE || hold.type == LockType.WRITE)) {
						hold.serverEnd = now;
						lost.addAll(renewNowIfRenewed(hold));
					}
				}
				ReadWriteHold other = new ReadWriteHold(resource, ANOTHER_OWNER, ++row.token, type, false, leaseNanos, 0,
						now);
				row.holders.add(other);
				token = other.token;
			}
			notifyAll();
		}
		runAll(lost);
		return token;
	}

	@Override
	public boolean endLeaseIn(String resource, Duration remaining) {
		LockTemplate.validateResource(resource);
		if (remaining == null || remaining.isNegative()) {
			throw new IllegalArgumentException("remaining must be zero or positive, was " + remaining);
		}
		long remainingNanos = remaining.toNanos();
		List<Runnable> lost = new ArrayList<>();
		boolean moved = false;
		synchronized (this) {
			long now = nowNanos();
			Row row = this.rows.get(resource);
			if (row != null && row.owner != null && !row.owner.rowLock && row.owner.isLive(now)) {
				row.owner.serverEnd = plus(now, remainingNanos);
				moved = true;
				if (remainingNanos == 0) {
					lost.addAll(renewNowIfRenewed(row.owner));
				}
			}
			ReadWriteRow readWrite = this.readWriteRows.get(resource);
			if (readWrite != null) {
				for (ReadWriteHold hold : List.copyOf(readWrite.holders)) {
					if (hold.serverEnd > now) {
						hold.serverEnd = plus(now, remainingNanos);
						moved = true;
						if (remainingNanos == 0) {
							lost.addAll(renewNowIfRenewed(hold));
						}
					}
				}
			}
			notifyAll();
		}
		runAll(lost);
		return moved;
	}

	@Override
	public synchronized void stall(String resource, Duration duration) {
		LockTemplate.validateResource(resource);
		long nanos = positive(duration, "duration");
		this.stalls.merge(resource, plus(System.nanoTime(), nanos), (a, b) -> (a - b > 0) ? a : b);
	}

	private static long positive(@Nullable Duration duration, String name) {
		if (duration == null || duration.isNegative() || duration.isZero()) {
			throw new IllegalArgumentException(name + " must be positive, was " + duration);
		}
		if (duration.compareTo(LockOptions.MAX_LEASE_TIME) > 0) {
			throw new IllegalArgumentException(name + " must be at most " + LockOptions.MAX_LEASE_TIME.toDays()
					+ " days, was " + duration);
		}
		return duration.toNanos();
	}

	/** Waits, under the monitor, until a {@link #stall} of the resource has ended. */
	private void awaitStall(String resource) throws InterruptedException {
		Long until = this.stalls.get(resource);
		while (until != null) {
			long remaining = until - System.nanoTime();
			if (remaining <= 0) {
				this.stalls.remove(resource, until);
				return;
			}
			TimeUnit.NANOSECONDS.timedWait(this, remaining);
			until = this.stalls.get(resource);
		}
	}

	// ---- exclusive locks (LEASE, PESSIMISTIC) ----

	/**
	 * Takes the resource's exclusive lock for a new owner, waiting until the request's deadline (a row lock: until
	 * the deadline rounded up to whole seconds from now, as the server's lock wait).
	 */
	AcquireResult acquireExclusive(LockRequest request, boolean rowLock) throws InterruptedException {
		long deadline = rowLock ? roundedUpToSeconds(request) : request.deadlineNanos();
		long minHold = request.minHoldTime().toNanos();
		boolean renew = request.renew() && !rowLock;
		synchronized (this) {
			awaitStall(request.resource());
			Row row = this.rows.computeIfAbsent(request.resource(), (key) -> new Row());
			while (true) {
				long now = nowNanos();
				if (row.isFree(now)) {
					ExclusiveHold hold = new ExclusiveHold(request.resource(), request.holder(), ++row.token, renew,
							request.leaseTime().toNanos(), minHold, rowLock, now);
					row.take(hold, now);
					if (renew) {
						scheduleRenewal(hold);
					}
					return AcquireResult.acquired(hold);
				}
				long remaining = deadline - System.nanoTime();
				if (remaining <= 0) {
					return AcquireResult.busy(row.describeBusy(now));
				}
				TimeUnit.NANOSECONDS.timedWait(this, Math.min(remaining, nanosUntil(row.endsAt())));
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
		return plus(now, ((remaining + second - 1) / second) * second);
	}

	// ---- read/write locks ----

	/** Takes the read or write lock of a resource for a new owner, waiting until the request's deadline. */
	AcquireResult acquireReadWrite(LockRequest request, LockType type) throws InterruptedException {
		if (type != LockType.READ && type != LockType.WRITE) {
			throw new IllegalArgumentException("A read/write lock is READ or WRITE, not " + type);
		}
		String intent = UUID.randomUUID().toString();
		synchronized (this) {
			awaitStall(request.resource());
			ReadWriteRow row = this.readWriteRows.computeIfAbsent(request.resource(), (key) -> new ReadWriteRow());
			try {
				while (true) {
					long now = nowNanos();
					row.prune(now);
					ReadWriteHold blocking = row.strongestLive(now, (type == LockType.WRITE) ? LockType.READ
							: LockType.WRITE, null);
					boolean intentOfAnother = row.intentOwner != null && !row.intentOwner.equals(intent);
					if (blocking == null && !intentOfAnother) {
						ReadWriteHold hold = new ReadWriteHold(request.resource(), request.holder(), ++row.token, type,
								request.renew(), request.leaseTime().toNanos(), request.minHoldTime().toNanos(), now);
						row.holders.add(hold);
						if (hold.renew) {
							scheduleRenewal(hold);
						}
						return AcquireResult.acquired(hold);
					}
					long remaining = request.deadlineNanos() - System.nanoTime();
					if (remaining <= 0) {
						return AcquireResult.busy((blocking != null) ? blocking.holder + " ("
								+ ((blocking.type == LockType.WRITE) ? "write" : "read") + " lock, lease ends in "
								+ TimeUnit.NANOSECONDS.toMillis(Math.max(0, blocking.serverEnd - now)) + " ms)"
								: "a writer waiting for the lock: " + row.intentHolder);
					}
					if (type == LockType.WRITE && row.intentOwner == null) {
						row.intentOwner = intent; // writer preference: new readers stay out while it waits
						row.intentHolder = request.holder();
					}
					long wait = remaining;
					if (blocking != null) {
						wait = Math.min(wait, nanosUntil(blocking.serverEnd));
					}
					TimeUnit.NANOSECONDS.timedWait(this, Math.max(1, wait));
				}
			}
			finally {
				if (intent.equals(row.intentOwner)) {
					row.intentOwner = null;
					row.intentHolder = null;
					notifyAll();
				}
			}
		}
	}

	// ---- OPTIMISTIC ----

	/**
	 * Runs OPTIMISTIC work: reads the resource's version (its fencing token), runs the work, and commits if the
	 * version did not move and nobody holds the lock; else runs it again after a pause, up to {@code maxAttempts}
	 * times and not past the deadline (at least two attempts when allowed). Runs of one resource do not overlap.
	 */
	<T> WorkLockProvider.Outcome<T> executeOptimistic(LockRequest request, Function<HeldLock, T> work, int maxAttempts)
			throws InterruptedException {
		String resource = request.resource();
		if (TransactionSynchronizationManager.isActualTransactionActive()) {
			throw new IllegalStateException("OPTIMISTIC lock on '" + resource + "' was requested inside an active "
					+ "transaction; it must run its work in a transaction of its own, so that a conflict can roll the "
					+ "work back and run it again. Call it outside the transaction, or use LEASE or PESSIMISTIC mode.");
		}
		long pause = FIRST_PAUSE_NANOS;
		for (int attempt = 1;; attempt++) {
			long version;
			synchronized (this) {
				awaitStall(resource);
				while (this.optimisticRuns.contains(resource)) {
					long remaining = request.remainingNanos();
					if (remaining <= 0) {
						return new WorkLockProvider.Outcome<>(null, false,
								"another unit of work on the resource, for the whole wait time");
					}
					TimeUnit.NANOSECONDS.timedWait(this, remaining);
				}
				this.optimisticRuns.add(resource);
				version = this.rows.computeIfAbsent(resource, (key) -> new Row()).token;
			}
			boolean committed = false;
			T value;
			try {
				value = work.apply(new VersionHold(version));
				synchronized (this) {
					Row row = this.rows.computeIfAbsent(resource, (key) -> new Row());
					if (row.token == version && row.isFree(nowNanos())) {
						row.token++;
						row.lastHolder = request.holder();
						row.acquiredAt = nowNanos();
						row.releasedAt = row.acquiredAt;
						committed = true;
					}
				}
			}
			finally {
				synchronized (this) {
					this.optimisticRuns.remove(resource);
					notifyAll();
				}
			}
			if (committed) {
				return new WorkLockProvider.Outcome<>(value, true, null);
			}
			long remaining = request.remainingNanos();
			if (attempt >= maxAttempts || (attempt >= 2 && remaining <= 0)) {
				return new WorkLockProvider.Outcome<>(null, false, "the version of the resource moved during each of "
						+ attempt + " attempts (another owner took the lock meanwhile)");
			}
			TimeUnit.NANOSECONDS.sleep(Math.max(0, Math.min(pause, remaining)));
			pause = Math.min(pause * 2, LONGEST_PAUSE_NANOS);
		}
	}

	// ---- renewal and loss ----

	private static long renewalPeriod(Hold hold) {
		return Math.max(1, hold.leaseNanos / 3);
	}

	private void scheduleRenewal(Hold hold) {
		long period = renewalPeriod(hold);
		hold.renewal = this.background.scheduleWithFixedDelay(() -> {
			List<Runnable> lost;
			synchronized (this) {
				lost = renewNow(hold);
			}
			runAll(lost);
		}, period, period, TimeUnit.NANOSECONDS);
	}

	/**
	 * One renewal, under the monitor: extends the lease by its lease time if it is still this owner's and has not
	 * ended; otherwise marks it lost.
	 * @return the lost-callbacks to run, outside the monitor
	 */
	private List<Runnable> renewNow(Hold hold) {
		if (hold.released || hold.lost) {
			hold.cancelRenewal();
			return List.of();
		}
		long now = nowNanos();
		if (!hold.isCurrent() || hold.serverEnd <= now) {
			return markLost(hold);
		}
		hold.serverEnd = plus(now, hold.leaseNanos);
		hold.localEnd = hold.serverEnd;
		hold.lastRenewal = now;
		return List.of();
	}

	private List<Runnable> renewNowIfRenewed(Hold hold) {
		return hold.renew ? renewNow(hold) : List.of();
	}

	/** Marks a hold lost, under the monitor; a row lock frees the row. */
	private List<Runnable> markLost(Hold hold) {
		if (hold.lost) {
			return List.of();
		}
		hold.lost = true;
		hold.cancelRenewal();
		if (hold instanceof ExclusiveHold exclusive && exclusive.rowLock) {
			Row row = this.rows.get(hold.resource);
			if (row != null && row.owner == hold) {
				row.owner = null;
				row.releasedAt = nowNanos();
			}
		}
		List<Runnable> callbacks = List.copyOf(hold.lostCallbacks);
		hold.lostCallbacks.clear();
		notifyAll();
		return callbacks;
	}

	private void runAll(List<Runnable> callbacks) {
		for (Runnable callback : callbacks) {
			this.background.execute(callback);
		}
	}

	/** The holds that are current owners now, exclusive and read/write; under the monitor. */
	private List<Hold> liveHolds() {
		List<Hold> holds = new ArrayList<>();
		for (Row row : this.rows.values()) {
			if (row.owner != null && !row.owner.released && !row.owner.lost) {
				holds.add(row.owner);
			}
		}
		for (ReadWriteRow row : this.readWriteRows.values()) {
			for (ReadWriteHold hold : row.holders) {
				if (!hold.released && !hold.lost) {
					holds.add(hold);
				}
			}
		}
		return holds;
	}

	// ---- rows and holds ----

	/** The exclusive lock of a resource; guarded by the store's monitor. */
	private static final class Row {

		/** The current (or last) owner; a lease of it may have ended already. */
		@Nullable Hold owner;

		/** The highest fencing token handed out, also the OPTIMISTIC version. */
		long token;

		/** After a release with a minimum hold time: the row stays taken, without owner, until then. */
		long keptUntil = Long.MIN_VALUE;

		@Nullable String lastHolder;

		long acquiredAt;

		/** When the last owner released it or was dropped, on the store's clock. */
		long releasedAt;

		void take(Hold hold, long now) {
			this.owner = hold;
			this.keptUntil = Long.MIN_VALUE;
			this.lastHolder = hold.holder;
			this.acquiredAt = now;
		}

		boolean isFree(long now) {
			Hold current = this.owner;
			return (current == null || !current.isLive(now)) && this.keptUntil <= now;
		}

		/**
		 * When its lease ends or ended, on the store's clock ({@link Long#MAX_VALUE} for a row lock): when a busy row
		 * is free at the earliest, and the {@code expires_at} of {@link #find}.
		 */
		long endsAt() {
			Hold current = this.owner;
			long end = (current != null && !current.released && !current.lost) ? current.serverEnd : this.releasedAt;
			return Math.max(end, this.keptUntil);
		}

		/** The holder as the lock table's busy answer names it: with the rest of its lease, as the real table's. */
		String describeBusy(long now) {
			Hold current = this.owner;
			if (current != null && current.rowLock && !current.lost && !current.released) {
				return "an open transaction holding the row lock (holder: " + current.holder + ")";
			}
			return ((this.lastHolder != null) ? this.lastHolder : "another owner") + " (lease ends in "
					+ TimeUnit.NANOSECONDS.toMillis(Math.max(0, endsAt() - now)) + " ms)";
		}

	}

	/** The read/write lock of a resource; guarded by the store's monitor. */
	private static final class ReadWriteRow {

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

	/**
	 * One owner's hold in the store. Its fields are guarded by the store's monitor; the token, owner token and
	 * settings are final.
	 */
	private abstract class Hold implements HeldLock {

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

		Hold(String resource, String holder, long token, boolean renew, long leaseNanos, long minHoldNanos,
				boolean rowLock, long now) {
			this.resource = resource;
			this.holder = holder;
			this.token = token;
			this.renew = renew;
			this.leaseNanos = leaseNanos;
			this.minHoldNanos = minHoldNanos;
			this.rowLock = rowLock;
			this.acquiredAt = now;
			this.serverEnd = rowLock ? Long.MAX_VALUE : plus(now, leaseNanos);
			this.localEnd = this.serverEnd;
			this.lastRenewal = now;
		}

		/** Whether it is the store's current owner of its lock (not taken over, not dropped). */
		abstract boolean isCurrent();

		/** Whether it holds its lock now: current, not released or lost, and its lease not over. */
		boolean isLive(long now) {
			return isCurrent() && !this.released && !this.lost && this.serverEnd > now;
		}

		void cancelRenewal() {
			ScheduledFuture<?> task = this.renewal;
			if (task != null) {
				task.cancel(false);
				this.renewal = null;
			}
		}

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
			synchronized (InMemoryLockStore.this) {
				// one reading of the clock: the end as a nanoTime value, but never more than the horizon ahead
				long real = System.nanoTime();
				long remaining = this.localEnd - (real - InMemoryLockStore.this.originNanos + InMemoryLockStore.this.offsetNanos);
				return real + Math.min(remaining, HORIZON_NANOS);
			}
		}

		@Override
		public boolean isLost() {
			synchronized (InMemoryLockStore.this) {
				return this.lost;
			}
		}

		@Override
		public void onLost(Runnable callback) {
			synchronized (InMemoryLockStore.this) {
				if (this.lost) {
					runAll(List.of(callback));
				}
				else if (!this.released) {
					this.lostCallbacks.add(callback);
				}
			}
		}

	}

	/** A LEASE or PESSIMISTIC hold of a resource's exclusive lock. */
	private final class ExclusiveHold extends Hold {

		ExclusiveHold(String resource, String holder, long token, boolean renew, long leaseNanos, long minHoldNanos,
				boolean rowLock, long now) {
			super(resource, holder, token, renew, leaseNanos, minHoldNanos, rowLock, now);
		}

		@Override
		boolean isCurrent() {
			Row row = InMemoryLockStore.this.rows.get(this.resource);
			return row != null && row.owner == this;
		}

		@Override
		public boolean extend(Duration leaseTime) {
			synchronized (InMemoryLockStore.this) {
				if (this.renew) {
					throw new IllegalStateException("Lock '" + this.resource + "' is renewed automatically while held; "
							+ "only a lock taken with a lease time of its own can be extended");
				}
				if (this.rowLock) {
					throw new UnsupportedOperationException("A row lock has no lease to extend");
				}
				long now = nowNanos();
				if (!isLive(now)) {
					return false;
				}
				this.serverEnd = plus(now, leaseTime.toNanos());
				this.localEnd = this.serverEnd;
				InMemoryLockStore.this.notifyAll();
				return true;
			}
		}

		@Override
		public boolean release() {
			synchronized (InMemoryLockStore.this) {
				if (this.released) {
					return false;
				}
				long now = nowNanos();
				boolean held = isLive(now);
				this.released = true;
				cancelRenewal();
				this.lostCallbacks.clear();
				if (held) {
					Row row = InMemoryLockStore.this.rows.get(this.resource);
					if (row != null) {
						row.owner = null;
						row.releasedAt = now;
						row.keptUntil = Math.max(now, plus(this.acquiredAt, this.minHoldNanos));
					}
					InMemoryLockStore.this.notifyAll();
				}
				return held;
			}
		}

	}

	/** A read or write hold of a resource's read/write lock. */
	private final class ReadWriteHold extends Hold {

		final LockType type;

		ReadWriteHold(String resource, String holder, long token, LockType type, boolean renew, long leaseNanos,
				long minHoldNanos, long now) {
			super(resource, holder, token, renew, leaseNanos, minHoldNanos, false, now);
			this.type = type;
		}

		@Override
		boolean isCurrent() {
			ReadWriteRow row = InMemoryLockStore.this.readWriteRows.get(this.resource);
			return row != null && row.holders.contains(this);
		}

		@Override
		public boolean release() {
			synchronized (InMemoryLockStore.this) {
				if (this.released) {
					return false;
				}
				long now = nowNanos();
				boolean held = isLive(now);
				this.released = true;
				cancelRenewal();
				this.lostCallbacks.clear();
				if (held) {
					long keep = plus(this.acquiredAt, this.minHoldNanos);
					if (keep > now) {
						this.serverEnd = keep; // the holder row stays for the minimum hold time
					}
					else {
						ReadWriteRow row = InMemoryLockStore.this.readWriteRows.get(this.resource);
						if (row != null) {
							row.holders.remove(this);
						}
					}
					InMemoryLockStore.this.notifyAll();
				}
				return held;
			}
		}

	}

	/** What OPTIMISTIC work sees: the version it started from. */
	private static final class VersionHold implements HeldLock {

		private final long version;

		private final String ownerToken = UUID.randomUUID().toString();

		VersionHold(long version) {
			this.version = version;
		}

		@Override
		public long fencingToken() {
			return this.version;
		}

		@Override
		public String ownerToken() {
			return this.ownerToken;
		}

		@Override
		public long validUntilNanos() {
			return Long.MAX_VALUE;
		}

		@Override
		public boolean release() {
			return true;
		}

	}

	/** {@link #clock()}. */
	private final class StoreClock extends Clock {

		private final ZoneId zone;

		StoreClock(ZoneId zone) {
			this.zone = zone;
		}

		@Override
		public ZoneId getZone() {
			return this.zone;
		}

		@Override
		public Clock withZone(ZoneId zone) {
			return new StoreClock(zone);
		}

		@Override
		public Instant instant() {
			return now();
		}

	}

}
