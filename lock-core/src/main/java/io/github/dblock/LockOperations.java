package io.github.dblock;

import java.time.Duration;
import java.util.Optional;
import java.util.function.Consumer;

import org.jspecify.annotations.Nullable;

/**
 * The operations on distributed locks, implemented by {@link LockTemplate}: acquire a lock on a named resource and
 * hold it through a {@link LockHandle}, or run code while holding one. An interface (like Spring's
 * {@code JdbcOperations}) so that callers can depend on the operations rather than the class, and tests can stub them.
 * <p>
 * Resource names: 1 to {@value LockTemplate#MAX_RESOURCE_LENGTH} Unicode code points, compared exactly. Durations are
 * {@link Duration}s; a wait time of zero makes a single attempt. Every acquisition returns within its wait time plus
 * the statement timeout plus 2 s, and every release within the statement timeout plus 2 s, whatever the network does
 * (see the README's Limits). Implementations are thread-safe.
 */
public interface LockOperations {

	/**
	 * Acquires a lock with the configured wait time, lease time and mode.
	 * @param resource the resource name
	 * @return the held lock; close it to release
	 * @throws LockNotAcquiredException if another owner held the lock for the whole wait time
	 * @throws LockInterruptedException if the thread was interrupted while waiting
	 * @throws IllegalArgumentException if the resource name is null, blank or too long
	 * @throws org.springframework.dao.DataAccessException on a database failure
	 */
	LockHandle acquire(String resource);

	/**
	 * Acquires a lock, waiting at most the options' wait time.
	 * @param resource the resource name
	 * @param options wait time, lease time and mode; unset ones take the configured defaults
	 * @return the held lock; close it to release
	 * @throws LockNotAcquiredException if another owner held the lock for the whole wait time; it names the
	 * resource, the wait time and the holder when known. Also when the database was reached but did not answer in
	 * time (a statement, a reply or a pooled connection that did not come before the wait ended): its cause is that
	 * timeout. The call returns within the wait time plus the statement timeout plus 2 s, whatever the network
	 * does (see the README's Limits)
	 * @throws LockInterruptedException if the thread was interrupted while waiting
	 * @throws LockLimitExceededException in PESSIMISTIC mode, outside a transaction, when this JVM already holds
	 * or awaits {@code distributed-lock.pessimistic.max-connections} such locks and none ended within the wait time
	 * @throws IllegalArgumentException if the resource name is invalid, the mode has no provider, the mode is
	 * OPTIMISTIC (which has no lock to hold: use {@link #execute(String, LockOptions, LockCallback)}), or the type is
	 * READ or WRITE in a mode other than LEASE
	 * @throws LockUpgradeException if the type is WRITE and the current thread holds only the read lock of the
	 * resource; nothing changes
	 * @throws LockModeConflictException if the current thread holds the resource (through this template) in another
	 * mode, or runs OPTIMISTIC work on it: re-entry is in the held mode only; nothing changes
	 * @throws IllegalStateException if the mode is refused on this database (PESSIMISTIC on a Galera cluster or a
	 * multi-primary group), naming what was found; nothing is held then
	 * @throws org.springframework.dao.DataAccessException on a database failure other than a broken connection or a
	 * timeout, or when the database could not be connected to until the wait time ended
	 */
	LockHandle acquire(String resource, LockOptions options);

	/**
	 * Makes a single attempt to acquire a lock, with the configured lease time and mode.
	 * @return the held lock, or empty if another owner holds it
	 * @throws IllegalArgumentException if the resource name is invalid
	 * @throws org.springframework.dao.DataAccessException on a database failure
	 */
	Optional<LockHandle> tryAcquire(String resource);

	/**
	 * Tries to acquire a lock within the given wait time, with the configured lease time and mode.
	 * @param waitTime how long to wait; zero for a single attempt
	 * @return the held lock, or empty if another owner held it for the whole wait time
	 * @throws LockInterruptedException if the thread was interrupted while waiting
	 * @throws IllegalArgumentException if the resource name is invalid or the wait time negative
	 * @throws org.springframework.dao.DataAccessException on a database failure
	 */
	Optional<LockHandle> tryAcquire(String resource, Duration waitTime);

	/**
	 * Tries to acquire a lock within the options' wait time.
	 * @return the held lock, or empty if another owner held it for the whole wait time
	 * @throws LockInterruptedException if the thread was interrupted while waiting
	 * @throws IllegalArgumentException if the resource name is invalid or the mode has no provider
	 * @throws IllegalStateException if the mode is refused on this database (see {@link LockTemplate#refuseMode})
	 * @throws org.springframework.dao.DataAccessException on a database failure
	 */
	Optional<LockHandle> tryAcquire(String resource, LockOptions options);

	/**
	 * A {@link java.util.concurrent.locks.Lock} view of a resource's lock with the configured defaults, for code
	 * written against that interface; see {@link LockView}.
	 * @param resource the resource name
	 * @throws IllegalArgumentException if the resource name is invalid
	 */
	LockView asLock(String resource);

	/**
	 * A {@link java.util.concurrent.locks.Lock} view of a resource's lock, taken with the given options (their wait
	 * time is replaced by each method's own); see {@link LockView}.
	 * @param resource the resource name
	 * @param options lease time, minimum hold time, mode and type; not null
	 * @throws IllegalArgumentException if the resource name is invalid, or the mode is OPTIMISTIC
	 */
	LockView asLock(String resource, LockOptions options);

	/**
	 * Runs the action while holding the lock, with the configured defaults, and releases it afterwards
	 * (also when the action throws).
	 * @return the action's result
	 * @throws LockNotAcquiredException if the lock could not be acquired within the wait time; the action
	 * does not run
	 * @throws LockLostException if the action completed but the lock turned out to be lost on release
	 * (lease expired); the action's result is discarded
	 * @see #acquire(String, LockOptions) for the other exceptions
	 */
	<T> @Nullable T execute(String resource, LockCallback<T> action);

	/**
	 * Runs the action while holding the lock and releases it afterwards (also when the action throws).
	 * <ul>
	 * <li>{@link LockMode#LEASE}: acquire, run, release. Inside a transaction on the lock data source, with
	 * commit-time validation on, the release waits until that transaction has completed, and its commit checks that
	 * the lock is still held ({@link LockLostException} from the commit otherwise).</li>
	 * <li>{@link LockMode#PESSIMISTIC}: the whole runs in a transaction of the lock data source's transaction
	 * manager (joining one already active), so the action's writes through that data source commit together with
	 * the release; a {@link RuntimeException} or {@link Error} from the action rolls back. A resource held under a
	 * lease (a LEASE-mode owner, or a PESSIMISTIC holder's minimum hold time) keeps the locking statement's row lock
	 * until the transaction ends, which would keep a LEASE holder from renewing and releasing; so outside any
	 * transaction each attempt is a transaction of its own, rolled back when it was not granted the lock and begun
	 * again after a pause until the wait time ends, while inside an active transaction, or while anything
	 * transactional is bound to the thread (an open-in-view {@code EntityManager}), such a resource is reported at
	 * once with {@link LockNotAcquiredException}. Outside a transaction the other threads of this JVM that wait for
	 * the resource wait in the JVM, and an attempt begins its transaction (taking a pooled connection) only once it
	 * may ask the database; if no connection comes before the wait time ends, {@link LockNotAcquiredException} names
	 * the lock, the mode and the pool's error.</li>
	 * <li>{@link LockMode#OPTIMISTIC}: the action runs in a new transaction and is run again after a conflict, up to
	 * {@code distributed-lock.optimistic.max-attempts} times; it must be safe to re-run and write through the lock
	 * data source. Not allowed inside an active transaction.</li>
	 * </ul>
	 * @return the action's result
	 * @throws LockNotAcquiredException if the lock could not be acquired within the wait time (OPTIMISTIC: every
	 * attempt conflicted); the action's effects are not committed
	 * @throws LockLostException if the action completed but the lock turned out to be lost on release
	 * (lease expired); if the action threw, the loss is added to its exception as suppressed instead
	 * @throws IllegalStateException for OPTIMISTIC inside an active transaction, or if the mode is refused on this
	 * database (PESSIMISTIC on a Galera cluster or a multi-primary group); the action does not run
	 * @throws LockModeConflictException if the current thread holds the resource in another mode (OPTIMISTIC: in any
	 * mode), or runs OPTIMISTIC work on it; the action does not run
	 * @see #acquire(String, LockOptions) for the other exceptions
	 */
	<T> @Nullable T execute(String resource, LockOptions options, LockCallback<T> action);

	/**
	 * Runs work that may throw a checked exception while holding the lock, exactly like
	 * {@link #execute(String, LockOptions, LockCallback)}, and rethrows that exception unchanged (not wrapped) after
	 * the lock is released. In {@link LockMode#PESSIMISTIC} and {@link LockMode#OPTIMISTIC} a checked exception
	 * rolls the transaction back, like a {@link RuntimeException} (unlike {@code @Transactional}'s default); if the
	 * lock was also found lost on release, the {@link LockLostException} is added to it as suppressed.
	 * @param resource the resource name
	 * @param options wait time, lease time and mode; unset ones take the configured defaults
	 * @param action the work; not null
	 * @return the action's result
	 * @throws E when the action throws it
	 * @see #execute(String, LockOptions, LockCallback) for the other exceptions
	 */
	<T, E extends Exception> @Nullable T executeChecked(String resource, LockOptions options,
			CheckedLockCallback<T, E> action) throws E;

	/**
	 * Like {@link #execute(String, LockCallback)}, for an action without a result.
	 */
	void executeWithoutResult(String resource, Consumer<LockHandle> action);

	/**
	 * Like {@link #execute(String, LockOptions, LockCallback)}, for an action without a result.
	 */
	void executeWithoutResult(String resource, LockOptions options, Consumer<LockHandle> action);

}
