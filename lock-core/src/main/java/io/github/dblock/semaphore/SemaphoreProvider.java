package io.github.dblock.semaphore;

import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.LockRequest;

/**
 * The database side of distributed semaphores: named pools of permits, each permit a lease held by one owner.
 * Lives with the feature it serves, beside the lock SPI ({@link io.github.dblock.spi}) whose request and
 * result types it speaks. Argument validation is done by {@link SemaphoreTemplate} before a provider is called.
 * <p>
 * Contention is a value ({@link AcquireResult#busy(String)}); faults are exceptions
 * ({@link org.springframework.dao.DataAccessException}). Implementations must be thread-safe.
 */
public interface SemaphoreProvider {

	/**
	 * Takes one permit of the pool named {@link LockRequest#resource()} for a new owner, retrying until the
	 * request's deadline. {@link LockRequest#minHoldTime()} is not used.
	 * @param request the pool, the lease time, whether to renew it, the deadline and the holder description
	 * @return the held permit, or a busy result describing the pool when the deadline passed first
	 * @throws InterruptedException if the thread is interrupted while waiting; nothing is held then
	 * @throws IllegalArgumentException if the pool has no row and no configured permit count
	 * @throws org.springframework.dao.DataAccessException on a database failure that retrying cannot fix
	 */
	AcquireResult acquire(LockRequest request) throws InterruptedException;

	/**
	 * Sets the pool's permit count in the database, creating the pool if needed.
	 * @param name a validated pool name
	 * @param permits at least 1
	 */
	void setPermits(String name, int permits);

	/**
	 * The pool's permit count: the database's, else the configured initial count.
	 * @throws IllegalArgumentException if the pool has neither
	 */
	int getPermits(String name);

	/**
	 * The permits not held by a live holder right now: the permit count minus the live holders, at least zero.
	 * @throws IllegalArgumentException if the pool has neither a row nor a configured permit count
	 */
	int availablePermits(String name);

}
