package io.github.dblock.testing;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;

import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.LockType;
import io.github.dblock.jdbc.admin.LockTableAdmin;
import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.spi.WorkLockProvider;
import org.jspecify.annotations.Nullable;

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
 * Thread-safe: all state is guarded by one monitor of the store. Renewals and {@code onLost} listeners run on up to
 * two daemon threads of the store, which end after 10 s idle.
 */
public final class InMemoryLockStore implements LockFaults {

	/** How the owner of {@link #takeOver} is described to waiters. */
	static final String ANOTHER_OWNER = StoreHold.ANOTHER_OWNER;

	/** The monitor of all state, with the clock, the stalls and the background threads. */
	private final StoreMonitor monitor = new StoreMonitor();

	private final ExclusiveLocks exclusiveLocks = new ExclusiveLocks(this.monitor);

	private final ReadWriteLocks readWriteLocks = new ReadWriteLocks(this.monitor);

	private final OptimisticRuns optimisticRuns = new OptimisticRuns(this.monitor, this.exclusiveLocks);

	/** Creates an empty store whose clock starts at the current time. */
	public InMemoryLockStore() {
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
		synchronized (this.monitor) {
			this.monitor.advance(duration.toNanos());
			long now = this.monitor.nowNanos();
			for (StoreHold hold : openHolds()) {
				if (hold.isRenewalDue(now)) {
					lost.addAll(hold.renewNow()); // due while the clock jumped: it runs now that the "pause" is over
				}
			}
			this.monitor.signalAll();
		}
		this.monitor.runAll(lost);
	}

	/** The holds that are current owners, neither released nor lost, exclusive and read/write; under the monitor. */
	private List<StoreHold> openHolds() {
		List<StoreHold> holds = new ArrayList<>();
		this.exclusiveLocks.addOpenHolds(holds);
		this.readWriteLocks.addOpenHolds(holds);
		return holds;
	}

	/** The current time on the store's clock: real time plus every advance. */
	public Instant now() {
		synchronized (this.monitor) {
			return this.monitor.instant(this.monitor.nowNanos());
		}
	}

	/**
	 * A {@link Clock} (UTC) that reads this store's clock, for code under test that takes a {@code Clock}: advancing
	 * the store's clock moves it too.
	 */
	public Clock clock() {
		return new StoreClock(ZoneOffset.UTC);
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
	public Optional<LockTableAdmin.LockRow> find(String resource) {
		LockTemplate.validateResource(resource);
		synchronized (this.monitor) {
			return this.exclusiveLocks.find(resource);
		}
	}

	@Override
	public boolean isLocked(String resource) {
		LockTemplate.validateResource(resource);
		synchronized (this.monitor) {
			long now = this.monitor.nowNanos();
			return this.exclusiveLocks.isLocked(resource, now) || this.readWriteLocks.isLocked(resource, now);
		}
	}

	// ---- faults ----

	@Override
	public boolean expire(String resource) {
		LockTemplate.validateResource(resource);
		List<Runnable> lost = new ArrayList<>();
		boolean ended;
		synchronized (this.monitor) {
			long now = this.monitor.nowNanos();
			ended = this.exclusiveLocks.expire(resource, now, lost);
			ended |= this.readWriteLocks.expire(resource, now, lost);
			this.monitor.signalAll();
		}
		this.monitor.runAll(lost);
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
		synchronized (this.monitor) {
			long now = this.monitor.nowNanos();
			token = (type == LockType.EXCLUSIVE) ? this.exclusiveLocks.takeOver(resource, leaseNanos, now, lost)
					: this.readWriteLocks.takeOver(resource, type, leaseNanos, now, lost);
			this.monitor.signalAll();
		}
		this.monitor.runAll(lost);
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
		boolean moved;
		synchronized (this.monitor) {
			long now = this.monitor.nowNanos();
			moved = this.exclusiveLocks.endLeaseIn(resource, remainingNanos, now, lost);
			moved |= this.readWriteLocks.endLeaseIn(resource, remainingNanos, now, lost);
			this.monitor.signalAll();
		}
		this.monitor.runAll(lost);
		return moved;
	}

	@Override
	public void stall(String resource, Duration duration) {
		LockTemplate.validateResource(resource);
		long nanos = positive(duration, "duration");
		synchronized (this.monitor) {
			this.monitor.stall(resource, StoreMonitor.plus(System.nanoTime(), nanos));
		}
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

	// ---- the providers' entry points ----

	/** {@link ExclusiveLocks#acquire}: LEASE ({@code rowLock} false) and PESSIMISTIC ({@code rowLock} true). */
	AcquireResult acquireExclusive(LockRequest request, boolean rowLock) throws InterruptedException {
		return this.exclusiveLocks.acquire(request, rowLock);
	}

	/** {@link ReadWriteLocks#acquire}. */
	AcquireResult acquireReadWrite(LockRequest request, LockType type) throws InterruptedException {
		return this.readWriteLocks.acquire(request, type);
	}

	/** {@link OptimisticRuns#execute}. */
	<T> WorkLockProvider.Outcome<T> executeOptimistic(LockRequest request, Function<HeldLock, T> work, int maxAttempts)
			throws InterruptedException {
		return this.optimisticRuns.execute(request, work, maxAttempts);
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
