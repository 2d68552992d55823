package io.github.dblock;

/**
 * Thrown at once, without waiting and without touching the database, when a thread holding the
 * {@linkplain LockType#READ read lock} of a resource asks for its {@linkplain LockType#WRITE write lock}. A read
 * lock cannot be upgraded: two readers upgrading at the same time would each wait for the other forever. Release
 * the read lock first, then take the write lock (and re-check what was read, as another writer may have come in
 * between). It is a programming error, like {@link IllegalStateException}; the read lock stays held.
 */
public class LockUpgradeException extends DistributedLockException {

	public LockUpgradeException(String resource) {
		super(resource, "Lock '" + resource + "': the current thread holds its read lock, and a read lock cannot be "
				+ "upgraded to a write lock (two upgrading readers would wait for each other forever). Release the "
				+ "read lock first, then acquire the write lock", null);
	}

}
