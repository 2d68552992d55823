package io.github.dblock.spi;

import io.github.dblock.LockMode;

/**
 * The database side of one {@link LockMode}: takes and gives back a lock for a single owner. Reentrancy,
 * hand-off between threads of the same JVM and argument validation are done by
 * {@link io.github.dblock.LockTemplate} before a provider is called, so a provider sees at most one waiting request
 * per resource at a time from this JVM (for a {@link TransactionalLockProvider}, while another thread of the JVM may
 * hold the resource: see {@link TransactionalLockProvider#canWaitInDatabase()}).
 * <p>
 * This interface is all a provider must implement. What only some providers can do is a capability the engine asks
 * for with {@code instanceof}: {@link TransactionalLockProvider} (locks held by a transaction, waiters queued in the
 * server), {@link ReadWriteLockProvider} (shared and exclusive sides), {@link WorkLockProvider} (work run in the
 * provider's own transaction, no lock to hold) and, on the held lock, {@link TransactionCheckedLock} (checked in the
 * transaction that commits the work). A held lock that can be handed to the next local thread in memory overrides
 * {@link HeldLock#handOff()}.
 * <p>
 * Contention is a value ({@link AcquireResult#busy(String)}); faults are exceptions
 * ({@link org.springframework.dao.DataAccessException}). Implementations must be thread-safe.
 */
public interface LockProvider {

	/** The mode this provider implements. */
	LockMode mode();

	/**
	 * Tries to take the lock for a new owner until the request's deadline.
	 * @param request what to lock, for how long, and until when to keep trying
	 * @return the held lock, or a busy result naming the holder when the deadline passed first
	 * @throws InterruptedException if the thread is interrupted while waiting; nothing is held then
	 * @throws org.springframework.dao.DataAccessException on a database failure that retrying cannot fix
	 */
	AcquireResult acquire(LockRequest request) throws InterruptedException;

}
