package io.github.dblock.engine;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import io.github.dblock.LockIntrospection.LocalHold;
import io.github.dblock.LockMode;
import io.github.dblock.LockTemplate;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.micrometer.observation.Observation;
import org.jspecify.annotations.Nullable;

/**
 * The JVM-local side of every exclusive lock: one gate per resource in use, so that one thread of this JVM at a time
 * asks the database for it and the holding thread re-enters without a round trip. The gate is fair but for a bounded
 * barge ({@link #BARGE_NANOS}); a LEASE holder keeps it while its lease lasts ({@link LeaseHold#isOver()}), a
 * PESSIMISTIC holder lets it go once the row is its own ({@link PessimisticHold}); a lease passes to the next local
 * thread only in the mode it was taken in ({@link Parked}). Entries are reference-counted and removed with their
 * last user. The design: docs/DESIGN.md, "Hand-off between threads of one JVM". Thread-safe.
 */
final class LocalLocks {

	/**
	 * How long the first waiter of a gate may have waited and still be passed by a thread that finds the gate free
	 * (bounded barging): a holder that releases and asks again at once keeps running instead of handing the gate to
	 * a thread that must first be scheduled, and no waiter is passed once it has waited this long.
	 */
	static final long BARGE_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

	private final ConcurrentHashMap<String, Entry> entries = new ConcurrentHashMap<>();

	/** Returns the resource's entry, creating it if needed, and counts the caller as a user. */
	Entry retain(String resource) {
		return this.entries.compute(resource, (key, entry) -> {
			Entry result = (entry != null) ? entry : new Entry(key);
			result.users++;
			return result;
		});
	}

	/**
	 * Stops counting the caller as a user of the entry; removes the entry when nobody uses it.
	 * @return whether the entry was removed (the caller was its last user)
	 */
	boolean release(Entry entry) {
		boolean[] removed = new boolean[1];
		this.entries.computeIfPresent(entry.resource, (key, current) -> {
			if (current != entry) {
				return current;
			}
			removed[0] = --current.users == 0;
			return removed[0] ? null : current;
		});
		return removed[0];
	}

	/**
	 * The mode in which the given thread holds the resource through its gate or as its PESSIMISTIC holder, or
	 * {@code null} when it holds nothing there; a snapshot, for refusing a request of another mode.
	 */
	@Nullable LockMode modeHeldBy(String resource, Thread thread) {
		Entry entry = this.entries.get(resource);
		return (entry != null) ? entry.modeHeldBy(thread) : null;
	}

	/** Whether threads are queued for the resource's gate. */
	boolean hasQueuedThreads(String resource) {
		Entry entry = this.entries.get(resource);
		return entry != null && entry.hasQueuedThreads();
	}

	/** The number of resources with local users (held or awaited); for tests and diagnostics. */
	int size() {
		return this.entries.size();
	}

	/**
	 * The exclusive locks this JVM holds now, a snapshot for diagnostics.
	 * @param nodeName names the holder when the entry has no description of it
	 */
	List<LocalHold> holds(String nodeName) {
		List<LocalHold> holds = new ArrayList<>();
		for (Entry entry : this.entries.values()) {
			LocalHold hold = entry.snapshot(nodeName);
			if (hold != null) {
				holds.add(hold);
			}
		}
		return holds;
	}

	/** The number of resources this JVM holds now (not counting waiters). */
	int heldCount() {
		int held = 0;
		for (Entry entry : this.entries.values()) {
			if (entry.held != null) {
				held++;
			}
		}
		return held;
	}

	/**
	 * The local state of one resource: its fair gate, its holder (a LEASE {@link LeaseHold} that owns the gate, or a
	 * PESSIMISTIC {@link PessimisticHold} that let it go), a lease handed off for the next local thread, and the bookkeeping
	 * of PESSIMISTIC connections. All of it is reached through methods; those that read or change more than one field
	 * do so under the entry's monitor. Thread-safe.
	 */
	static final class Entry {

		final String resource;

		/**
		 * The thread that owns the gate: a thread asking the database for the resource, or a LEASE holder; guarded by
		 * the entry's monitor.
		 */
		private @Nullable Thread gateOwner;

		/** Threads waiting for the gate, in arrival order; guarded by the entry's monitor. */
		private final ArrayDeque<Ticket> queue = new ArrayDeque<>();

		/** The LEASE hold that owns the gate, {@code null} while none does; written under the entry's monitor. */
		private volatile @Nullable LeaseHold lease;

		/** Threads holding or waiting for the gate; guarded by the map's per-key locking. */
		private int users;

		/**
		 * The database-level lock while it is held: written by the gate holder, or, for a PESSIMISTIC holder, under
		 * the entry's monitor (see {@link #pessimisticHold}).
		 */
		private volatile @Nullable HeldLock held;

		/**
		 * The PESSIMISTIC holder, which holds the lock without holding the gate; {@code null} for a LEASE holder (the
		 * gate's owner) and while nobody holds. The holder fields ({@link #held}, {@link #mode},
		 * {@link #holder}, {@link #holding}) are claimed and cleared under the entry's monitor whenever this is or
		 * was set: the next holder may be granted the row (at the previous holder's commit, or after the previous
		 * holder's connection died) before the previous holder's thread has cleared them, so a holder clears them
		 * only while its own {@link PessimisticHold} is still the one recorded here.
		 */
		private volatile @Nullable PessimisticHold pessimisticHold;

		/**
		 * PESSIMISTIC holds of this entry on connections of the provider's own that have not given their connection
		 * back yet; guarded by the entry's monitor.
		 */
		private int ownConnections;

		/**
		 * How often a PESSIMISTIC holder of this entry has cleared its fields or given its connection back; guarded by
		 * the entry's monitor, which is notified at each. A local thread that waits in the JVM instead of the database
		 * (the provider could not spare a connection) waits for the next one.
		 */
		private long releases;

		/** The mode {@link #held} was taken in; reentrant holds share it. */
		private volatile @Nullable LockMode mode;

		/** Times the hold while the lock is held ({@code distributed.lock.held}). */
		private volatile @Nullable Observation holding;

		/**
		 * A lock its last holder handed off for the next local thread to take the gate (see
		 * {@link HeldLock#handOff()}), with the mode it was taken in; taken by that thread, or released by the entry's
		 * last user if nobody takes it.
		 */
		private volatile @Nullable Parked parked;

		/**
		 * Until when ({@link System#nanoTime()}) local threads let other nodes take the resource before they ask the
		 * database, after a hand-off chain ended with threads still queued; written and read by gate holders.
		 */
		private volatile long courtesyUntilNanos;

		/**
		 * Whether {@link #courtesyUntilNanos} is set and not yet honoured (nanoTime values may be negative, so 0 is no
		 * "unset"); the next gate holder that asks the database honours and clears it.
		 */
		private volatile boolean courtesyPending;

		/** Description of the local holder, for error messages of local waiters. */
		private volatile @Nullable String holder;

		Entry(String resource) {
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

		/** The lock this entry holds now as a diagnostic snapshot, or {@code null} when none is held. */
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
			boolean owned = false;
			synchronized (this) {
				Ticket head = this.queue.peekFirst();
				if (this.gateOwner == null && head != null && ticket.queuedAtNanos - head.queuedAtNanos < BARGE_NANOS) {
					this.gateOwner = ticket.thread; // a free gate whose first waiter has not waited long: barge
					return true;
				}
				this.queue.addLast(ticket);
			}
			try {
				while (true) {
					long wait;
					synchronized (this) {
						long now = System.nanoTime();
						LeaseHold current = this.lease;
						if (this.queue.peekFirst() == ticket) {
							if (this.gateOwner == null) {
								owned = true;
							}
							else if (current != null && current.isOver()) {
								superseded[0] = supersede(current);
								owned = true;
							}
							if (owned) {
								this.queue.pollFirst();
								this.gateOwner = ticket.thread;
								return true;
							}
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
			finally {
				if (!owned) {
					synchronized (this) {
						boolean head = this.queue.peekFirst() == ticket;
						this.queue.remove(ticket);
						if (head) {
							wakeHead(); // the next in line is the head now
						}
					}
				}
			}
		}

		/** Wakes the thread at the head of the gate's queue, if any. Called under the entry's monitor. */
		private void wakeHead() {
			Ticket head = this.queue.peekFirst();
			if (head != null) {
				LockSupport.unpark(head.thread);
			}
		}

		/**
		 * Marks a LEASE hold superseded and, if it is still the entry's holder, clears the holder fields; its hold
		 * observation moves to the hold for the superseding thread to end. Called under the entry's monitor.
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

		/** Takes the lease the previous local holder handed off for the gate's next owner, if any. */
		@Nullable Parked takeParked() {
			Parked handedOff = this.parked;
			this.parked = null;
			return handedOff;
		}

		/**
		 * Hands a lease off to the gate's next owner (see {@link HeldLock#handOff()}).
		 * @param handedOff the successor's lock
		 * @param takenIn the mode the lease was taken in: only a request of that mode may use it
		 */
		void park(HeldLock handedOff, LockMode takenIn) {
			this.parked = new Parked(handedOff, takenIn);
		}

		/**
		 * Takes the time this JVM still holds back for other nodes' waiters, once: in nanoseconds, zero or negative
		 * when there is none.
		 */
		long takeCourtesyNanos() {
			long courtesy = this.courtesyPending ? this.courtesyUntilNanos - System.nanoTime() : 0;
			this.courtesyPending = false;
			return courtesy;
		}

		/** Makes the next gate owner that asks the database hold back for other nodes' waiters for a while. */
		void holdBackFor(long courtesyNanos) {
			this.courtesyUntilNanos = System.nanoTime() + courtesyNanos;
			this.courtesyPending = true;
		}

		/** How often a PESSIMISTIC holder has ended or given its connection back so far. */
		synchronized long releases() {
			return this.releases;
		}

		/**
		 * Whether no local PESSIMISTIC holder will give a connection back to a thread that has seen {@code seen}
		 * releases: nothing ended since, and no holder has a connection of the provider's own.
		 */
		synchronized boolean noConnectionToComeBack(long seen) {
			return this.releases == seen && this.ownConnections == 0;
		}

		/**
		 * Waits until a PESSIMISTIC hold of the entry has ended or given its connection back since {@code seen}.
		 * @return whether one did before the request's deadline
		 */
		synchronized boolean awaitRelease(long seen, LockRequest request) throws InterruptedException {
			while (this.releases == seen) {
				long remaining = request.remainingNanos();
				if (remaining <= 0) {
					return false;
				}
				TimeUnit.NANOSECONDS.timedWait(this, remaining);
			}
			return true;
		}

		/**
		 * Counts the end of a PESSIMISTIC hold on a connection of the provider's own (the connection is back) and wakes
		 * threads waiting for one.
		 */
		synchronized void connectionReturned() {
			this.ownConnections--;
			this.releases++;
			notifyAll();
		}

		/**
		 * Records the current thread as the entry's holder. A PESSIMISTIC previous holder may not have cleared its
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
				this.ownConnections++;
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
			this.releases++;
			notifyAll();
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

	}

	/**
	 * A lock handed off for the next local thread, with the mode it was taken in: the thread that takes it uses it only
	 * for a request of the same mode.
	 * @param lock the successor's lock
	 * @param mode the mode the lock was taken in
	 */
	record Parked(HeldLock lock, LockMode mode) {
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
		 * The {@link System#nanoTime()} at which the thread looks again by itself; guarded by the entry's monitor.
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
