package io.github.dblock;

import java.util.ArrayDeque;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import io.github.dblock.spi.HeldLock;

/**
 * The JVM-local side of every lock: one fair gate per resource that is in use, so that only one thread of this JVM
 * at a time asks the database for a resource (other local waiters queue here instead of polling) and so that
 * re-acquisition by the holding thread needs no database round trip.
 * <p>
 * A LEASE holder keeps the gate while it holds the lock (its queued threads take the lease over in memory), but only
 * while its lease lasts: once the lease has ended by this JVM's clock or was found lost ({@link LeaseHold#isOver()}),
 * the first queued thread takes the gate from it (the hold is {@linkplain LeaseHold#superseded superseded}) and asks
 * the database like any other owner, so a hung, dead or leaked holder never keeps its JVM's other threads waiting
 * for longer than its lease. A
 * PESSIMISTIC holder lets the gate go as soon as the database granted it the row lock and is recorded as
 * {@link Entry#gateless} instead: the next local thread then waits in the server's row lock queue, on a
 * connection of its own, and is granted the row at the holder's commit, without a round trip between the two
 * holders (see {@code LockTemplate}). At most one thread per resource and JVM waits in the database either way.
 * <p>
 * Entries are reference-counted and removed when the last user is gone, so no state is retained per released
 * resource. Thread-safe.
 */
final class LocalLocks {

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

	/** Whether threads are queued for the resource's gate. */
	boolean hasQueuedThreads(String resource) {
		Entry entry = this.entries.get(resource);
		return entry != null && entry.hasQueuedThreads();
	}

	/** The number of resources with local users (held or awaited); for tests and diagnostics. */
	int size() {
		return this.entries.size();
	}

	/** The entries this JVM holds now, a snapshot. */
	java.util.List<Entry> heldEntries() {
		java.util.List<Entry> held = new java.util.ArrayList<>();
		for (Entry entry : this.entries.values()) {
			if (entry.held != null) {
				held.add(entry);
			}
		}
		return held;
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

	static final class Entry {

		final String resource;

		/**
		 * The thread that owns the gate: a thread asking the database for the resource, or a LEASE holder; guarded by
		 * the entry's monitor.
		 */
		@org.jspecify.annotations.Nullable
		private Thread gateOwner;

		/** Threads waiting for the gate, in arrival order (fair); guarded by the entry's monitor. */
		private final ArrayDeque<Object> queue = new ArrayDeque<>();

		/** The LEASE hold that owns the gate, {@code null} while none does; written under the entry's monitor. */
		@org.jspecify.annotations.Nullable
		volatile LeaseHold lease;

		/** Threads holding or waiting for the gate; guarded by the map's per-key locking. */
		int users;

		/**
		 * The database-level lock while it is held: written by the gate holder, or, for a PESSIMISTIC holder, under
		 * the entry's monitor (see {@link #gateless}).
		 */
		volatile HeldLock held;

		/**
		 * The PESSIMISTIC holder, which holds the lock without holding the gate; {@code null} for a LEASE holder (the
		 * gate's owner) and while nobody holds. The holder fields ({@link #held}, {@link #mode},
		 * {@link #holder}, {@link #holding}) are claimed and cleared under the entry's monitor whenever this is or
		 * was set: the next holder may be granted the row (at the previous holder's commit, or after the previous
		 * holder's connection died) before the previous holder's thread has cleared them, so a holder clears them
		 * only while its own {@link Gateless} is still the one recorded here.
		 */
		volatile Gateless gateless;

		/**
		 * PESSIMISTIC holds of this entry on connections of the provider's own that have not given their connection
		 * back yet; guarded by the entry's monitor.
		 */
		int ownConnections;

		/**
		 * How often a PESSIMISTIC holder of this entry has cleared its fields or given its connection back; guarded by
		 * the entry's monitor, which is notified at each. A local thread that waits in the JVM instead of the database
		 * (the provider could not spare a connection) waits for the next one.
		 */
		long releases;

		/** The mode {@link #held} was taken in; reentrant holds share it. */
		volatile LockMode mode;

		/** Times the hold while the lock is held ({@code distributed.lock.held}). */
		volatile io.micrometer.observation.Observation holding;

		/**
		 * A lock its last holder handed off for the next local thread to take the gate (see
		 * {@link HeldLock#handOff()}); taken by that thread, or released by the entry's last user if nobody takes it.
		 */
		volatile HeldLock parked;

		/**
		 * Until when ({@link System#nanoTime()}) local threads let other nodes take the resource before they ask the
		 * database, after a hand-off chain ended with threads still queued; written and read by gate holders.
		 */
		volatile long courtesyUntilNanos;

		/**
		 * Whether {@link #courtesyUntilNanos} is set and not yet honoured (nanoTime values may be negative, so 0 is no
		 * "unset"); the next gate holder that asks the database honours and clears it.
		 */
		volatile boolean courtesyPending;

		/** Description of the local holder, for error messages of local waiters. */
		volatile String holder;

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
		 * Waits, in arrival order, until the current thread owns the gate: when nobody owns it, or when its LEASE holder's
		 * lease is over ({@link LeaseHold#isOver()}; that hold is then superseded and returned through
		 * {@code superseded}, for the caller to report outside the monitor).
		 * @param deadlineNanos the {@link System#nanoTime()} until which to wait
		 * @param superseded receives the hold taken over, if any
		 * @return whether the gate is now the current thread's
		 * @throws InterruptedException if interrupted while waiting; the gate is not taken then
		 */
		boolean acquireGate(long deadlineNanos, LeaseHold[] superseded) throws InterruptedException {
			Object ticket = new Object();
			synchronized (this) {
				this.queue.addLast(ticket);
				boolean owned = false;
				try {
					while (true) {
						long wait = deadlineNanos - System.nanoTime();
						if (this.queue.peekFirst() == ticket) {
							LeaseHold holder = this.lease;
							if (this.gateOwner == null) {
								owned = true;
							}
							else if (holder != null && holder.isOver()) {
								superseded[0] = supersede(holder);
								owned = true;
							}
							else if (holder != null) {
								// wake up when its lease ends (a renewal moves that on; a loss notifies at once)
								wait = Math.min(wait, holder.lock.validUntilNanos() - System.nanoTime() + 1_000_000);
							}
							if (owned) {
								this.gateOwner = Thread.currentThread();
								return true;
							}
						}
						if (deadlineNanos - System.nanoTime() <= 0) {
							return false;
						}
						TimeUnit.NANOSECONDS.timedWait(this, Math.max(1, wait));
					}
				}
				finally {
					this.queue.remove(ticket);
					if (!owned) {
						notifyAll(); // the next in line may be the head now
					}
				}
			}
		}

		/**
		 * Marks a LEASE hold whose lease is over as superseded and clears it as the entry's holder, keeping the gate
		 * with its thread (that thread re-enters; it acquires anew). Must be called under the entry's monitor.
		 * @return the hold
		 */
		LeaseHold supersede(LeaseHold hold) {
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

		/** Gives the gate back: the next queued thread takes it. */
		synchronized void releaseGate() {
			if (this.gateOwner == Thread.currentThread()) {
				this.gateOwner = null;
				notifyAll();
			}
		}

		/** Wakes the threads waiting for the gate, for example because the holder's lease was found lost. */
		synchronized void wakeWaiters() {
			notifyAll();
		}

	}

	/**
	 * One LEASE acquisition held with the gate: its lock, its thread and its hold count (the acquisition and its
	 * re-entries), shared by the handles of that acquisition, so that the handles of a hold that was superseded never
	 * touch a later holder's state.
	 */
	static final class LeaseHold {

		final HeldLock lock;

		final Thread thread = Thread.currentThread();

		/** Open handles; written only by {@link #thread}. */
		volatile int holds = 1;

		/**
		 * Set when its lease was over and another local thread (or its own, re-entering) took the gate from it; its
		 * handles then release only their own lease and report it lost. Written under the entry's monitor.
		 */
		volatile boolean superseded;

		/** Set under the entry's monitor when its thread begins the final release: it is not superseded after that. */
		volatile boolean closing;

		/** Its hold observation once superseded, for the superseding thread to end with a {@code lost} event. */
		volatile io.micrometer.observation.@org.jspecify.annotations.Nullable Observation holding;

		LeaseHold(HeldLock lock) {
			this.lock = lock;
		}

		/**
		 * Whether its lease is over by this JVM's clock ({@link HeldLock#validUntilNanos()}, which errs early) or known
		 * lost, while its thread has not begun to release it.
		 */
		boolean isOver() {
			return !this.closing && (this.lock.isLost() || System.nanoTime() - this.lock.validUntilNanos() >= 0);
		}

	}

	/**
	 * One PESSIMISTIC acquisition held without the gate: its lock, its thread and its hold count (the acquisition
	 * and its re-entries), shared by the handles of that acquisition, so that its releases never touch a later
	 * holder's state.
	 */
	static final class Gateless {

		final HeldLock lock;

		final Thread thread = Thread.currentThread();

		/** Whether the lock pins a connection of the provider's own (not the caller's transaction). */
		final boolean ownConnection;

		/** Open handles; written only by {@link #thread}. */
		volatile int holds = 1;

		Gateless(HeldLock lock) {
			this.lock = lock;
			this.ownConnection = !lock.isTransactionBound();
		}

	}

}
