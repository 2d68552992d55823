package io.github.dblock;

import org.jspecify.annotations.Nullable;

/**
 * Work to run while holding a distributed lock that may throw a checked exception, for
 * {@link LockTemplate#executeChecked(String, LockOptions, CheckedLockCallback)}: the exception reaches the caller
 * as it was thrown, not wrapped.
 * @param <T> the result type
 * @param <E> the checked exception the work may throw
 */
@FunctionalInterface
public interface CheckedLockCallback<T, E extends Exception> {

	/**
	 * Runs with the lock held.
	 * @param lock the held lock; do not close it, the template does
	 * @return the result, possibly {@code null}
	 * @throws E as the work decides; the lock is released and the exception rethrown unchanged
	 */
	@Nullable
	T doWithLock(LockHandle lock) throws E;

}
