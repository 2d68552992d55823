package io.github.dblock;

import java.time.Duration;

/**
 * One hold of a distributed lock, returned by {@link LockTemplate#acquire(String)} and passed to
 * {@link LockCallback}s. Close it (try-with-resources) to release the hold.
 * <p>
 * Locks are reentrant per thread: while a thread holds a resource, acquiring it again returns another handle
 * for the same database-level lock (same {@linkplain #fencingToken() fencing token}) without a database round
 * trip, and the lock is released in the database when the last handle is closed.
 * <p>
 * Thread-safety: the accessors may be called from any thread; {@link #close()} must be called by the thread
 * that acquired the handle, as with {@link java.util.concurrent.locks.ReentrantLock#unlock()}.
 */
public interface LockHandle extends AutoCloseable {

	/** The locked resource name, exactly as given. */
	String resource();

	/** The mode the lock was taken in. */
	LockMode mode();

	/**
	 * The kind of lock this hold is: {@link LockType#EXCLUSIVE}, or the {@link LockType#READ read} or
	 * {@link LockType#WRITE write} side of the resource's read/write lock. A read hold taken by a thread that holds
	 * the write lock is {@code READ} and shares the write lock's fencing token.
	 */
	default LockType type() {
		return LockType.EXCLUSIVE;
	}

	/**
	 * The fencing token of this acquisition: a number that strictly increases with every acquisition of this
	 * resource by any owner, in every mode, assigned by the database in the statement that granted the lock. Pass
	 * it to the resource you protect and have it reject writes carrying a token lower than one it has already
	 * seen (see "Fencing tokens" in docs/reference/safety.md); that keeps data safe even when a holder outlives its
	 * lease. In {@link LockMode#OPTIMISTIC} mode the work sees the token it started from (the version it read);
	 * its own compare-and-set is the guard there.
	 */
	long fencingToken();

	/**
	 * Whether this handle still holds the lock, as far as this JVM can tell without asking the database:
	 * {@code false} once the handle is closed, and, in {@link LockMode#LEASE} mode, {@code false} once the lease
	 * time has elapsed since the acquiring statement was sent (measured with {@link System#nanoTime()}, so it errs
	 * towards {@code false}; the server may consider the lease valid a little longer, never shorter).
	 */
	boolean isHeld();

	/**
	 * Registers a listener that is told, once and on a background thread, if the lock is found lost while held: in
	 * {@link LockMode#LEASE} mode with renewal, when a renewal finds the lease expired or taken over, or the
	 * database unreachable until the lease must be presumed expired. {@link #isHeld()} is already {@code false}
	 * when it runs. It is not called for a lock released in time, nor in the other modes. Listeners must be quick
	 * and must not throw.
	 * @param listener receives this handle
	 */
	void onLost(java.util.function.Consumer<? super LockHandle> listener);

	/**
	 * Sets the lease of this hold to end {@code leaseTime} from now, on the database server's clock: one
	 * owner-checked {@code UPDATE} of the row's {@code expires_at} that matches only while this owner's lease has not
	 * ended, so it is atomic with respect to any other owner. The new end may also be earlier than the current one.
	 * Only for a {@link LockMode#LEASE} hold taken with a lease time of its own
	 * ({@link LockOptions#withLeaseTime(Duration)}); a lock without one is renewed automatically while held and needs
	 * no extending. {@link #isHeld()} follows the new end (by this JVM's clock, erring early). May be called from any
	 * thread; every handle of a re-entered hold shares the one lease.
	 * @param leaseTime the new lease, counted from now; at least {@link LockOptions#MIN_LEASE_TIME}, at most
	 * {@link LockOptions#MAX_LEASE_TIME}
	 * @throws LockLostException if the lease had already ended (expired, or taken over); nothing is changed then
	 * @throws IllegalStateException if this handle is closed, or the hold is renewed automatically, or its mode is
	 * {@link LockMode#PESSIMISTIC} (held by a transaction or connection, it has no lease to extend) or
	 * {@link LockMode#OPTIMISTIC}
	 * @throws UnsupportedOperationException for read and write holds ({@link LockType#READ}, {@link LockType#WRITE})
	 * @throws IllegalArgumentException if the lease time is null or out of range
	 * @throws org.springframework.dao.DataAccessException if the database could not be reached; the lease is then
	 * unchanged or extended, which {@link #isHeld()} does not know
	 */
	default void extend(Duration leaseTime) {
		throw new UnsupportedOperationException("A " + type() + " hold cannot be extended");
	}

	/**
	 * Releases this hold. When it is the thread's last hold of the resource, the lock is released in the
	 * database with an owner-checked statement. Closing an already closed handle does nothing.
	 * @throws LockLostException if the database shows the lock was no longer held by this owner (its lease had
	 * expired, and possibly another owner took it); nothing is changed in the database in that case
	 * @throws IllegalStateException if called by a thread other than the one that acquired the handle
	 * @throws org.springframework.dao.DataAccessException if the database could not be reached; the lock is
	 * then released locally and expires in the database at the end of its lease
	 */
	@Override
	void close();

}
