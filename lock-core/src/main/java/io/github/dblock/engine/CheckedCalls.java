package io.github.dblock.engine;

import io.github.dblock.CheckedLockCallback;
import io.github.dblock.LockCallback;
import org.jspecify.annotations.Nullable;

/**
 * Runs a {@link CheckedLockCallback} through {@link LockEngine#execute(LockCall, LockCallback)}: its checked exception
 * crosses the engine in a private carrier and is rethrown as it was.
 */
final class CheckedCalls {

	private CheckedCalls() {
	}

	@Nullable
	@SuppressWarnings("unchecked")
	static <T, E extends Exception> T executeChecked(LockEngine engine, LockCall call, CheckedLockCallback<T, E> action)
			throws E {
		if (action == null) {
			throw new IllegalArgumentException("action must not be null");
		}
		try {
			return engine.execute(call, (lock) -> {
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
