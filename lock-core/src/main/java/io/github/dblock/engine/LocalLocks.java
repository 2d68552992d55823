package io.github.dblock.engine;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

import io.github.dblock.LockIntrospection.LocalHold;
import io.github.dblock.LockMode;
import org.jspecify.annotations.Nullable;

/**
 * The JVM-local side of every exclusive lock: one {@link LocalLock} per resource in use, so that one thread of this
 * JVM at a time asks the database for it and the holding thread re-enters without a round trip. Entries are
 * reference-counted and removed with their last user. Thread-safe.
 */
final class LocalLocks {

	private final ConcurrentHashMap<String, LocalLock> entries = new ConcurrentHashMap<>();

	/** Returns the resource's entry, creating it if needed, and counts the caller as a user. */
	LocalLock retain(String resource) {
		return this.entries.compute(resource, (key, entry) -> {
			LocalLock result = (entry != null) ? entry : new LocalLock(key);
			result.users++;
			return result;
		});
	}

	/**
	 * Stops counting the caller as a user of the entry; removes the entry when nobody uses it.
	 * @return whether the entry was removed (the caller was its last user)
	 */
	private boolean release(LocalLock entry) {
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
	 * Stops counting the caller as a user of the entry; the last user releases a handed-off lock nobody took (its
	 * intended successor gave up waiting).
	 */
	void leave(LocalLock entry) {
		if (release(entry)) {
			LeaseHandOff.Parked parked = entry.handOff.takeParked();
			if (parked != null) {
				parked.releaseQuietly(entry.resource);
			}
		}
	}

	/**
	 * The mode in which the given thread holds the resource through its gate or as its PESSIMISTIC holder, or
	 * {@code null} when it holds nothing there; a snapshot, for refusing a request of another mode.
	 */
	@Nullable LockMode modeHeldBy(String resource, Thread thread) {
		LocalLock entry = this.entries.get(resource);
		return (entry != null) ? entry.modeHeldBy(thread) : null;
	}

	/** Whether threads are queued for the resource's gate. */
	boolean hasQueuedThreads(String resource) {
		LocalLock entry = this.entries.get(resource);
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
		for (LocalLock entry : this.entries.values()) {
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
		for (LocalLock entry : this.entries.values()) {
			if (entry.isHeld()) {
				held++;
			}
		}
		return held;
	}

}
