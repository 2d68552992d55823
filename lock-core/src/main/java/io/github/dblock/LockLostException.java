package io.github.dblock;

import org.jspecify.annotations.Nullable;

/**
 * Thrown when a lock turns out not to be held any more by the owner that took it, typically because its lease
 * expired before release (the holder ran longer than its lease time) and possibly another owner took it.
 * Mutual exclusion was not guaranteed for some part of the critical section; data written with the
 * {@linkplain #getFencingToken() fencing token} through a fenced write is still safe.
 */
public class LockLostException extends DistributedLockException {

	private final long fencingToken;

	public LockLostException(String resource, long fencingToken, String message) {
		this(resource, fencingToken, message, null);
	}

	public LockLostException(String resource, long fencingToken, String message, @Nullable Throwable cause) {
		super(resource, message, cause);
		this.fencingToken = fencingToken;
	}

	/** The fencing token of the acquisition that was lost. */
	public long getFencingToken() {
		return this.fencingToken;
	}

}
