package io.github.dblock;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Iterator;
import java.util.Optional;

/**
 * The locks the current thread holds through {@link LockTemplate} or {@link DistributedLock}, for code that needs
 * the {@linkplain LockHandle#fencingToken() fencing token} without having the handle passed to it:
 *
 * <pre class="code">
 * &#64;DistributedLock("invoice:#{#id}")
 * public void settle(long id) {
 *     long token = CurrentLock.get().orElseThrow().fencingToken();
 *     ...
 * }
 * </pre>
 *
 * (Alternatively, declare a parameter of type {@link LockHandle} on the annotated method and pass {@code null}:
 * the interceptor fills it in.) Per thread; a lock handed to another thread is not visible there.
 */
public final class CurrentLock {

	private static final ThreadLocal<Deque<LockHandle>> held = new ThreadLocal<>();

	private CurrentLock() {
	}

	/** The innermost lock the current thread holds, if any. */
	public static Optional<LockHandle> get() {
		Deque<LockHandle> handles = held.get();
		return (handles != null) ? Optional.ofNullable(handles.peek()) : Optional.empty();
	}

	/** The current thread's innermost hold of the given resource, if any. */
	public static Optional<LockHandle> get(String resource) {
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
	static java.util.List<LockHandle> all() {
		Deque<LockHandle> handles = held.get();
		return (handles != null) ? java.util.List.copyOf(handles) : java.util.List.of();
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
