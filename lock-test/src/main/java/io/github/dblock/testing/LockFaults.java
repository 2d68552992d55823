package io.github.dblock.testing;

import java.time.Duration;

import io.github.dblock.LockType;

/**
 * Faults a test can inject into the store of the locks, so that what an application does when its lock expires, is
 * taken over, is busy or is slow runs in milliseconds instead of lease times: on the real lock table through
 * {@link JdbcLockFaults} (the bean {@code @AutoConfigureDistributedLocks} adds), or in memory through
 * {@link InMemoryLockStore}. Each fault acts the way the matching real event would, through the same store the locks
 * use, so the library's own code finds it: a holder whose lease was ended or taken over gets
 * {@link io.github.dblock.LockLostException} from its release and from a commit validated under the lock, its
 * fencing token is below the new owner's, and a lease renewed in the background is found lost (its
 * {@link io.github.dblock.LockHandle#onLost onLost} listeners run) at its next renewal, or at once in memory.
 * <p>
 * A fault acts on a resource's exclusive lock (every {@link io.github.dblock.LockMode}) and on its read/write lock
 * ({@link LockType#READ}, {@link LockType#WRITE}) alike, unless a method says otherwise. Implementations are
 * thread-safe; a fault takes effect before its method returns.
 */
public interface LockFaults {

	/**
	 * Ends the leases of the resource's current holders now, as if they had run out: another owner can take the lock
	 * at once, and each holder finds its lock lost the way it would after a real expiry (see the class comment). A
	 * PESSIMISTIC hold has no lease: on the real table it cannot be ended this way (it ends with its transaction), in
	 * memory it ends as if its connection had dropped.
	 * @param resource the resource name
	 * @return whether a hold was live (and is now ended)
	 * @throws IllegalArgumentException if the resource name is invalid
	 * @throws IllegalStateException on the real table, if a PESSIMISTIC holder's open transaction kept the row locked
	 * for the statement timeout
	 * @throws org.springframework.dao.DataAccessException on the real table, if the database could not be reached
	 */
	boolean expire(String resource);

	/**
	 * Makes another owner (described as {@code "lock-test (another owner)"}) hold the resource's exclusive lock for
	 * {@code leaseTime} from now, whether the lock was free or held: the next acquisitions find it busy (and wait, or
	 * time out, or skip) until that lease ends or {@link #expire} ends it, and a former holder has lost it. The new
	 * owner's fencing token is greater than every token handed out for the resource before.
	 * @param resource the resource name
	 * @param leaseTime how long the other owner holds it, on the store's clock; positive
	 * @return the other owner's fencing token
	 * @throws IllegalArgumentException if the resource name is invalid or the lease time is not positive
	 * @throws IllegalStateException on the real table, if a PESSIMISTIC holder's open transaction kept the row locked
	 * for the statement timeout
	 * @throws org.springframework.dao.DataAccessException on the real table, if the database could not be reached
	 */
	default long takeOver(String resource, Duration leaseTime) {
		return takeOver(resource, LockType.EXCLUSIVE, leaseTime);
	}

	/**
	 * Like {@link #takeOver(String, Duration)}, for a kind of lock: {@link LockType#EXCLUSIVE} the resource's
	 * exclusive lock, {@link LockType#WRITE} its read/write lock as a writer (every reader and writer has lost it),
	 * {@link LockType#READ} as a reader (writers have lost it, readers keep it; the next writer finds it busy).
	 * @param resource the resource name
	 * @param type the kind of lock the other owner holds
	 * @param leaseTime how long the other owner holds it, on the store's clock; positive
	 * @return the other owner's fencing token
	 * @throws IllegalArgumentException if the resource name is invalid or the lease time is not positive
	 * @throws IllegalStateException on the real table, if a PESSIMISTIC holder's open transaction kept the row locked
	 * for the statement timeout
	 * @throws org.springframework.dao.DataAccessException on the real table, if the database could not be reached
	 */
	long takeOver(String resource, LockType type, Duration leaseTime);

	/**
	 * Moves the end of the current holders' leases to {@code remaining} from now (earlier or later). A lease renewed in
	 * the background is set again by its next renewal if that comes first (every third of its lease time); to end one
	 * for sure, use {@link #expire}.
	 * @param resource the resource name
	 * @param remaining how long the leases still run, on the store's clock; zero ends them now
	 * @return whether a live lease was moved
	 * @throws IllegalArgumentException if the resource name is invalid or {@code remaining} is negative
	 * @throws IllegalStateException on the real table, if a PESSIMISTIC holder's open transaction kept the row locked
	 * for the statement timeout
	 * @throws org.springframework.dao.DataAccessException on the real table, if the database could not be reached
	 */
	boolean endLeaseIn(String resource, Duration remaining);

	/**
	 * Makes the store slow for one resource: for {@code duration} from now, acquisitions of the resource wait before
	 * their attempt, whatever their wait time (as a statement waits for a row lock until the statement timeout). On
	 * the real table another transaction holds the resource's rows locked meanwhile, so the holders' renewals and
	 * releases wait too; in memory only acquisitions wait. Returns once the stall is in place.
	 * @param resource the resource name
	 * @param duration how long, positive; on the real table at most the statement timeout is useful (a longer wait
	 * fails the waiting statement with a lock wait timeout, which the library treats as a busy attempt)
	 * @throws IllegalArgumentException if the resource name is invalid or the duration is not positive
	 * @throws IllegalStateException on the real table, if the rows stayed locked by another transaction for the
	 * statement timeout
	 * @throws org.springframework.dao.DataAccessException on the real table, if the database could not be reached
	 */
	void stall(String resource, Duration duration);

	/**
	 * Whether the resource is taken now in the store: an exclusive lock held (or kept for its minimum hold time after
	 * release) or a read or write lock held, by any owner. On the real table a PESSIMISTIC holder's uncommitted row lock
	 * counts too.
	 * @param resource the resource name
	 * @return {@code true} if an acquisition of it by another owner would find it busy now
	 * @throws IllegalArgumentException if the resource name is invalid
	 * @throws org.springframework.dao.DataAccessException on the real table, if the database could not be reached
	 */
	boolean isLocked(String resource);

}
