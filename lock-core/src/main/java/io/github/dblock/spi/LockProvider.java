package io.github.dblock.spi;

import io.github.dblock.LockMode;

/**
 * The database side of one {@link LockMode}: takes and gives back a lock for a single owner. Reentrancy,
 * hand-off between threads of the same JVM and argument validation are done by
 * {@link io.github.dblock.LockTemplate} before a provider is called, so a provider sees at most one waiting request
 * per resource at a time from this JVM (for {@link LockMode#PESSIMISTIC}, while another thread of the JVM may hold
 * the resource: see {@link #canWaitInDatabase()}).
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
	 * Whether, right now, a request may wait in the database while another thread of this JVM holds the same
	 * resource in this mode (a PESSIMISTIC holder lets the next local thread wait in the server's row lock queue, on
	 * a connection of its own). When {@code false}, {@link io.github.dblock.LockTemplate} keeps that thread waiting
	 * in the JVM until the holder has released. The default is {@code true}; a provider that caps its connections
	 * answers from the cap. Called on every acquisition of a resource this JVM holds in PESSIMISTIC mode, so it must
	 * not touch the database; it throws nothing. Thread-safe.
	 */
	default boolean canWaitInDatabase() {
		return true;
	}

	/**
	 * Tells other nodes that a waiter of this JVM plans its next attempt within {@code nextAttemptWithin}, between two
	 * attempts of {@link io.github.dblock.LockTemplate#execute} that each ran in a transaction of their own (see
	 * {@link #inTransaction}) and did not get the lock; called outside any transaction. A LEASE holder's JVM that keeps
	 * passing the lock among its own threads then holds them back at its next release until that attempt, as it does
	 * for a waiter that announces itself while it waits. A hint: the default does nothing; an implementation should
	 * bound its statement by {@code nextAttemptWithin} and log a failure rather than throw it (the caller logs one
	 * that is thrown). Thread-safe.
	 * @param resource the resource name
	 * @param nextAttemptWithin when the next attempt is planned, positive
	 */
	default void announceNextAttempt(String resource, java.time.Duration nextAttemptWithin) {
	}

	/**
	 * Whether an attempt of {@link io.github.dblock.LockTemplate#execute} that ran in a transaction of its own (see
	 * {@link #announceNextAttempt}) and failed with this exception before the lock was held may be made again in a
	 * new transaction while the wait time lasts: a provider answers {@code true} for a lost or unobtainable connection,
	 * whose transaction the server has rolled back. The default is {@code false}. Must not touch the database; throws
	 * nothing. Thread-safe.
	 * @param failure what the attempt (its transaction's begin, the acquisition or the rollback) threw
	 */
	default boolean isRetryableAttemptFailure(RuntimeException failure) {
		return false;
	}

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
