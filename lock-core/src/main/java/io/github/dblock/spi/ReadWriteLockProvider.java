package io.github.dblock.spi;

import io.github.dblock.LockType;

/**
 * A {@link LockProvider} that also offers read/write (shared/exclusive) locks: {@link LockType#READ} holds of a
 * resource coexist with each other, a {@link LockType#WRITE} hold excludes every other hold of it. These locks are
 * separate from the provider's exclusive locks of the same name. As for {@link LockProvider}, reentrancy and the
 * local rules (no upgrade from read to write) are the template's job: every call is a new owner. Thread-safe.
 */
public interface ReadWriteLockProvider extends LockProvider {

	/**
	 * Tries to take the read or write lock of a resource for a new owner until the request's deadline.
	 * @param request what to lock, for how long, and until when to keep trying
	 * @param type {@link LockType#READ} or {@link LockType#WRITE}
	 * @return the held lock, or a busy result naming a holder (or a waiting writer) when the deadline passed first
	 * @throws InterruptedException if the thread is interrupted while waiting; nothing is held then
	 * @throws IllegalArgumentException if {@code type} is {@link LockType#EXCLUSIVE} (use
	 * {@link #acquire(LockRequest)})
	 * @throws org.springframework.dao.DataAccessException on a database failure that retrying cannot fix
	 */
	AcquireResult acquire(LockRequest request, LockType type) throws InterruptedException;

}
