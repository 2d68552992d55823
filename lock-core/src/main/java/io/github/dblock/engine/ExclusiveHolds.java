package io.github.dblock.engine;

import java.util.List;
import java.util.concurrent.TimeUnit;

import io.github.dblock.LockInterruptedException;
import io.github.dblock.LockIntrospection.LocalHold;
import io.github.dblock.LockLimitExceededException;
import io.github.dblock.LockLostException;
import io.github.dblock.LockMode;
import io.github.dblock.LockModeConflictException;
import io.github.dblock.LockTemplate;
import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.HandOffLock;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.spi.TransactionalLockProvider;
import io.micrometer.observation.Observation;
import org.jspecify.annotations.Nullable;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The JVM-local engine of exclusive locks: per-thread reentrancy, the local gate of each resource
 * ({@link LocalLocks}), the in-memory hand-off of a LEASE to the next local thread, the PESSIMISTIC hand-over through
 * the server's row lock queue, and the release; the {@link io.github.dblock.spi.LockProvider} of the call does the
 * database side. A caller only ever gets a hold of the mode it asked for ({@link LockModeConflictException} at once
 * otherwise). The design: docs/DESIGN.md, "Hand-off between threads of one JVM" and "PESSIMISTIC". Thread-safe.
 */
final class ExclusiveHolds {

	private static final org.apache.commons.logging.Log logger = org.apache.commons.logging.LogFactory
		.getLog(LockTemplate.class);

	private final LocalLocks locals = new LocalLocks();

	private final LockSettings settings;

	ExclusiveHolds(LockSettings settings) {
		this.settings = settings;
	}

	LockSettings settings() {
		return this.settings;
	}

	/**
	 * Acquires an exclusive lock for the current thread: re-entry, the local gate, then the provider.
	 * @return the handle, or what kept the lock
	 * @throws LockLostException if the thread re-enters a PESSIMISTIC hold that is lost or was taken over
	 * @throws LockModeConflictException if the thread holds the resource in another mode
	 * @throws LockInterruptedException if interrupted while waiting
	 */
	Attempt acquire(LockCall call) {
		return acquire(call, null);
	}

	/**
	 * Acquires an exclusive lock for the current thread, as {@link #acquire(LockCall)}.
	 * @param admission the resource's gate, taken by this thread for this call before its transaction began
	 * ({@link #admit}); {@code null} to check re-entry and take the gate here
	 */
	Attempt acquire(LockCall call, @Nullable Admission admission) {
		LocalLocks.Entry entry = (admission != null) ? admission.enter() : this.locals.retain(call.resource());
		boolean gateHeld = admission != null;
		boolean acquired = false;
		try {
			long deadline;
			if (admission != null) {
				deadline = admission.deadlineNanos;
			}
			else {
				refuseInsideWork(call);
				ExclusiveHandle reentered = reenterPessimistic(entry, call);
				if (reentered != null) {
					acquired = true;
					return Attempt.acquired(reentered);
				}
				deadline = call.deadlineNanos();
				if (entry.isGateOwner()) {
					reentered = reenterLease(entry, call);
					if (reentered != null) {
						acquired = true;
						return Attempt.acquired(reentered);
					}
					gateHeld = true; // this thread's own lease was over: the call acquires anew, keeping the gate
				}
				else {
					gateHeld = takeGate(entry, call.resource(), deadline, call.mode());
					if (!gateHeld) {
						return Attempt.notAcquired(entry.gateHolder());
					}
				}
			}
			LockRequest lockRequest = call.toLockRequest(deadline, this.settings.holderDescription());
			AcquireResult result = obtain(entry, call, lockRequest);
			HeldLock lock = result.lock();
			if (lock == null) {
				return Attempt.notAcquired(result.holder(), result.cause());
			}
			ExclusiveHandle handle = hold(entry, call, lockRequest.holder(), lock);
			acquired = true;
			if (handle.isPessimistic()) {
				entry.releaseGate();
				gateHeld = false;
			}
			return Attempt.acquired(handle);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new LockInterruptedException(call.resource(), ex);
		}
		finally {
			if (!acquired) {
				if (gateHeld) {
					entry.releaseGate();
				}
				leave(entry);
			}
		}
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
		LocalLocks.Entry entry = this.locals.retain(call.resource());
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
			return new Admission(entry, deadlineNanos);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new LockInterruptedException(call.resource(), ex);
		}
		finally {
			if (!admitted) {
				leave(entry);
			}
		}
	}

	/**
	 * Gives an admission's gate back when its call did not use it (the transaction could not begin, or the attempt
	 * ended before it acquired); nothing once {@link #acquire(LockCall, Admission)} has taken it over.
	 */
	void giveBack(Admission admission) {
		LocalLocks.Entry entry = admission.abandon();
		if (entry != null) {
			entry.releaseGate();
			leave(entry);
		}
	}

	/**
	 * A thread's place at the head of a resource's local queue, taken before the transaction of its acquisition
	 * begins ({@link #admit}). Used by the thread that took it, once.
	 */
	static final class Admission {

		/** The thread holds the resource, or owns its gate, already: the call re-enters inside its transaction. */
		static final Admission REENTRY = new Admission(null, 0);

		/** The gate, until the acquisition takes it over or it is given back. */
		private LocalLocks.@Nullable Entry entry;

		final long deadlineNanos;

		private final @Nullable String refusedBy;

		private Admission(LocalLocks.@Nullable Entry entry, long deadlineNanos) {
			this(entry, deadlineNanos, null);
		}

		private Admission(LocalLocks.@Nullable Entry entry, long deadlineNanos, @Nullable String refusedBy) {
			this.entry = entry;
			this.deadlineNanos = deadlineNanos;
			this.refusedBy = refusedBy;
		}

		static Admission refused(String holder) {
			return new Admission(null, 0, holder);
		}

		/** Whether the call has the gate and acquires from it. */
		boolean isAdmitted() {
			return this.entry != null;
		}

		/** Who kept the gate until the deadline, or {@code null} unless the admission was refused. */
		@Nullable String refusedBy() {
			return this.refusedBy;
		}

		/** The gate's entry, taken over by the acquisition. */
		LocalLocks.Entry enter() {
			LocalLocks.Entry admitted = this.entry;
			if (admitted == null) {
				throw new IllegalStateException("not admitted, or entered already");
			}
			this.entry = null;
			return admitted;
		}

		/** The gate's entry if the acquisition never took it over, once. */
		LocalLocks.@Nullable Entry abandon() {
			LocalLocks.Entry unused = this.entry;
			if (unused != null) {
				this.entry = null;
			}
			return unused;
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

	/**
	 * A PESSIMISTIC holder re-enters its own acquisition (never a later holder's), in the mode it holds.
	 * @return the new handle, or {@code null} when the thread holds no PESSIMISTIC lock of the resource
	 * @throws LockModeConflictException if the thread holds the PESSIMISTIC lock and the call asks for another mode
	 */
	private @Nullable ExclusiveHandle reenterPessimistic(LocalLocks.Entry entry, LockCall call) {
		String resource = call.resource();
		PessimisticHold own = entry.pessimisticHold();
		PessimisticHold mine = (ThreadHolds.innermost(resource).orElse(null) instanceof ExclusiveHandle open)
				? open.pessimisticHoldOf(entry) : null;
		if (mine != null && mine != own) {
			// this thread still holds the resource, but its row was taken over since (its connection died and the
			// next local thread was granted the row): re-entering would run more work without exclusion
			HeldLock superseded = mine.lock;
			throw new LockLostException(resource, superseded.fencingToken(), "Lock '" + resource
					+ "' (fencing token " + superseded.fencingToken() + ") was taken over after its connection "
					+ "failed; it cannot be re-entered");
		}
		if (own == null || own.thread != Thread.currentThread()) {
			return null;
		}
		if (own.mode != call.mode()) {
			throw new LockModeConflictException(resource, own.mode, call.mode());
		}
		if (own.lock.isLost()) {
			throw new LockLostException(resource, own.lock.fencingToken(), "Lock '" + resource
					+ "' (fencing token " + own.lock.fencingToken() + ") is already lost; it cannot be re-entered");
		}
		own.holds++;
		ExclusiveHandle handle = new ExclusiveHandle(this, entry, own.lock, own.mode, own, null);
		ThreadHolds.push(handle);
		return handle;
	}

	/**
	 * The gate owner re-enters its LEASE hold while the lease lasts, in the mode it holds; once the lease is over (by
	 * this JVM's clock, or found lost) re-entering would run more work without exclusion, so the outer hold counts as
	 * lost and the call acquires anew, keeping the gate.
	 * @return the new handle, or {@code null} when the caller must acquire anew
	 * @throws LockModeConflictException if the hold's lease lasts and the call asks for another mode
	 */
	private @Nullable ExclusiveHandle reenterLease(LocalLocks.Entry entry, LockCall call) {
		String resource = call.resource();
		LeaseHold[] stale = new LeaseHold[1];
		LeaseHold outer = entry.reentrantLease(stale);
		if (stale[0] != null) {
			superseded(resource, stale[0]);
		}
		if (outer == null) {
			return null;
		}
		if (outer.mode != call.mode()) {
			throw new LockModeConflictException(resource, outer.mode, call.mode());
		}
		outer.holds++;
		ExclusiveHandle handle = new ExclusiveHandle(this, entry, outer.lock, outer.mode, null, outer);
		this.settings.validateAtCommit(resource, outer.lock);
		ThreadHolds.push(handle);
		return handle;
	}

	/** Waits for the resource's local gate until the deadline, asking for a mode; reports a hold it superseded. */
	private static boolean takeGate(LocalLocks.Entry entry, String resource, long deadline, LockMode mode)
			throws InterruptedException {
		LeaseHold[] stale = new LeaseHold[1];
		boolean owned = entry.acquireGate(deadline, stale, mode);
		if (stale[0] != null) {
			superseded(resource, stale[0]);
		}
		return owned;
	}

	/**
	 * The gate owner gets the lock: the lease the previous local holder handed off if it was taken in the mode the
	 * call asks for and suits the request (no round trip), else from the database, after holding back for other
	 * nodes' waiters if a hand-off chain asked for it. A lease of another mode is never passed off as this mode's
	 * hold: a PESSIMISTIC caller handed a LEASE would hold no row lock until its commit.
	 */
	private AcquireResult obtain(LocalLocks.Entry entry, LockCall call, LockRequest lockRequest)
			throws InterruptedException {
		LocalLocks.Parked parked = entry.takeParked();
		if (parked != null) {
			HeldLock handedOff = parked.lock();
			if (parked.mode() == call.mode() && handedOff instanceof HandOffLock lease && !handedOff.isLost()
					&& lease.canServe(lockRequest)) {
				return AcquireResult.acquired(handedOff); // handed off by the previous local holder: no round trip
			}
			releaseQuietly(call.resource(), handedOff);
		}
		long courtesy = entry.takeCourtesyNanos();
		if (courtesy > 0) {
			// this JVM just kept the lock for a whole hand-off budget: give other nodes' waiters their turn
			TimeUnit.NANOSECONDS.sleep(Math.min(courtesy, lockRequest.remainingNanos()));
		}
		return askDatabase(entry, call, lockRequest);
	}

	/** Records the acquired lock as the entry's hold and returns the caller's handle, pushed on {@link ThreadHolds}. */
	private ExclusiveHandle hold(LocalLocks.Entry entry, LockCall call, String holder, HeldLock lock) {
		Observation holding = this.settings.holding(call.resource(), call.mode(), lock);
		// PESSIMISTIC: the row lock is ours now, so the gate goes to the next local thread, which waits in the
		// server's row lock queue and is granted the row at our commit (no round trip between the two holders)
		PessimisticHold pessimisticHold = (call.provider() instanceof TransactionalLockProvider)
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
		ExclusiveHandle handle = new ExclusiveHandle(this, entry, lock, call.mode(), pessimisticHold, lease);
		this.settings.interruptOnLoss(lock);
		if (lease != null) {
			this.settings.validateAtCommit(call.resource(), lock);
		}
		ThreadHolds.push(handle);
		return handle;
	}

	/**
	 * Asks the provider for the lock. A PESSIMISTIC holder of this JVM lets the next local thread wait in the
	 * database, on a connection of its own, while the provider can spare one
	 * ({@link TransactionalLockProvider#canWaitInDatabase()}); otherwise, and when the provider refuses for its
	 * cap ({@link LockLimitExceededException}) while a local holder of the resource still has a connection to give
	 * back, that thread waits in the JVM for the local holder, as every local waiter did before, rather than fail.
	 */
	private static AcquireResult askDatabase(LocalLocks.Entry entry, LockCall call, LockRequest lockRequest)
			throws InterruptedException {
		while (true) {
			long seen = entry.releases();
			if (entry.pessimisticHold() != null && call.provider() instanceof TransactionalLockProvider transactional
					&& !transactional.canWaitInDatabase()) {
				if (!entry.awaitRelease(seen, lockRequest)) {
					return AcquireResult.busy(entry.localHolder());
				}
				continue;
			}
			try {
				return call.provider().acquire(lockRequest);
			}
			catch (LockLimitExceededException ex) {
				if (entry.noConnectionToComeBack(seen)) {
					throw ex; // no local holder of this resource will give a connection back
				}
				if (!entry.awaitRelease(seen, lockRequest)) {
					return AcquireResult.busy(entry.localHolder());
				}
			}
		}
	}

	/**
	 * Called by {@link ExclusiveHandle#close()} on the acquiring thread.
	 * @param pessimisticHold the PESSIMISTIC acquisition the handle belongs to, {@code null} for a LEASE hold
	 * @param lease the LEASE acquisition the handle belongs to, {@code null} for a PESSIMISTIC hold
	 * @throws LockLostException if the lock was no longer held at release
	 */
	void release(LocalLocks.Entry entry, HeldLock lock, @Nullable PessimisticHold pessimisticHold,
			@Nullable LeaseHold lease) {
		if (pessimisticHold != null) {
			releasePessimisticHold(entry, pessimisticHold);
			return;
		}
		if (lease == null) {
			throw new IllegalStateException("a LEASE handle has its hold");
		}
		if (lease.holds == 1 && deferRelease(entry, lock, lease)) {
			return;
		}
		boolean superseded = entry.beginClosing(lease);
		if (--lease.holds > 0) {
			leave(entry);
			return;
		}
		if (superseded) {
			releaseSuperseded(entry, lock);
			return;
		}
		Observation holding = entry.clearLease();
		if (holding != null) {
			holding.stop();
		}
		boolean queued = entry.hasQueuedThreads();
		if (queued && entry.nextInLineAsks(lease.mode)) {
			HeldLock successor = (lock instanceof HandOffLock handOff) ? handOff.handOff() : null;
			if (successor != null) {
				// a local thread of the same mode waits: pass the lock on in memory instead of releasing and re-taking it
				// in the database (a thread of another mode takes its own lock from the database)
				entry.park(successor, lease.mode);
				entry.releaseGate();
				leave(entry);
				return;
			}
		}
		releaseLease(entry, lock, queued);
	}

	/** Releases a LEASE in the database and lets the gate go; the holder fields are cleared already. */
	private void releaseLease(LocalLocks.Entry entry, HeldLock lock, boolean queued) {
		boolean released;
		try {
			released = lock.release();
			long courtesy = (queued && lock instanceof HandOffLock handOff) ? handOff.handOffCourtesyNanos() : 0;
			if (courtesy > 0) {
				// local threads still wait, and so does another node (as the release learned): they hold back for it
				entry.holdBackFor(courtesy);
			}
		}
		finally {
			entry.releaseGate();
			leave(entry);
		}
		if (!released) {
			throw new LockLostException(entry.resource, lock.fencingToken(), "Lock '" + entry.resource
					+ "' (fencing token " + lock.fencingToken() + ") was no longer held at release (its lease had "
					+ "expired, or its connection failed) and another owner may have taken it");
		}
	}

	/**
	 * Releases a hold whose lease was over while another hold has the gate now: only this hold's own lease (an
	 * owner-checked statement, which changes nothing once the lease has ended), touching nothing of the entry's.
	 */
	private void releaseSuperseded(LocalLocks.Entry entry, HeldLock lock) {
		boolean released;
		try {
			released = lock.release();
		}
		finally {
			leave(entry);
		}
		if (!released) {
			throw new LockLostException(entry.resource, lock.fencingToken(), "Lock '" + entry.resource
					+ "' (fencing token " + lock.fencingToken() + ") was no longer held at release (its lease had "
					+ "ended before it was closed) and another owner may have taken it");
		}
	}

	/**
	 * Defers the final release of a LEASE hold whose commit-time validation is pending in the current transaction
	 * until that transaction completes: released now, the lock could pass to another owner before the commit, and the
	 * validation would then roll back the transaction. Meanwhile the hold keeps the gate with no open handle (its
	 * thread may re-enter); once the transaction has completed, the hold is released as usual unless it was re-entered
	 * and is still open, and a loss found then is logged (the commit, if any, was validated under the row lock).
	 * @return whether the release was deferred (the hold count is then zero)
	 */
	private boolean deferRelease(LocalLocks.Entry entry, HeldLock lock, LeaseHold lease) {
		CommitCheck check = CommitCheck.pending(lock);
		if (check == null || lease.superseded) {
			return false;
		}
		lease.holds = 0;
		if (check.isDeferred()) {
			// re-entered and closed again in the same transaction: the release deferred at the first close does it;
			// this close only stops counting as a user of the entry
			leave(entry);
			return true;
		}
		check.deferUntilCompletion(() -> {
			if (lease.holds > 0) {
				return; // re-entered in the transaction and still open: its last close() releases
			}
			lease.holds = 1;
			try {
				release(entry, lock, null, lease);
			}
			catch (LockLostException ex) {
				// the commit, if any, was checked under the row lock; only the lease's end was found late
				logger.warn(ex.getMessage() + " (released after its transaction completed)");
			}
			catch (RuntimeException ex) {
				logger.warn("Could not release lock '" + entry.resource + "' after its transaction completed", ex);
			}
		});
		return true;
	}

	/**
	 * Releases a hold of a PESSIMISTIC holder, which holds no gate. The holder fields are cleared before the
	 * database lock is released (the next holder may be granted the row at the commit); a transaction-bound lock is
	 * released by its transaction, after which the fields are cleared unless the next holder claimed them first.
	 */
	private void releasePessimisticHold(LocalLocks.Entry entry, PessimisticHold pessimisticHold) {
		HeldLock lock = pessimisticHold.lock;
		if (--pessimisticHold.holds > 0) {
			leave(entry);
			return;
		}
		if (lock.isTransactionBound() && TransactionSynchronizationManager.isSynchronizationActive()) {
			// the row lock ends with the transaction; until then the thread may re-enter (the fields stay)
			afterTransaction(() -> {
				if (pessimisticHold.holds == 0) {
					stop(entry.clearPessimisticHold(pessimisticHold));
				}
				leave(entry);
			});
			return;
		}
		stop(entry.clearPessimisticHold(pessimisticHold));
		boolean released;
		try {
			released = lock.release();
		}
		finally {
			if (pessimisticHold.ownConnection) {
				entry.connectionReturned();
			}
			leave(entry);
		}
		if (!released) {
			throw new LockLostException(entry.resource, lock.fencingToken(), "Lock '" + entry.resource
					+ "' (fencing token " + lock.fencingToken() + ") was no longer held at release (its connection "
					+ "failed) and another owner may have taken it");
		}
	}

	private static void stop(@Nullable Observation observation) {
		if (observation != null) {
			observation.stop();
		}
	}

	/**
	 * Stops counting the caller as a user of the entry; the last user releases a handed-off lock nobody took (its
	 * intended successor gave up waiting).
	 */
	private void leave(LocalLocks.Entry entry) {
		if (this.locals.release(entry)) {
			LocalLocks.Parked parked = entry.takeParked();
			if (parked != null) {
				releaseQuietly(entry.resource, parked.lock());
			}
		}
	}

	private static void releaseQuietly(String resource, HeldLock lock) {
		try {
			lock.release();
		}
		catch (RuntimeException ex) {
			logger.warn("Could not release the lock '" + resource + "' handed off to a thread that no longer wanted it; "
					+ "it ends with its lease", ex);
		}
	}

	/**
	 * Ends the hold observation of a LEASE hold that was superseded because its lease was over, with a {@code lost}
	 * event, and says so in the log: the holder had not closed it in time.
	 */
	private static void superseded(String resource, LeaseHold stale) {
		Observation holding = stale.holding;
		stale.holding = null;
		if (holding != null) {
			holding.event(LockSettings.LOST);
			holding.stop();
		}
		logger.warn("The lease of lock '" + resource + "' (fencing token " + stale.lock.fencingToken() + ", thread "
				+ stale.thread.getName() + ") ended before it was closed; the next local owner acquires anew, and the "
				+ "stale hold's close() will throw LockLostException");
	}

	/** Runs the action when the current (synchronized) transaction has completed, committed or rolled back. */
	private static void afterTransaction(Runnable action) {
		TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
			@Override
			public void afterCompletion(int status) {
				action.run();
			}
		});
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
