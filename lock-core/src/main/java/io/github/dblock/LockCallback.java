package io.github.dblock;

import org.jspecify.annotations.Nullable;

/**
 * Work to run while holding a distributed lock, for {@link LockTemplate#execute(String, LockCallback)}.
 * @param <T> the result type
 */
@FunctionalInterface
public interface LockCallback<T> {

	/**
	 * Runs with the lock held.
	 * @param lock the held lock, for example to read its {@linkplain LockHandle#fencingToken() fencing token};
	 * do not close it, the template does
	 * @return the result, possibly {@code null}
	 */
	@Nullable
	T doWithLock(LockHandle lock);

}
