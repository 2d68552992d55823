package io.github.dblock;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;

import io.github.dblock.spi.HeldLock;

/**
 * The JVM-local side of every lock: one fair {@link ReentrantLock} per resource that is in use, so that only
 * one thread of this JVM at a time asks the database for a resource (other local waiters queue here instead of
 * polling) and so that re-acquisition by the holding thread needs no database round trip.
 * <p>
 * A LEASE holder keeps the gate while it holds the lock (its queued threads take the lease over in memory). A
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
		return entry != null && entry.gate.hasQueuedThreads();
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

		/** Fair, so that local waiters are served in arrival order. */
		final ReentrantLock gate = new ReentrantLock(true);

		/** Threads holding or waiting for the gate; guarded by the map's per-key locking. */
		int users;

		/**
		 * The database-level lock while it is held: written by the gate holder, or, for a PESSIMISTIC holder, under
		 * the entry's monitor (see {@link #gateless}).
		 */
		volatile HeldLock held;

		/**
		 * The PESSIMISTIC holder, which holds the lock without holding the gate; {@code null} for a LEASE holder (the
		 * gate's owner) and while nobody holds. The holder fields ({@link #held}, {@link #holds}, {@link #mode},
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

		/**
		 * Open handles of the holding thread (its hold count), for a LEASE holder; written only by that thread (a
		 * PESSIMISTIC holder counts in its {@link Gateless}).
		 */
		volatile int holds;

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
