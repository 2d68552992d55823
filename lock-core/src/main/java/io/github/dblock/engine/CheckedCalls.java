package io.github.dblock.engine;

import io.github.dblock.CheckedLockCallback;
import io.github.dblock.LockCallback;
import org.jspecify.annotations.Nullable;

/**
 * Runs a {@link CheckedLockCallback} through an execution of a {@link LockCallback} (the engine's
 * {@link LockEngine#execute(LockCall, LockCallback)}): its checked exception crosses the engine in a private carrier
 * and is rethrown as it was. Stateless.
 */
final class CheckedCalls {

	private CheckedCalls() {
	}

	@Nullable
	@SuppressWarnings("unchecked")
	static <T, E extends Exception> T executeChecked(CheckedLockCallback<T, E> action, Execution<T> execution)
			throws E {
		if (action == null) {
			throw new IllegalArgumentException("action must not be null");
		}
		try {
			return execution.execute((lock) -> {
				try {
					return action.doWithLock(lock);
				}
				catch (RuntimeException ex) {
					throw ex;
				}
				catch (Exception ex) {
					throw new Carrier(ex);
				}
			});
		}
		catch (Carrier carrier) {
			Exception original = carrier.original;
			for (Throwable suppressed : carrier.getSuppressed()) {
				original.addSuppressed(suppressed); // a loss found on release
			}
			throw (E) original;
		}
	}

	/** Runs a callback under a lock, as {@link LockEngine#execute(LockCall, LockCallback)} does. */
	@FunctionalInterface
	interface Execution<T> {

		@Nullable T execute(LockCallback<T> action);

	}

	/** Carries a checked exception through the template; no stack trace of its own. */
	private static final class Carrier extends RuntimeException {

		private static final long serialVersionUID = 1L;

		private final transient Exception original;

		Carrier(Exception cause) {
			super(cause.toString(), cause, true, false);
			this.original = cause;
		}

	}

}
