package io.github.dblock.spi;

import org.jspecify.annotations.Nullable;

/**
 * A lock taken in the database by a {@link LockProvider} for one owner. Only {@link #fencingToken()},
 * {@link #ownerToken()}, {@link #validUntilNanos()} and {@link #release()} must be implemented; the defaults describe a
 * lock that is released where it was taken, never lost unnoticed, extended or handed off in memory. Implementations
 * must be thread-safe.
 */
public interface HeldLock {

	/** The fencing token the database assigned to this acquisition. */
	long fencingToken();

	/** The unique token identifying this acquisition's owner in the lock table. */
	String ownerToken();

	/**
	 * The {@link System#nanoTime()} value until which this JVM may consider the lock held: for a lease, the time
	 * read just before the acquiring statement was sent plus the lease time (so it errs early); for a lock held by a
	 * transaction, {@link Long#MAX_VALUE}.
	 */
	long validUntilNanos();

	/**
	 * Whether the lock ends with the Spring-managed transaction it joined rather than with {@link #release()}: the
	 * template then keeps the lock's JVM-local state until that transaction completes.
	 */
	default boolean isTransactionBound() {
		return false;
	}

	/**
	 * Whether the lock is known to be lost: its lease expired before it could be renewed, another owner took it,
	 * or the database stayed unreachable until the lease must be presumed expired. A lost lock stays lost.
	 */
	default boolean isLost() {
		return false;
	}

	/**
	 * Registers a callback run once, on a background thread, when the lock is found lost while held; it is not
	 * run for a lock released in time. Callbacks must be quick and must not throw.
	 */
	default void onLost(Runnable callback) {
	}

	/**
	 * Sets the lease of a lock taken with an explicit lease time (not renewed) to end {@code leaseTime} after the
	 * statement runs, on the database server's clock, with one owner-checked {@code UPDATE} of {@code expires_at}
	 * that matches only while this owner's lease has not ended. The new end may be earlier than the current one.
	 * @param leaseTime the new lease, counted from now on the server's clock; positive
	 * @return {@code true} if the lease was still this owner's and now ends {@code leaseTime} from now;
	 * {@code false} if it had ended (expired, released or taken over), in which case nothing was changed
	 * @throws UnsupportedOperationException if this lock has no lease that can be set (the default)
	 * @throws IllegalStateException if the lease is renewed automatically
	 * @throws org.springframework.dao.DataAccessException if the database could not be reached
	 */
	default boolean extend(java.time.Duration leaseTime) {
		throw new UnsupportedOperationException("This lock has no lease to extend");
	}

	/**
	 * Gives the lock back. Must be called at most once.
	 * @return {@code true} if the database showed this owner still held the lock and it is now released;
	 * {@code false} if it was no longer held by this owner (lease expired or taken over), in which case nothing
	 * was changed
	 * @throws io.github.dblock.LockLostException if the release failed and the lease is known to have ended by then
	 * (read/write leases and semaphore permits look again after a failed release; the database failure is the cause)
	 * @throws org.springframework.dao.DataAccessException if the database could not be reached and the lease may
	 * still run (it then ends on its own)
	 */
	boolean release();

	// In-memory hand-off (LEASE; see docs/DESIGN.md, "Hand-off between threads of one JVM"): at its last release in
	// a JVM where another local thread is queued for the same resource, the engine may pass the lock on instead of
	// releasing it and taking it again in the database.

	/**
	 * Passes the lock to the next owner in this JVM instead of releasing it, so that a thread queued for the same
	 * resource gets it without a database round trip. The successor gets a fencing token greater than this one's and
	 * smaller than any token another owner can get afterwards; this handle is then finished (do not release it).
	 * Providers bound how long a JVM may keep a lock this way, so that other nodes get their turn.
	 * @return the successor's lock, or {@code null} if this lock cannot be handed off now (release it instead); the
	 * default, for locks that are never handed off
	 */
	default @Nullable HeldLock handOff() {
		return null;
	}

	/**
	 * How long, in nanoseconds, the threads of this JVM still queued for the resource hold back after this lock went
	 * back to the database instead of being handed off: long enough for a waiter on another node to take it, so that a
	 * JVM with a stream of local waiters cannot starve the other nodes, and zero when no other node is known to wait.
	 * Asked after {@link #release()} returned, since the release may be what learns of such a waiter.
	 */
	default long handOffCourtesyNanos() {
		return 0;
	}

	/**
	 * Whether this lock, received through {@link #handOff()}, gives what the request asks for (the same kind of
	 * lease), so the request may take it instead of acquiring anew. The engine asks only for a request of the mode the
	 * lock was taken in (so of the provider that took it), and hands a lock off only to a thread that asked for that
	 * mode: a lock is never passed off as another mode's.
	 */
	default boolean canServe(LockRequest request) {
		return false;
	}

}
