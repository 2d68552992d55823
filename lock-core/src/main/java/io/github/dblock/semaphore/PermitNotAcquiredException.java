package io.github.dblock.semaphore;

import java.time.Duration;

import io.github.dblock.LockNotAcquiredException;
import org.jspecify.annotations.Nullable;

/**
 * Thrown when every permit of a distributed semaphore stayed held for the whole wait time. A
 * {@link LockNotAcquiredException}, so that code handling busy locks handles full semaphores too;
 * {@link #getResource()} is the semaphore's name.
 */
public class PermitNotAcquiredException extends LockNotAcquiredException {

	/**
	 * @param name the semaphore's name
	 * @param waitTime the wait time that elapsed
	 * @param state what the last attempt found (permits and live holders), when known
	 */
	public PermitNotAcquiredException(String name, Duration waitTime, @Nullable String state) {
		this(name, waitTime, state, null);
	}

	/**
	 * @param name the semaphore's name
	 * @param waitTime the wait time that elapsed
	 * @param state what the last attempt found (permits and live holders), when known
	 * @param cause the timeout that ended the wait when the database was reached but did not answer in time, or
	 * {@code null} when every permit was simply held
	 */
	public PermitNotAcquiredException(String name, Duration waitTime, @Nullable String state,
			@Nullable Throwable cause) {
		super(name, waitTime, state, "Could not acquire a permit of semaphore '" + name + "' within " + waitTime + "; "
				+ ((state != null) ? state : "state unknown")
				+ ((cause != null) ? " (the database did not answer in time: " + cause.getMessage() + ")" : ""), cause);
	}

}
