package io.github.dblock;

import java.time.Duration;

import org.jspecify.annotations.Nullable;

/**
 * Thrown when a lock could not be acquired within its wait time because another owner held it. This is
 * contention, not a failure of the database: database failures surface as
 * {@link org.springframework.dao.DataAccessException}s.
 */
public class LockNotAcquiredException extends DistributedLockException {

	private final Duration waitTime;

	@Nullable
	private final String holder;

	public LockNotAcquiredException(String resource, Duration waitTime, @Nullable String holder) {
		this(resource, waitTime, holder, (Throwable) null);
	}

	/**
	 * The lock could not be acquired within the wait time because the database answered too slowly (or another owner
	 * held it).
	 * @param resource the resource name
	 * @param waitTime the wait time that elapsed
	 * @param holder the holder's description, when known
	 * @param cause the timeout that ended the wait (a statement, a reply or a pooled connection that did not come in
	 * time), or {@code null} when the lock was simply held
	 */
	public LockNotAcquiredException(String resource, Duration waitTime, @Nullable String holder,
			@Nullable Throwable cause) {
		super(resource, "Could not acquire lock '" + resource + "' within " + waitTime + "; "
				+ ((holder != null) ? "held by " + holder : "holder unknown")
				+ ((cause != null) ? " (the database did not answer in time: " + cause.getMessage() + ")" : ""), cause);
		this.waitTime = waitTime;
		this.holder = holder;
	}

	/**
	 * For subclasses that describe what was busy in their own words.
	 * @param resource the resource (or semaphore) name
	 * @param waitTime the wait time that elapsed
	 * @param holder what kept it busy, when known
	 * @param message the complete message
	 */
	protected LockNotAcquiredException(String resource, Duration waitTime, @Nullable String holder, String message) {
		this(resource, waitTime, holder, message, null);
	}

	/**
	 * With a message of its own that describes what was busy, and the timeout that ended the wait.
	 * @param resource the resource (or semaphore) name
	 * @param waitTime the wait time that elapsed
	 * @param holder what kept it busy, when known
	 * @param message the complete message
	 * @param cause the timeout that ended the wait, or {@code null}
	 */
	public LockNotAcquiredException(String resource, Duration waitTime, @Nullable String holder, String message,
			@Nullable Throwable cause) {
		super(resource, message, cause);
		this.waitTime = waitTime;
		this.holder = holder;
	}

	/** The wait time that elapsed. */
	public Duration getWaitTime() {
		return this.waitTime;
	}

	/** The description of the owner that held the lock at the last attempt, when known. */
	@Nullable
	public String getHolder() {
		return this.holder;
	}

}
