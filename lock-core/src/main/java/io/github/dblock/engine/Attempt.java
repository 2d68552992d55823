package io.github.dblock.engine;

import io.github.dblock.LockHandle;
import org.jspecify.annotations.Nullable;

/**
 * The outcome of one acquisition by the engine: the handle, or what kept the lock (the holder when known, the cause
 * when the database did not answer in time).
 * @param handle the held lock's handle; {@code null} when not acquired
 * @param holder the holder that kept it, when not acquired and known
 * @param cause the timeout that ended the wait, when the database did not answer in time
 */
public record Attempt(@Nullable LockHandle handle, @Nullable String holder, @Nullable Throwable cause) {

	static Attempt acquired(LockHandle handle) {
		return new Attempt(handle, null, null);
	}

	static Attempt notAcquired(@Nullable String holder) {
		return new Attempt(null, holder, null);
	}

	static Attempt notAcquired(@Nullable String holder, @Nullable Throwable cause) {
		return new Attempt(null, holder, cause);
	}

}
