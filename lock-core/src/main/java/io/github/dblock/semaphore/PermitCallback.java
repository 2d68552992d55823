package io.github.dblock.semaphore;

import org.jspecify.annotations.Nullable;

/**
 * Work to run while holding one permit, for {@link SemaphoreTemplate#execute}.
 * @param <T> the result type
 */
@FunctionalInterface
public interface PermitCallback<T> {

	/**
	 * Runs with the permit held.
	 * @param permit the held permit, for example to read its {@linkplain PermitHandle#fencingToken() fencing token};
	 * do not close it, the template does
	 * @return the result, possibly {@code null}
	 */
	@Nullable
	T doWithPermit(PermitHandle permit);

}
