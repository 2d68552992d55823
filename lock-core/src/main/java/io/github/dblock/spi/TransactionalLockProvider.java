package io.github.dblock.spi;

import org.jspecify.annotations.Nullable;

/**
 * A capability of a {@link LockProvider} whose lock is held by an open database transaction and whose waiters queue
 * in the server's own lock queue ({@link io.github.dblock.LockMode#PESSIMISTIC}): the engine runs
 * {@code execute} in the provider's transaction, makes each attempt outside a transaction a transaction of its own,
 * and lets the holder's JVM-local gate go once the row is held, so that the next local thread waits in the server.
 * Implementations must be thread-safe.
 */
public interface TransactionalLockProvider extends LockProvider {

	/**
	 * Whether, right now, a request may wait in the database while another thread of this JVM holds the same
	 * resource in this mode (a PESSIMISTIC holder lets the next local thread wait in the server's row lock queue, on
	 * a connection of its own). When {@code false}, {@link io.github.dblock.LockTemplate} keeps that thread waiting
	 * in the JVM until the holder has released. A provider that caps its connections answers from the cap. Called on every acquisition of a resource this JVM holds in PESSIMISTIC mode, so it must
	 * not touch the database; it throws nothing. Thread-safe.
	 */
	boolean canWaitInDatabase();

	/**
	 * Tells other nodes that a waiter of this JVM plans its next attempt within {@code nextAttemptWithin}, between two
	 * attempts of {@link io.github.dblock.LockTemplate#execute} that each ran in a transaction of their own (see
	 * {@link #inTransaction}) and did not get the lock; called outside any transaction. A LEASE holder's JVM that keeps
	 * passing the lock among its own threads then holds them back at its next release until that attempt, as it does
	 * for a waiter that announces itself while it waits. A hint: an implementation should
	 * bound its statement by {@code nextAttemptWithin} and log a failure rather than throw it (the caller logs one
	 * that is thrown). Thread-safe.
	 * @param resource the resource name
	 * @param nextAttemptWithin when the next attempt is planned, positive
	 */
	void announceNextAttempt(String resource, java.time.Duration nextAttemptWithin);

	/**
	 * Whether an attempt of {@link io.github.dblock.LockTemplate#execute} that ran in a transaction of its own (see
	 * {@link #announceNextAttempt}) and failed with this exception before the lock was held may be made again in a
	 * new transaction while the wait time lasts: a provider answers {@code true} for a lost or unobtainable connection,
	 * whose transaction the server has rolled back. Must not touch the database; throws
	 * nothing. Thread-safe.
	 * @param failure what the attempt (its transaction's begin, the acquisition or the rollback) threw
	 */
	boolean isRetryableAttemptFailure(RuntimeException failure);

	/**
	 * Whether a failure that {@link #isRetryableAttemptFailure} accepted, and that was still going on when the wait
	 * time of {@link io.github.dblock.LockTemplate#execute} ran out, means that the database could not be reached at
	 * all: the engine then throws it. Otherwise (a pool with no free connection in time, an answer that did not come,
	 * a connection that broke) the engine reports the lock not acquired, with a
	 * {@link io.github.dblock.LockNotAcquiredException} that names the lock, its mode and the failure as its cause.
	 * Must not touch the database; throws nothing. Thread-safe. By default {@code true}: every such failure is thrown.
	 * @param failure what the last attempt threw
	 */
	default boolean isUnreachableFailure(RuntimeException failure) {
		return true;
	}

	/**
	 * Makes ready, outside any transaction, what an acquisition inside the transaction {@link #inTransaction} begins
	 * would otherwise do on a second connection while that transaction holds the first (the JDBC provider makes sure
	 * the resource's lock row exists, creating it if needed). The engine calls it in
	 * {@link io.github.dblock.LockTemplate#execute} outside a transaction, for each attempt, once the attempt has the
	 * resource's JVM-local gate and right before it begins the attempt's transaction, so that an acquisition never holds
	 * one pooled connection while it waits for another. Thread-safe. By default nothing is done.
	 * @param request the acquisition about to be made in the transaction
	 * @return {@code null} when the acquisition may go ahead, else a description of what keeps the lock from being
	 * taken now (the attempt then counts as not acquired)
	 * @throws InterruptedException if interrupted while waiting
	 * @throws RuntimeException a failure of the database, treated like one of the acquisition
	 * ({@link #isRetryableAttemptFailure})
	 */
	default @Nullable String prepareOutsideTransaction(LockRequest request) throws InterruptedException {
		return null;
	}

	/**
	 * Runs work in a transaction on the lock data source, joining one that is already active (a provider that is not
	 * transactional has the engine run the work directly).
	 * {@link io.github.dblock.LockTemplate#execute} calls this around acquisition, work and release, so that
	 * the work's writes commit together with the release. A new transaction's wait for a pooled connection ends
	 * within the acquisition's own bound, whatever the pool's timeout.
	 * @param request the acquisition the work makes first; its deadline bounds the wait for a connection
	 * @param work the acquisition, work and release
	 * @return the work's result
	 */
	<T> T inTransaction(LockRequest request, java.util.function.Supplier<T> work);

}
