package io.github.dblock.engine;

import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import io.github.dblock.LockIntrospection.LocalHold;
import io.github.dblock.LockMode;
import io.github.dblock.spi.HeldLock;
import io.micrometer.observation.Observation;
import org.jspecify.annotations.Nullable;

/**
 * The JVM-local state of one resource's exclusive lock, one per resource in use ({@link LocalLocks}): its gate, fair
 * but for a bounded barge ({@link #BARGE_NANOS}), and its holder (a LEASE {@link LeaseHold} that owns the gate, or a
 * PESSIMISTIC {@link PessimisticHold} that let it go), with the resource's {@link LeaseHandOff} and
 * {@link PessimisticConnections}. Methods that read or change more than one field do so under its monitor.
 * Thread-safe.
 */
final class LocalLock {

	/**
	 * How long the first waiter of a gate may have waited and still be passed by a thread that finds the gate free
	 * (bounded barging): a holder that releases and asks again at once keeps running instead of handing the gate to
	 * a thread that must first be scheduled, and no waiter is passed once it has waited this long.
	 */
	static final long BARGE_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

	final String resource;

	/** The lease handed off for the gate's next owner, and the courtesy to other nodes' waiters. */
	final LeaseHandOff handOff = new LeaseHandOff();

	/** The connections of this resource's PESSIMISTIC holders. */
	final PessimisticConnections connections = new PessimisticConnections();

	/**
	 * The thread that owns the gate: a thread asking the database for the resource, or a LEASE holder; guarded by
	 * the monitor.
	 */
	private @Nullable Thread gateOwner;

	/** Threads waiting for the gate, in arrival order; guarded by the monitor. */
	private final ArrayDeque<Ticket> queue = new ArrayDeque<>();

	/** The LEASE hold that owns the gate, {@code null} while none does; written under the monitor. */
	private volatile @Nullable LeaseHold lease;

	/** Threads holding or waiting for the gate; guarded by the per-key locking of {@link LocalLocks}' map. */
	int users;

	/**
	 * The database-level lock while it is held: written by the gate holder, or, for a PESSIMISTIC holder, under
	 * the monitor (see {@link #pessimisticHold}).
	 */
	private volatile @Nullable HeldLock held;

	/**
	 * The PESSIMISTIC holder, which holds the lock without holding the gate; {@code null} for a LEASE holder (the
	 * gate's owner) and while nobody holds. The holder fields ({@link #held}, {@link #mode},
	 * {@link #holder}, {@link #holding}) are claimed and cleared under the monitor whenever this is or
	 * was set: the next holder may be granted the row (at the previous holder's commit, or after the previous
	 * holder's connection died) before the previous holder's thread has cleared them, so a holder clears them
	 * only while its own {@link PessimisticHold} is still the one recorded here.
	 */
	private volatile @Nullable PessimisticHold pessimisticHold;

	/** The mode {@link #held} was taken in; reentrant holds share it. */
	private volatile @Nullable LockMode mode;

	/** Times the hold while the lock is held ({@code distributed.lock.held}). */
	private volatile @Nullable Observation holding;

	/** Description of the local holder, for error messages of local waiters. */
	private volatile @Nullable String holder;

	LocalLock(String resource) {
		this.resource = resource;
	}

	/** Whether the current thread owns the gate. */
	synchronized boolean isGateOwner() {
		return this.gateOwner == Thread.currentThread();
	}

	/** Whether threads wait for the gate. */
	synchronized boolean hasQueuedThreads() {
		return !this.queue.isEmpty();
	}

	/**
	 * Whether the thread next in line for the gate asks for the given mode: only then may a holder of that mode
	 * hand its lock off to it.
	 */
	synchronized boolean nextInLineAsks(LockMode requested) {
		Ticket next = this.queue.peekFirst();
		return next != null && next.mode == requested;
	}

	/**
	 * The mode in which the given thread holds this resource: its LEASE hold (not superseded; also one whose
	 * release waits for its transaction to complete) or its PESSIMISTIC hold; {@code null} when it holds neither.
	 */
	@Nullable LockMode modeHeldBy(Thread thread) {
		LeaseHold leaseHold = this.lease;
		if (leaseHold != null && leaseHold.thread == thread && !leaseHold.superseded) {
			return leaseHold.mode;
		}
		PessimisticHold pessimistic = this.pessimisticHold;
		return (pessimistic != null && pessimistic.thread == thread) ? pessimistic.mode : null;
	}

	/** Whether a lock is held (by any local thread) now. */
	boolean isHeld() {
		return this.held != null;
	}

	/** The PESSIMISTIC holder, or {@code null}. */
	@Nullable PessimisticHold pessimisticHold() {
		return this.pessimisticHold;
	}

	/** The holder's description for a local waiter's error message: {@code "… (this JVM)"}. */
	String localHolder() {
		String description = this.holder;
		return ((description != null) ? description : "another thread") + " (this JVM)";
	}

	/** The holder's description for a local waiter that gave up in the gate queue. */
	String gateHolder() {
		String description = this.holder;
		return (description != null) ? description + " (this JVM)" : "another thread of this JVM";
	}

	/** The lock held now as a diagnostic snapshot, or {@code null} when none is held. */
	@Nullable LocalHold snapshot(String nodeName) {
		HeldLock lock = this.held;
		LockMode heldMode = this.mode;
		String description = this.holder;
		if (lock == null || heldMode == null) {
			return null;
		}
		PessimisticHold pessimistic = this.pessimisticHold;
		LeaseHold leaseHold = this.lease;
		int holdCount = (pessimistic != null) ? pessimistic.holds : (leaseHold != null) ? leaseHold.holds : 0;
		return new LocalHold(this.resource, heldMode, holdCount, lock.fencingToken(),
				(description != null) ? description : nodeName);
	}

	/**
	 * For the gate owner that re-enters: its current LEASE hold if that is not over; a hold that is over is
	 * superseded (and returned through {@code superseded}, for the caller to report outside the monitor).
	 * @return the hold to re-enter, or {@code null} when the caller must acquire anew
	 */
	synchronized @Nullable LeaseHold reentrantLease(LeaseHold[] superseded) {
		LeaseHold outer = this.lease;
		if (outer != null && outer.isOver()) {
			superseded[0] = supersede(outer);
			return null;
		}
		return outer;
	}

	/**
	 * Waits, in arrival order (a thread finding the gate free may pass a first waiter that has waited less than
	 * {@link #BARGE_NANOS}), until the current thread owns the gate: when nobody owns it, or when its LEASE holder's
	 * lease is over ({@link LeaseHold#isOver()}; that hold is then superseded and returned through
	 * {@code superseded}, for the caller to report outside the monitor).
	 * @param deadlineNanos the {@link System#nanoTime()} until which to wait
	 * @param superseded receives the hold taken over, if any
	 * @param requested the mode the thread asks for (see {@link #nextInLineAsks})
	 * @return whether the gate is now the current thread's
	 * @throws InterruptedException if interrupted while waiting; the gate is not taken then
	 */
	boolean acquireGate(long deadlineNanos, LeaseHold[] superseded, LockMode requested)
			throws InterruptedException {
		Ticket ticket = new Ticket(requested, Thread.currentThread());
		if (bargeOrQueue(ticket)) {
			return true;
		}
		boolean owned = false;
		try {
			owned = awaitTurn(ticket, deadlineNanos, superseded);
			return owned;
		}
		finally {
			if (!owned) {
				leaveQueue(ticket);
			}
		}
	}

	/** Takes a free gate whose first waiter has not waited long (barging), or queues the ticket. */
	private synchronized boolean bargeOrQueue(Ticket ticket) {
		Ticket head = this.queue.peekFirst();
		if (this.gateOwner == null && head != null && ticket.queuedAtNanos - head.queuedAtNanos < BARGE_NANOS) {
			this.gateOwner = ticket.thread; // a free gate whose first waiter has not waited long: barge
			return true;
		}
		this.queue.addLast(ticket);
		return false;
	}

	/** Waits in the queue until the ticket takes the gate as the head, or the deadline passes. */
	private boolean awaitTurn(Ticket ticket, long deadlineNanos, LeaseHold[] superseded) throws InterruptedException {
		while (true) {
			long wait;
			synchronized (this) {
				long now = System.nanoTime();
				LeaseHold current = this.lease;
				if (this.queue.peekFirst() == ticket && takeGateAsHead(ticket, current, superseded)) {
					return true;
				}
				wait = deadlineNanos - now;
				if (wait <= 0) {
					return false;
				}
				// the head is woken when the gate is let go, when the holder's lease is found lost, and when a
				// holder whose lease ends before the head's wake-up claims the entry (see claim); the end of a
				// lease by the clock wakes nobody, so every waiter looks again then (a renewal moves it on)
				if (current != null) {
					wait = Math.min(wait, current.lock.validUntilNanos() - now + 1_000_000);
				}
				ticket.wakeAtNanos = now + wait;
			}
			LockSupport.parkNanos(this, Math.max(1, wait));
			if (Thread.interrupted()) {
				throw new InterruptedException();
			}
		}
	}

	/**
	 * The head of the queue takes the gate if nobody owns it, or if its LEASE holder's lease is over (superseding
	 * that hold). Called under the monitor.
	 */
	private boolean takeGateAsHead(Ticket ticket, @Nullable LeaseHold current, LeaseHold[] superseded) {
		if (this.gateOwner != null) {
			if (current == null || !current.isOver()) {
				return false;
			}
			superseded[0] = supersede(current);
		}
		this.queue.pollFirst();
		this.gateOwner = ticket.thread;
		return true;
	}

	/** Takes a ticket that did not get the gate out of the queue, waking the next in line if it was the head. */
	private synchronized void leaveQueue(Ticket ticket) {
		boolean head = this.queue.peekFirst() == ticket;
		this.queue.remove(ticket);
		if (head) {
			wakeHead(); // the next in line is the head now
		}
	}

	/** Wakes the thread at the head of the gate's queue, if any. Called under the monitor. */
	private void wakeHead() {
		Ticket head = this.queue.peekFirst();
		if (head != null) {
			LockSupport.unpark(head.thread);
		}
	}

	/**
	 * Marks a LEASE hold superseded and, if it is still the holder, clears the holder fields; its hold observation
	 * moves to the hold for the superseding thread to end. Called under the monitor.
	 */
	private LeaseHold supersede(LeaseHold hold) {
		hold.superseded = true;
		if (this.lease == hold) {
			this.lease = null;
			this.held = null;
			this.holder = null;
			hold.holding = this.holding;
			this.holding = null;
		}
		return hold;
	}

	/** Lets the gate go, if the current thread owns it, and wakes the thread next in line. */
	synchronized void releaseGate() {
		if (this.gateOwner == Thread.currentThread()) {
			this.gateOwner = null;
			wakeHead(); // only the head may take the gate
		}
	}

	/** Wakes the thread next in line for the gate, for example because the holder's lease was found lost. */
	synchronized void wakeWaiters() {
		wakeHead();
	}

	/**
	 * Records the current thread as the holder. A PESSIMISTIC previous holder may not have cleared its
	 * fields yet (we were granted the row at its commit, and its thread clears them after): its hold observation is
	 * returned for the caller to stop, and it no longer clears anything (see {@link #pessimisticHold}).
	 * @return the previous holder's observation to stop, or {@code null}
	 */
	synchronized @Nullable Observation claim(HeldLock lock, LockMode heldMode, String description,
			Observation heldObservation, @Nullable PessimisticHold pessimistic, @Nullable LeaseHold leaseHold) {
		Observation previous = (this.pessimisticHold != null) ? this.holding : null;
		this.lease = leaseHold;
		this.held = lock;
		this.mode = heldMode;
		this.holder = description;
		this.holding = heldObservation;
		this.pessimisticHold = pessimistic;
		if (pessimistic != null && pessimistic.ownConnection) {
			this.connections.connectionTaken();
		}
		Ticket head = this.queue.peekFirst();
		if (leaseHold != null && head != null
				&& head.wakeAtNanos - (lock.validUntilNanos() + 1_000_000) > 0) {
			// the head took its wait before this lease: it must look again when this lease ends
			LockSupport.unpark(head.thread);
		}
		return previous;
	}

	/**
	 * Clears the holder fields if the given PESSIMISTIC acquisition is still recorded as the holder.
	 * @return its hold observation to stop, or {@code null}
	 */
	synchronized @Nullable Observation clearPessimisticHold(PessimisticHold pessimistic) {
		if (this.pessimisticHold != pessimistic) {
			return null; // the next holder has claimed the entry already
		}
		Observation observation = this.holding;
		this.held = null;
		this.holder = null;
		this.holding = null;
		this.pessimisticHold = null;
		this.connections.holdEnded();
		return observation;
	}

	/**
	 * Begins the final release of a LEASE hold: unless it was superseded, no local waiter takes the gate from it
	 * from now on.
	 * @return whether it had been superseded
	 */
	synchronized boolean beginClosing(LeaseHold leaseHold) {
		boolean superseded = leaseHold.superseded;
		if (!superseded && leaseHold.holds == 1) {
			leaseHold.closing = true;
		}
		return superseded;
	}

	/**
	 * Clears the holder fields of the LEASE holder, which owns the gate and is releasing.
	 * @return its hold observation to stop, or {@code null}
	 */
	@Nullable Observation clearLease() {
		Observation observation;
		synchronized (this) {
			this.lease = null;
			this.held = null;
			this.holder = null;
		}
		observation = this.holding;
		this.holding = null;
		return observation;
	}

	/**
	 * A thread's place in a gate's queue and the mode it asks for. Compared by identity: two threads asking for the same
	 * mode hold two places.
	 */
	private static final class Ticket {

		final LockMode mode;

		/** The waiting thread, woken ({@link LockSupport#unpark}) when it is the head and may take the gate. */
		final Thread thread;

		/**
		 * The {@link System#nanoTime()} at which the thread looks again by itself; guarded by the monitor.
		 */
		long wakeAtNanos;

		/** When the thread asked for the gate ({@link System#nanoTime()}). */
		final long queuedAtNanos = System.nanoTime();

		Ticket(LockMode mode, Thread thread) {
			this.mode = mode;
			this.thread = thread;
		}

	}

}
