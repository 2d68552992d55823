package io.github.dblock.engine;

import java.util.List;

import io.github.dblock.LockInterruptedException;
import io.github.dblock.LockIntrospection.LocalHold;
import io.github.dblock.LockLostException;
import io.github.dblock.LockMode;
import io.github.dblock.LockModeConflictException;
import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.micrometer.observation.Observation;
import org.jspecify.annotations.Nullable;

/**
 * The JVM-local engine of exclusive locks, its entry: an acquisition re-enters the thread's own hold
 * ({@link ExclusiveReentry}) or takes the resource's local gate ({@link LocalLock}) and then the lock
 * ({@link DatabaseAcquisition}); its handle's close releases it ({@link ExclusiveRelease}). A caller only ever gets a
 * hold of the mode it asked for ({@link LockModeConflictException} at once otherwise). Thread-safe.
 */
final class ExclusiveHolds {

	private final LocalLocks locals = new LocalLocks();

	private final LockSettings settings;

	private final ExclusiveRelease release;

	private final ExclusiveReentry reentry;

	ExclusiveHolds(LockSettings settings) {
		this.settings = settings;
		this.release = new ExclusiveRelease(this.locals, settings);
		this.reentry = new ExclusiveReentry(settings, this.release);
	}

	/**
	 * Acquires an exclusive lock for the current thread: re-entry, the local gate, then the provider.
	 * @param admission the resource's gate, taken by this thread for this call before its transaction began
	 * ({@link #admit}); {@code null} to check re-entry and take the gate here
	 * @return the handle, or what kept the lock
	 * @throws LockLostException if the thread re-enters a PESSIMISTIC hold that is lost or was taken over
	 * @throws LockModeConflictException if the thread holds the resource in another mode
	 * @throws LockInterruptedException if interrupted while waiting
	 */
	Attempt acquire(LockCall call, @Nullable Admission admission) {
		LocalLock entry = (admission != null) ? admission.enter() : this.locals.retain(call.resource());
		boolean gateHeld = admission != null;
		Attempt attempt = null;
		try {
			long deadline;
			if (admission != null) {
				deadline = admission.deadlineNanos;
			}
			else {
				refuseInsideWork(call);
				ExclusiveHandle reentered = this.reentry.reenterPessimistic(entry, call);
				if (reentered != null) {
					attempt = Attempt.acquired(reentered);
					return attempt;
				}
				deadline = call.deadlineNanos();
				attempt = reenterLeaseOrTakeGate(entry, call, deadline);
				if (attempt != null) {
					return attempt;
				}
				gateHeld = true;
			}
			attempt = obtainAndHold(entry, call, deadline);
			if (attempt.handle() instanceof ExclusiveHandle handle && handle.isPessimistic()) {
				entry.releaseGate();
				gateHeld = false;
			}
			return attempt;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new LockInterruptedException(call.resource(), ex);
		}
		finally {
			if (attempt == null || attempt.handle() == null) {
				if (gateHeld) {
					entry.releaseGate();
				}
				this.locals.leave(entry);
			}
		}
	}

	/**
	 * The gate owner re-enters its LEASE hold; any other thread waits for the gate until the deadline.
	 * @return the re-entered hold, or the refusal when the gate did not come; {@code null} once the thread owns the
	 * gate and acquires anew (its own lease, if it held one, was over: it keeps the gate)
	 */
	private @Nullable Attempt reenterLeaseOrTakeGate(LocalLock entry, LockCall call, long deadline)
			throws InterruptedException {
		if (entry.isGateOwner()) {
			ExclusiveHandle reentered = this.reentry.reenterLease(entry, call);
			return (reentered != null) ? Attempt.acquired(reentered) : null;
		}
		if (!takeGate(entry, call.resource(), deadline, call.mode())) {
			return Attempt.notAcquired(entry.gateHolder());
		}
		return null;
	}

	/** The gate owner gets the lock ({@link DatabaseAcquisition}) and holds it, or reports what kept it. */
	private Attempt obtainAndHold(LocalLock entry, LockCall call, long deadline) throws InterruptedException {
		LockRequest lockRequest = call.toLockRequest(deadline, this.settings.holderDescription());
		AcquireResult result = DatabaseAcquisition.obtain(entry, call, lockRequest);
		HeldLock lock = result.lock();
		if (lock == null) {
			return Attempt.notAcquired(result.holder(), result.cause());
		}
		return Attempt.acquired(hold(entry, call, lockRequest.holder(), lock));
	}

	/**
	 * The first step of an acquisition whose transaction begins only once this JVM lets the call ask the database (a
	 * PESSIMISTIC {@code execute} outside any transaction, each attempt of which is a transaction of its own): the
	 * resource's local gate, taken before the transaction takes a pooled connection. So the threads of this JVM that
	 * wait for the resource wait in the gate's queue holding no connection, and at most the gate's owner (and, once
	 * it holds the row and has let the gate go, the holder) has one; the acquisition inside the transaction
	 * ({@link #acquire(LockCall, Admission)}) then starts from the gate. A thread that already holds the resource (or
	 * owns its gate) takes nothing here: its call re-enters, or is refused, inside the transaction as usual.
	 * @param deadlineNanos the {@link System#nanoTime()} until which to wait for the gate, the call's deadline
	 * @return the admission; not {@link Admission#isAdmitted() admitted} when the thread re-enters, and
	 * {@link Admission#refusedBy() refused} when the gate did not come before the deadline
	 * @throws LockModeConflictException if the thread runs OPTIMISTIC work on the resource
	 * @throws LockInterruptedException if interrupted while waiting
	 */
	Admission admit(LockCall call, long deadlineNanos) {
		refuseInsideWork(call);
		LocalLock entry = this.locals.retain(call.resource());
		boolean admitted = false;
		try {
			boolean holds = entry.isGateOwner() || entry.modeHeldBy(Thread.currentThread()) != null
					|| (ThreadHolds.innermost(call.resource()).orElse(null) instanceof ExclusiveHandle open
							&& open.pessimisticHoldOf(entry) != null);
			if (holds) {
				return Admission.REENTRY;
			}
			if (!takeGate(entry, call.resource(), deadlineNanos, call.mode())) {
				return Admission.refused(entry.gateHolder());
			}
			admitted = true;
			return Admission.admitted(entry, deadlineNanos);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new LockInterruptedException(call.resource(), ex);
		}
		finally {
			if (!admitted) {
				this.locals.leave(entry);
			}
		}
	}

	/**
	 * Gives an admission's gate back when its call did not use it (the transaction could not begin, or the attempt
	 * ended before it acquired); nothing once {@link #acquire(LockCall, Admission)} has taken it over.
	 */
	void giveBack(Admission admission) {
		LocalLock entry = admission.abandon();
		if (entry != null) {
			entry.releaseGate();
			this.locals.leave(entry);
		}
	}

	/**
	 * Refuses an exclusive lock of a resource on which the thread runs OPTIMISTIC work of this engine: taking it would
	 * change the version that work's commit checks, so the work could never commit.
	 * @throws LockModeConflictException if it does
	 */
	private void refuseInsideWork(LockCall call) {
		if (ThreadHolds.runsWork(call.resource(), this)) {
			throw new LockModeConflictException(call.resource(), LockMode.OPTIMISTIC, call.mode());
		}
	}

	/**
	 * Refuses OPTIMISTIC work on a resource the thread holds in another mode through this engine: the work's commit
	 * would find the row held (by the thread itself) until the wait time ran out.
	 * @throws LockModeConflictException if it does
	 */
	void refuseWorkUnderHold(String resource) {
		LockMode held = this.locals.modeHeldBy(resource, Thread.currentThread());
		if (held != null) {
			throw new LockModeConflictException(resource, held, LockMode.OPTIMISTIC);
		}
	}

	/** Waits for the resource's local gate until the deadline, asking for a mode; reports a hold it superseded. */
	private static boolean takeGate(LocalLock entry, String resource, long deadline, LockMode mode)
			throws InterruptedException {
		LeaseHold[] stale = new LeaseHold[1];
		boolean owned = entry.acquireGate(deadline, stale, mode);
		if (stale[0] != null) {
			stale[0].reportSuperseded(resource);
		}
		return owned;
	}

	/** Records the acquired lock as the entry's hold and returns the caller's handle, pushed on {@link ThreadHolds}. */
	private ExclusiveHandle hold(LocalLock entry, LockCall call, String holder, HeldLock lock) {
		Observation holding = this.settings.holding(call.resource(), call.mode(), lock);
		// PESSIMISTIC: the row lock is ours now, so the gate goes to the next local thread, which waits in the
		// server's row lock queue and is granted the row at our commit (no round trip between the two holders)
		PessimisticHold pessimisticHold = (Capabilities.transactional(call.provider()) != null)
				? new PessimisticHold(lock, call.mode()) : null;
		LeaseHold lease = (pessimisticHold == null) ? new LeaseHold(lock, call.mode()) : null;
		Observation previous = entry.claim(lock, call.mode(), holder, holding, pessimisticHold, lease);
		if (previous != null) {
			previous.stop();
		}
		if (lease != null) {
			// a local waiter takes the gate once this lease is found lost, without waiting for its end by the clock
			lock.onLost(entry::wakeWaiters);
		}
		ExclusiveHandle handle = new ExclusiveHandle(this.release, entry, lock, call.mode(), pessimisticHold, lease);
		this.settings.interruptOnLoss(lock);
		if (lease != null) {
			this.settings.validateAtCommit(call.resource(), lock);
		}
		ThreadHolds.push(handle);
		return handle;
	}

	/** The exclusive locks this JVM holds now, a snapshot. */
	List<LocalHold> localHolds() {
		return this.locals.holds(this.settings.nodeName());
	}

	/** The number of resources this JVM holds exclusively now. */
	int heldCount() {
		return this.locals.heldCount();
	}

	/** The number of resources this JVM holds or waits for exclusively. */
	int resourceCount() {
		return this.locals.size();
	}

	/** Whether other threads of this JVM are queued for the resource right now. */
	boolean hasQueuedThreads(String resource) {
		return this.locals.hasQueuedThreads(resource);
	}

}
