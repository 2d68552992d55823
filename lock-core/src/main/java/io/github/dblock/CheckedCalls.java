package io.github.dblock;

import org.jspecify.annotations.Nullable;

/**
 * Runs a {@link CheckedLockCallback} through {@link LockTemplate#execute(String, LockOptions, LockCallback)}: its
 * checked exception crosses the template in a private carrier and is rethrown as it was.
 */
final class CheckedCalls {

	private CheckedCalls() {
	}

	@Nullable
	@SuppressWarnings("unchecked")
	static <T, E extends Exception> T executeChecked(LockTemplate template, String resource, LockOptions options,
			CheckedLockCallback<T, E> action) throws E {
		if (action == null) {
			throw new IllegalArgumentException("action must not be null");
		}
		try {
			return template.execute(resource, options, (lock) -> {
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
