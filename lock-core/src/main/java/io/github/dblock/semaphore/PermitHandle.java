package io.github.dblock.semaphore;

import java.util.function.Consumer;

/**
 * One held permit of a distributed semaphore, returned by {@link SemaphoreTemplate#acquire(String)}: a lease on the
 * database server's clock with a fencing token. Close it to give the permit back. Unlike a lock's handle it may be
 * closed by any thread (a permit belongs to no thread, as with {@link java.util.concurrent.Semaphore}); closing it
 * again does nothing. Thread-safe.
 */
public interface PermitHandle extends AutoCloseable {

	/** The semaphore's name. */
	String name();

	/**
	 * The fencing token of this acquisition: strictly increasing over all acquisitions of the semaphore by any node.
	 * Pass it to the data you protect, which rejects writes with a token lower than one it has seen.
	 */
	long fencingToken();

	/**
	 * Whether the permit is still held as far as this node knows: not closed, not found lost by a renewal, and its
	 * lease not over on this JVM's clock (which never runs ahead of the server's for a lease taken here).
	 */
	boolean isHeld();

	/**
	 * Registers a listener that runs once, on a renewal thread, when a renewal finds the permit's lease expired;
	 * runs at once if the permit is already known lost. Not run on a normal close.
	 * @param listener receives this handle; must not block for long
	 */
	void onLost(Consumer<? super PermitHandle> listener);

	/**
	 * Gives the permit back with an owner-checked delete; a second call does nothing.
	 * @throws io.github.dblock.LockLostException if the permit's lease had expired (its row is gone or expired);
	 * nothing changed. Also when the delete failed and the permit's row is then found gone or expired, its lease
	 * having ended before the release began: the failure is the exception's cause
	 * @throws org.springframework.dao.DataAccessException if the delete failed while the permit's row still runs
	 * (it then ends with its lease) or the row could not be read; a delete that failed after the lease was let go in
	 * time, and whose row is gone or expired, counts as released
	 */
	@Override
	void close();

}
