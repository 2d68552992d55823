package io.github.dblock;

/**
 * Thrown when the thread was interrupted while waiting for a lock. The thread's interrupt status is set again
 * before this is thrown, and the lock is not held.
 */
public class LockInterruptedException extends DistributedLockException {

	public LockInterruptedException(String resource, InterruptedException cause) {
		super(resource, "Interrupted while waiting for lock '" + resource + "'", cause);
	}

}
