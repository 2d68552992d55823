package io.github.dblock.engine;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;

import io.github.dblock.LockHandle;

/**
 * The handles the current thread holds through the engine, innermost first: what
 * {@link io.github.dblock.CurrentLock} reads and what commit-time validation registers when a transaction begins.
 * Per thread; thread-safe.
 */
public final class ThreadHolds {

	private static final ThreadLocal<Deque<LockHandle>> held = new ThreadLocal<>();

	private ThreadHolds() {
	}

	/** The innermost lock the current thread holds, if any. */
	public static Optional<LockHandle> innermost() {
		Deque<LockHandle> handles = held.get();
		return (handles != null) ? Optional.ofNullable(handles.peek()) : Optional.empty();
	}

	/** The current thread's innermost hold of the given resource, if any. */
	public static Optional<LockHandle> innermost(String resource) {
		Deque<LockHandle> handles = held.get();
		if (handles != null) {
			for (LockHandle handle : handles) {
				if (handle.resource().equals(resource)) {
					return Optional.of(handle);
				}
			}
		}
		return Optional.empty();
	}

	/**
	 * Registers commit-time validation of the current thread's LEASE holds (exclusive and WRITE) in the transaction
	 * that has just begun on it, also of a hold whose lease has already ended by this JVM's clock (unchecked, its
	 * transaction could commit). No SQL runs.
	 */
	public static void validateInNewTransaction() {
		for (LockHandle handle : all()) {
			if (handle instanceof CommitValidatedHold hold) {
				hold.validateInTransaction(); // LEASE exclusive and LEASE WRITE holds only
			}
		}
	}

	/** Whether the current thread runs OPTIMISTIC work of the given engine on the resource (no copy is made). */
	static boolean runsWork(String resource, Object engine) {
		Deque<LockHandle> handles = held.get();
		if (handles != null) {
			for (LockHandle handle : handles) {
				if (handle instanceof WorkLockHandle work && work.engine == engine && work.resource().equals(resource)) {
					return true;
				}
			}
		}
		return false;
	}

	/** The current thread's holds, innermost first; a copy. */
	static List<LockHandle> all() {
		Deque<LockHandle> handles = held.get();
		return (handles != null) ? List.copyOf(handles) : List.of();
	}

	static void push(LockHandle handle) {
		Deque<LockHandle> handles = held.get();
		if (handles == null) {
			handles = new ArrayDeque<>(4);
			held.set(handles);
		}
		handles.push(handle);
	}

	static void pop(LockHandle handle) {
		Deque<LockHandle> handles = held.get();
		if (handles == null) {
			return;
		}
		for (Iterator<LockHandle> it = handles.iterator(); it.hasNext();) {
			if (it.next() == handle) {
				it.remove();
				break;
			}
		}
		if (handles.isEmpty()) {
			held.remove();
		}
	}

}
