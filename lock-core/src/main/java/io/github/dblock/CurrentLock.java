package io.github.dblock;

import java.util.Optional;

import io.github.dblock.engine.ThreadHolds;

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

	private CurrentLock() {
	}

	/** The innermost lock the current thread holds, if any. */
	public static Optional<LockHandle> get() {
		return ThreadHolds.innermost();
	}

	/** The current thread's innermost hold of the given resource, if any. */
	public static Optional<LockHandle> get(String resource) {
		return ThreadHolds.innermost(resource);
	}

}
