package io.github.dblock.spi;

import org.jspecify.annotations.Nullable;

/**
 * A capability of a {@link HeldLock}: at its last release in a JVM where another local thread is queued for the
 * same resource, the engine may pass it on in memory instead of releasing it and taking it again in the database
 * (LEASE; see docs/DESIGN.md, "Hand-off between threads of one JVM"). Implementations must be thread-safe.
 */
public interface HandOffLock extends HeldLock {

	/**
	 * Passes the lock to the next owner in this JVM instead of releasing it, so that a thread queued for the same
	 * resource gets it without a database round trip. The successor gets a fencing token greater than this one's and
	 * smaller than any token another owner can get afterwards; this handle is then finished (do not release it).
	 * Providers bound how long a JVM may keep a lock this way, so that other nodes get their turn.
	 * @return the successor's lock, or {@code null} if this lock cannot be handed off now (release it instead)
	 */
	@Nullable HeldLock handOff();

	/**
	 * How long, in nanoseconds, the threads of this JVM still queued for the resource hold back after this lock went
	 * back to the database instead of being handed off: long enough for a waiter on another node to take it, so that a
	 * JVM with a stream of local waiters cannot starve the other nodes, and zero when no other node is known to wait.
	 * Asked after {@link #release()} returned, since the release may be what learns of such a waiter.
	 */
	long handOffCourtesyNanos();

	/**
	 * Whether this lock, received through {@link #handOff()}, gives what the request asks for (the same kind of
	 * lease), so the request may take it instead of acquiring anew. The engine asks only for a request of the mode the
	 * lock was taken in (so of the provider that took it), and hands a lock off only to a thread that asked for that
	 * mode: a lock is never passed off as another mode's.
	 */
	boolean canServe(LockRequest request);

}
