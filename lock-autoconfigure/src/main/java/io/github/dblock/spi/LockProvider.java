package io.github.dblock.spi;

import io.github.dblock.LockMode;

/**
 * The database side of one {@link LockMode}: takes and gives back a lock for a single owner. Reentrancy,
 * hand-off between threads of the same JVM and argument validation are done by
 * {@link io.github.dblock.LockTemplate} before a provider is called, so a provider only ever sees one request
 * per resource at a time from this JVM.
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

	/**
	 * Runs work in a transaction on the lock data source when this mode's locks belong to transactions
	 * ({@link LockMode#PESSIMISTIC}), joining one that is already active; other modes run the work directly.
	 * {@link io.github.dblock.LockTemplate#execute} calls this around acquisition, work and release, so that
	 * the work's writes commit together with the release.
	 * @param work the acquisition, work and release
	 * @return the work's result
	 */
	default <T> T inTransaction(java.util.function.Supplier<T> work) {
		return work.get();
	}

}
