package io.github.dblock;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import io.github.dblock.jdbc.Backoff;
import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockProvider;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.spi.ReadWriteLockProvider;
import io.github.dblock.spi.WorkLockProvider;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import org.jspecify.annotations.Nullable;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The programmatic entry point: acquire distributed locks on named resources, or run code while holding one.
 * <p>
 * Locks are reentrant per thread, like {@link java.util.concurrent.locks.ReentrantLock}: the holding thread may
 * acquire the same resource again without a database round trip, and the lock is released in the database when
 * its hold count returns to zero. Other threads of the same JVM are other owners; they wait in a fair local
 * queue rather than polling the database, so at most one thread per JVM asks the database for a resource.
 * <p>
 * Expired holds: a LEASE hold lasts only as long as its lease (by this JVM's clock, which errs early; a renewed lease
 * until a renewal is overdue or finds it lost). Once it is over, the holding thread cannot re-enter it (the call is a
 * new acquisition from the database, with a new fencing token, or busy like any other owner's), the other threads of
 * this JVM no longer wait for it (the first of them asks the database), and its handles' last {@code close()} throws
 * {@link LockLostException} without touching the next holder's lock. The same holds for read and write holds.
 * <p>
 * Waiting: a wait time of zero makes a single attempt; a positive wait time retries (with backoff and jitter in
 * {@link LockMode#LEASE}; in the server's lock queue, in whole seconds, in {@link LockMode#PESSIMISTIC}) until
 * the wait time has passed. Waiting is interruptible.
 * <p>
 * Outages: in {@link LockMode#LEASE}, and in {@link LockMode#PESSIMISTIC} outside a transaction ({@code acquire}
 * and {@code tryAcquire} on a connection of their own; {@code execute} with nothing transactional bound to the
 * thread, in a new transaction for each attempt until the action has started), a waiter whose connection breaks or
 * cannot be had (server restart, killed connection, failover) keeps trying until its wait time ends; only then does
 * the database failure surface. Otherwise a PESSIMISTIC attempt fails with the transaction's connection. A LEASE
 * holder learns of an outage that outlasts its lease through {@link LockHandle#onLost}; a PESSIMISTIC holder's
 * transaction ends with its connection, and its release throws {@link LockLostException}.
 * <p>
 * Read/write locks: {@link LockOptions#withType(LockType)} with {@link LockType#READ} or {@link LockType#WRITE}
 * takes the shared or exclusive side of the resource's read/write lock ({@link LockMode#LEASE} only; a different
 * lock from the resource's exclusive one). Every thread is its own owner in the database (readers of one JVM
 * overlap, writers exclude everything); a thread may re-enter its read or write lock, and take the read lock while
 * it holds the write lock, but asking for the write lock while holding only the read lock throws
 * {@link LockUpgradeException} at once. Writers are preferred over new readers, see {@link LockType}.
 * <p>
 * Commit-time validation (on by default, {@link #setValidateAtCommit(boolean)}): a transaction on the lock's data
 * source that runs while its thread holds a LEASE lock commits only while that lock is held; if it is no longer
 * held, the commit throws {@link LockLostException} and the transaction rolls back. A LEASE hold whose last handle is
 * closed inside such a transaction is released in the database only once the transaction has completed. See
 * {@link CommitValidation}.
 * <p>
 * Resource names are compared exactly (byte for byte in UTF-8: case, accents and trailing spaces matter) and
 * may have 1 to {@value #MAX_RESOURCE_LENGTH} characters (Unicode code points), emoji included.
 * <p>
 * Thread-safe; one instance serves the whole application.
 */
public class LockTemplate {

	private static final org.apache.commons.logging.Log logger = org.apache.commons.logging.LogFactory
		.getLog(LockTemplate.class);

	/** The longest resource name, in Unicode code points. */
	public static final int MAX_RESOURCE_LENGTH = 255;

	/**
	 * The shortest default lease time ({@code distributed-lock.lease-time}): 1 s. Locks taken without a lease time
	 * of their own are renewed every third of the default lease, and each renewal must reach the database (a pooled
	 * connection, one statement, the scheduler's own delay) within the remaining two thirds; measured on a loaded
	 * 2-core machine, renewed leases of 100 ms were still lost now and then, and of 10 ms always.
	 */
	public static final Duration MIN_DEFAULT_LEASE_TIME = Duration.ofSeconds(1);

	private static final int MAX_HOLDER_LENGTH = 255;

	/** The event of a {@code distributed.lock.held} observation when a held lock is found lost. */
	private static final Observation.Event LOST = Observation.Event.of("lost", "lock lost while held");

	/**
	 * Pauses between the attempts of a PESSIMISTIC {@code execute} that each run in a transaction of their own:
	 * 5 ms doubling to 100 ms, with jitter.
	 */
	private static final Backoff ATTEMPT_BACKOFF = new Backoff(Duration.ofMillis(5), Duration.ofMillis(100));

	private final Map<LockMode, LockProvider> providers = new EnumMap<>(LockMode.class);

	private final LockMode defaultMode;

	private final Duration defaultWaitTime;

	private final Duration defaultLeaseTime;

	private final String nodeName;

	private final LocalLocks locals = new LocalLocks();

	/** Read and write holds, per resource and owning thread; removed when the thread's last handle is closed. */
	private final Map<ReadWriteKey, ReadWriteLockHandle.State> readWriteHolds = new ConcurrentHashMap<>();

	private volatile boolean interruptOnLoss;

	private volatile boolean validateAtCommit = true;

	private volatile ObservationRegistry observations = ObservationRegistry.NOOP;

	private volatile boolean resourceAsTag;

	private final Map<LockMode, String> refusedModes = new ConcurrentHashMap<>();

	/**
	 * Creates a template.
	 * @param providers one provider per supported mode
	 * @param defaultMode the mode used when a call does not choose one; must have a provider
	 * @param defaultWaitTime the wait time used when a call does not give one; zero or positive
	 * @param defaultLeaseTime the lease time used, and renewed every third of it, when a call does not give one; at
	 * least {@link #MIN_DEFAULT_LEASE_TIME} (1 s), at most {@link LockOptions#MAX_LEASE_TIME}
	 * @param nodeName describes this JVM in holder descriptions (for example {@code host/pid}); not blank
	 * @throws IllegalArgumentException if an argument is null or invalid, or two providers serve the same mode
	 */
	public LockTemplate(Collection<? extends LockProvider> providers, LockMode defaultMode, Duration defaultWaitTime,
			Duration defaultLeaseTime, String nodeName) {
		for (LockProvider provider : providers) {
			if (this.providers.put(provider.mode(), provider) != null) {
				throw new IllegalArgumentException("More than one LockProvider for mode " + provider.mode());
			}
		}
		if (!this.providers.containsKey(defaultMode)) {
			throw new IllegalArgumentException("No LockProvider for the default mode " + defaultMode);
		}
		this.defaultMode = defaultMode;
		this.defaultWaitTime = LockOptions.defaults().withWaitTime(defaultWaitTime).getWaitTime();
		if (defaultLeaseTime == null || defaultLeaseTime.compareTo(MIN_DEFAULT_LEASE_TIME) < 0) {
			throw new IllegalArgumentException("The default lease time must be at least "
					+ MIN_DEFAULT_LEASE_TIME.toSeconds() + "s (it is renewed every third of it while a lock is held), was "
					+ defaultLeaseTime);
		}
		LockOptions.checkNotTooLong("The default lease time", defaultLeaseTime);
		this.defaultLeaseTime = defaultLeaseTime;
		if (nodeName == null || nodeName.isBlank()) {
			throw new IllegalArgumentException("nodeName must not be null or blank, was '" + nodeName + "'");
		}
		this.nodeName = nodeName;
	}

	/**
	 * Acquires a lock with the configured wait time, lease time and mode.
	 * @param resource the resource name
	 * @return the held lock; close it to release
	 * @throws LockNotAcquiredException if another owner held the lock for the whole wait time
	 * @throws LockInterruptedException if the thread was interrupted while waiting
	 * @throws IllegalArgumentException if the resource name is null, blank or too long
	 * @throws org.springframework.dao.DataAccessException on a database failure
	 */
	public LockHandle acquire(String resource) {
		return acquire(resource, LockOptions.defaults());
	}

	/**
	 * Acquires a lock, waiting at most the options' wait time.
	 * @param resource the resource name
	 * @param options wait time, lease time and mode; unset ones take the configured defaults
	 * @return the held lock; close it to release
	 * @throws LockNotAcquiredException if another owner held the lock for the whole wait time; it names the
	 * resource, the wait time and the holder when known. Also when the database was reached but did not answer in
	 * time (a statement, a reply or a pooled connection that did not come before the wait ended): its cause is that
	 * timeout. The call returns within the wait time plus the statement timeout plus about 2 s, whatever the network
	 * does (see the README's Limits)
	 * @throws LockInterruptedException if the thread was interrupted while waiting
	 * @throws LockLimitExceededException in PESSIMISTIC mode, outside a transaction, when this JVM already holds
	 * or awaits {@code distributed-lock.pessimistic.max-connections} such locks and none ended within the wait time
	 * @throws IllegalArgumentException if the resource name is invalid, the mode has no provider, the mode is
	 * OPTIMISTIC (which has no lock to hold: use {@link #execute(String, LockOptions, LockCallback)}), or the type is
	 * READ or WRITE in a mode other than LEASE
	 * @throws LockUpgradeException if the type is WRITE and the current thread holds only the read lock of the
	 * resource; nothing changes
	 * @throws IllegalStateException if the mode is refused on this database (PESSIMISTIC on a Galera cluster or a
	 * multi-primary group), naming what was found; nothing is held then
	 * @throws org.springframework.dao.DataAccessException on a database failure other than a broken connection or a
	 * timeout, or when the database could not be connected to until the wait time ended
	 */
	public LockHandle acquire(String resource, LockOptions options) {
		Request request = request(resource, options);
		Attempt attempt = doAcquire(request);
		if (attempt.handle == null) {
			throw new LockNotAcquiredException(resource, request.waitTime, attempt.holder, attempt.cause);
		}
		return attempt.handle;
	}

	/**
	 * Makes a single attempt to acquire a lock, with the configured lease time and mode.
	 * @return the held lock, or empty if another owner holds it
	 * @throws IllegalArgumentException if the resource name is invalid
	 * @throws org.springframework.dao.DataAccessException on a database failure
	 */
	public Optional<LockHandle> tryAcquire(String resource) {
		return tryAcquire(resource, LockOptions.defaults().withWaitTime(Duration.ZERO));
	}

	/**
	 * Tries to acquire a lock within the given wait time, with the configured lease time and mode.
	 * @param waitTime how long to wait; zero for a single attempt
	 * @return the held lock, or empty if another owner held it for the whole wait time
	 * @throws LockInterruptedException if the thread was interrupted while waiting
	 * @throws IllegalArgumentException if the resource name is invalid or the wait time negative
	 * @throws org.springframework.dao.DataAccessException on a database failure
	 */
	public Optional<LockHandle> tryAcquire(String resource, Duration waitTime) {
		return tryAcquire(resource, LockOptions.defaults().withWaitTime(waitTime));
	}

	/**
	 * Tries to acquire a lock within the options' wait time.
	 * @return the held lock, or empty if another owner held it for the whole wait time
	 * @throws LockInterruptedException if the thread was interrupted while waiting
	 * @throws IllegalArgumentException if the resource name is invalid or the mode has no provider
	 * @throws IllegalStateException if the mode is refused on this database (see {@link #refuseMode})
	 * @throws org.springframework.dao.DataAccessException on a database failure
	 */
	public Optional<LockHandle> tryAcquire(String resource, LockOptions options) {
		return Optional.ofNullable(doAcquire(request(resource, options)).handle);
	}

	/**
	 * A {@link java.util.concurrent.locks.Lock} view of a resource's lock with the configured defaults, for code
	 * written against that interface; see {@link LockView}.
	 * @param resource the resource name
	 * @throws IllegalArgumentException if the resource name is invalid
	 */
	public LockView asLock(String resource) {
		return asLock(resource, LockOptions.defaults());
	}

	/**
	 * A {@link java.util.concurrent.locks.Lock} view of a resource's lock, taken with the given options (their wait
	 * time is replaced by each method's own); see {@link LockView}.
	 * @param resource the resource name
	 * @param options lease time, minimum hold time, mode and type; not null
	 * @throws IllegalArgumentException if the resource name is invalid, or the mode is OPTIMISTIC
	 */
	public LockView asLock(String resource, LockOptions options) {
		return new LockView(this, resource, options);
	}

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
	@Nullable
	public <T> T execute(String resource, LockCallback<T> action) {
		return execute(resource, LockOptions.defaults(), action);
	}

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
	 * once with {@link LockNotAcquiredException}.</li>
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
	 * @see #acquire(String, LockOptions) for the other exceptions
	 */
	@Nullable
	public <T> T execute(String resource, LockOptions options, LockCallback<T> action) {
		requireAction(action);
		Request request = request(resource, options);
		if (request.provider instanceof WorkLockProvider work) {
			return executeWork(work, request, action);
		}
		if (request.mode == LockMode.PESSIMISTIC && !TransactionSynchronizationManager.isActualTransactionActive()
				&& TransactionSynchronizationManager.getResourceMap().isEmpty()) {
			return executeInTransactionsOfItsOwn(request, action);
		}
		return request.provider.inTransaction(() -> executeHolding(request, action, request.waitTime, null));
	}

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
	@Nullable
	public <T, E extends Exception> T executeChecked(String resource, LockOptions options,
			CheckedLockCallback<T, E> action) throws E {
		return CheckedCalls.executeChecked(this, resource, options, action);
	}

	/**
	 * PESSIMISTIC {@code execute} outside any transaction, with nothing transactional bound to the thread (an
	 * open-in-view {@code EntityManager} is: a JPA transaction manager would begin on it and clear it at each
	 * rollback): every attempt is a transaction of its own. Inside a transaction the provider reports a row held
	 * under a lease (a LEASE-mode owner, or a minimum hold time) at once, since its locking statement has locked the
	 * row until the transaction ends and waiting would keep the LEASE holder from releasing. So while the wait time
	 * lasts, an attempt that was not granted the lock ends its transaction (the transaction manager rolls it back on
	 * the {@link LockNotAcquiredException}; it holds nothing but that attempt), and after a pause
	 * ({@link #ATTEMPT_BACKOFF}), announced in the row so that a LEASE holder's JVM holds its own threads back at its
	 * next release ({@link LockProvider#announceNextAttempt}), a new transaction tries again. The action runs only in
	 * the attempt that holds the lock, so it never runs twice; a {@link LockNotAcquiredException} thrown by the action
	 * itself is not retried. A lost or unobtainable connection before the action started
	 * ({@link LockProvider#isRetryableAttemptFailure}) is retried the same way, without the announcement.
	 */
	@Nullable
	private <T> T executeInTransactionsOfItsOwn(Request request, LockCallback<T> action) {
		long deadline = System.nanoTime() + saturatedNanos(request.waitTime);
		Attempts attempts = new Attempts(acquireObservation(request).start());
		Request attempt = request;
		int outages = 0;
		for (int n = 0;; n++) {
			attempts.notAcquired = false;
			attempts.actionStarted = false;
			Request current = attempt;
			try {
				return request.provider.inTransaction(() -> executeHolding(current, action, request.waitTime, attempts));
			}
			catch (LockNotAcquiredException ex) {
				long remaining = deadline - System.nanoTime();
				if (!attempts.notAcquired) {
					attempts.stop("failed", ex); // not the acquisition's (no-op when it had succeeded)
					throw ex;
				}
				if (remaining <= 0) {
					attempts.stop("timed_out", null);
					throw ex;
				}
				long pause = ATTEMPT_BACKOFF.pauseNanos(n, 0, remaining);
				if (pause < remaining) {
					announceNextAttempt(request, pause + ATTEMPT_BACKOFF.initial().toNanos());
				}
				pauseBeforeNextAttempt(request, attempts, pause);
			}
			catch (RuntimeException ex) {
				long remaining = deadline - System.nanoTime();
				if (attempts.actionStarted || remaining <= 0 || hidesAnError(ex)
						|| !request.provider.isRetryableAttemptFailure(ex)) {
					attempts.stop("failed", ex); // no-op when the acquisition had already succeeded
					throw ex;
				}
				// a lost or unobtainable connection before the action started: the attempt's transaction died
				// with it, so a new attempt is safe
				if (outages++ == 0) {
					logger.warn("Lost the connection to the lock database while acquiring '" + request.resource
							+ "' (PESSIMISTIC); retrying until the wait time ends: "
							+ org.springframework.core.NestedExceptionUtils.getMostSpecificCause(ex));
				}
				pauseBeforeNextAttempt(request, attempts, ATTEMPT_BACKOFF.pauseNanos(n, 0, remaining));
			}
			catch (Error ex) {
				attempts.stop("failed", ex);
				throw ex;
			}
			attempt = request.withWaitTime(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
		}
	}

	/**
	 * Tells a LEASE holder's JVM that this waiter tries again soon, so that it lets the waiter in instead of passing
	 * the lock among its own threads; only a hint, so a failure is logged.
	 */
	private static void announceNextAttempt(Request request, long withinNanos) {
		try {
			request.provider.announceNextAttempt(request.resource, Duration.ofNanos(withinNanos));
		}
		catch (RuntimeException ex) {
			logger.debug("Could not announce the next attempt on lock '" + request.resource + "'", ex);
		}
	}

	/**
	 * Whether the failure is a rollback's, thrown in place of an {@link Error} from the attempt (see
	 * {@code TransactionTemplate}): that must surface, not be retried as the rollback's connection failure.
	 */
	private static boolean hidesAnError(RuntimeException ex) {
		return ex instanceof org.springframework.transaction.TransactionSystemException rollback
				&& rollback.getApplicationException() instanceof Error;
	}

	private static void pauseBeforeNextAttempt(Request request, Attempts attempts, long pauseNanos) {
		try {
			TimeUnit.NANOSECONDS.sleep(pauseNanos);
		}
		catch (InterruptedException interrupted) {
			Thread.currentThread().interrupt();
			LockInterruptedException failure = new LockInterruptedException(request.resource, interrupted);
			attempts.stop("failed", failure);
			throw failure;
		}
	}

	/** The acquisition observation of a request, not started yet. */
	private Observation acquireObservation(Request request) {
		return withResource(Observation.createNotStarted("distributed.lock.acquire", this.observations)
			.lowCardinalityKeyValue("mode", request.mode.name().toLowerCase(java.util.Locale.ROOT)), request.resource);
	}

	/** The attempts of one {@link #executeInTransactionsOfItsOwn}: one acquisition observation for all of them. */
	private static final class Attempts {

		private final Observation observation;

		private boolean stopped;

		/** Set when the current attempt's acquisition (not its action) failed. */
		boolean notAcquired;

		/** Set when the current attempt holds the lock and its action is about to run. */
		boolean actionStarted;

		Attempts(Observation observation) {
			this.observation = observation;
		}

		void stop(String outcome, @Nullable Throwable error) {
			if (this.stopped) {
				return;
			}
			this.stopped = true;
			this.observation.lowCardinalityKeyValue("outcome", outcome);
			if (error != null) {
				this.observation.error(error);
			}
			this.observation.stop();
		}

	}

	@Nullable
	private <T> T executeWork(WorkLockProvider provider, Request request, LockCallback<T> action) {
		WorkLockProvider.Outcome<T> outcome;
		Observation observation = acquireObservation(request).start();
		try (Observation.Scope scope = observation.openScope()) {
			outcome = provider.execute(lockRequest(request), (held) -> {
				LockHandle handle = new WorkLockHandle(request.resource, request.mode, held.fencingToken());
				CurrentLock.push(handle);
				try {
					return action.doWithLock(handle);
				}
				finally {
					CurrentLock.pop(handle);
				}
			});
			observation.lowCardinalityKeyValue("outcome", outcome.committed() ? "acquired" : "timed_out");
		}
		catch (InterruptedException ex) {
			observation.lowCardinalityKeyValue("outcome", "failed").error(ex);
			Thread.currentThread().interrupt();
			throw new LockInterruptedException(request.resource, ex);
		}
		catch (RuntimeException | Error ex) {
			observation.lowCardinalityKeyValue("outcome", "failed").error(ex);
			throw ex;
		}
		finally {
			observation.stop();
		}
		if (!outcome.committed()) {
			throw new LockNotAcquiredException(request.resource, request.waitTime, outcome.failure());
		}
		return outcome.value();
	}

	/**
	 * Acquires, runs the action and releases.
	 * @param reportedWaitTime the wait time a {@link LockNotAcquiredException} names (the caller's, also when this
	 * attempt had only the rest of it)
	 * @param attempts when not {@code null}, one of several attempts: the acquisition is observed by it rather than
	 * on its own, and it is told when the acquisition itself (not the action) failed
	 */
	@Nullable
	private <T> T executeHolding(Request request, LockCallback<T> action, Duration reportedWaitTime,
			@Nullable Attempts attempts) {
		T result;
		Attempt attempt = (attempts != null) ? acquireLocally(request) : doAcquire(request);
		if (attempt.handle == null) {
			if (attempts != null) {
				attempts.notAcquired = true;
			}
			throw new LockNotAcquiredException(request.resource, reportedWaitTime, attempt.holder, attempt.cause);
		}
		LockHandle lock = attempt.handle;
		try {
			if (attempts != null) {
				attempts.actionStarted = true; // from here on a failure is not retried: the action may have run
				attempts.stop("acquired", null); // inside the try: a failing observation handler still releases
			}
			result = action.doWithLock(lock);
		}
		catch (Throwable ex) {
			try {
				lock.close();
			}
			catch (RuntimeException releaseFailure) {
				ex.addSuppressed(releaseFailure);
			}
			throw ex;
		}
		lock.close();
		return result;
	}

	/**
	 * Like {@link #execute(String, LockCallback)}, for an action without a result.
	 */
	public void executeWithoutResult(String resource, Consumer<LockHandle> action) {
		executeWithoutResult(resource, LockOptions.defaults(), action);
	}

	/**
	 * Like {@link #execute(String, LockOptions, LockCallback)}, for an action without a result.
	 */
	public void executeWithoutResult(String resource, LockOptions options, Consumer<LockHandle> action) {
		requireAction(action);
		execute(resource, options, (lock) -> {
			action.accept(lock);
			return null;
		});
	}

	/**
	 * Whether to interrupt the thread that acquired a lock when the lock is found lost while held (see
	 * {@link LockHandle#onLost}), so that interruptible work stops early. Off by default.
	 */
	public void setInterruptOnLoss(boolean interruptOnLoss) {
		this.interruptOnLoss = interruptOnLoss;
	}

	/**
	 * Whether a transaction on the lock's data source that runs while its thread holds a LEASE lock commits only while
	 * that lock is held ({@code distributed-lock.validate-at-commit}, on by default): see {@link CommitValidation}.
	 * When on, a LEASE hold whose last handle is closed inside such a transaction is released in the database only
	 * once the transaction has completed. Thread-safe; applies to holds handed out and transactions begun afterwards.
	 */
	public void setValidateAtCommit(boolean validateAtCommit) {
		this.validateAtCommit = validateAtCommit;
	}

	/** Whether commit-time validation is on (see {@link #setValidateAtCommit(boolean)}). */
	public boolean isValidateAtCommit() {
		return this.validateAtCommit;
	}

	/** Registers commit-time validation of a LEASE hold in the current transaction, when on and applicable. */
	void validateAtCommit(String resource, HeldLock lock) {
		if (this.validateAtCommit) {
			CommitValidation.register(resource, lock);
		}
	}

	/**
	 * Observes acquisitions ({@code distributed.lock.acquire}, low-cardinality keys {@code mode} and {@code outcome}:
	 * {@code acquired}, {@code timed_out} or {@code failed}) and holds ({@code distributed.lock.held}, key
	 * {@code mode}, with an event {@code lost} when a held lock is found lost). With Spring Boot's observation
	 * support these become timers and, for tracing users, spans. The resource name is a high-cardinality key
	 * (spans only) unless {@link #setResourceAsTag(boolean)}.
	 */
	public void setObservationRegistry(ObservationRegistry observations) {
		this.observations = Objects.requireNonNull(observations, "observations must not be null");
	}

	/** The registry given to {@link #setObservationRegistry(ObservationRegistry)}, or the no-op one. */
	public ObservationRegistry getObservationRegistry() {
		return this.observations;
	}

	/**
	 * Whether the resource name becomes a low-cardinality key of the observations (and so a metric tag). Off by
	 * default: resource names are often unbounded (order numbers). Switch it on only for a small, fixed set.
	 */
	public void setResourceAsTag(boolean resourceAsTag) {
		this.resourceAsTag = resourceAsTag;
	}

	/** Adds the resource to an observation as a tag or, by default, as a high-cardinality key. */
	public Observation withResource(Observation observation, String resource) {
		return this.resourceAsTag ? observation.lowCardinalityKeyValue("resource", resource)
				: observation.highCardinalityKeyValue("resource", resource);
	}

	/**
	 * The locks this JVM holds now, a snapshot for diagnostics (the Actuator endpoint): resource, mode, the holding
	 * thread's hold count (open handles), fencing token and holder description. Thread-safe.
	 */
	public List<LocalHold> localHolds() {
		List<LocalHold> holds = new java.util.ArrayList<>();
		for (LocalLocks.Entry entry : this.locals.heldEntries()) {
			HeldLock held = entry.held;
			LockMode mode = entry.mode;
			String holder = entry.holder;
			if (held != null && mode != null) {
				LocalLocks.Gateless gateless = entry.gateless;
				LocalLocks.LeaseHold lease = entry.lease;
				int holdCount = (gateless != null) ? gateless.holds : (lease != null) ? lease.holds : 0;
				holds.add(new LocalHold(entry.resource, mode, holdCount, held.fencingToken(),
						(holder != null) ? holder : this.nodeName));
			}
		}
		for (ReadWriteLockHandle.State state : this.readWriteHolds.values()) {
			holds.add(new LocalHold(state.resource, state.mode, state.holds, state.held.fencingToken(), state.holder,
					state.type));
		}
		holds.sort(java.util.Comparator.comparing(LocalHold::resource));
		return holds;
	}

	/**
	 * A lock this JVM holds.
	 * @param resource the resource
	 * @param mode the mode it was taken in
	 * @param holdCount the holding thread's open handles (0 while a PESSIMISTIC lock waits for its transaction to end)
	 * @param fencingToken the acquisition's fencing token
	 * @param holder node and thread
	 * @param type {@link LockType#EXCLUSIVE}, or the side of a read/write lock held
	 */
	public record LocalHold(String resource, LockMode mode, int holdCount, long fencingToken, String holder,
			LockType type) {

		/** An exclusive lock's hold. */
		public LocalHold(String resource, LockMode mode, int holdCount, long fencingToken, String holder) {
			this(resource, mode, holdCount, fencingToken, holder, LockType.EXCLUSIVE);
		}

	}

	/** The number of locks this JVM holds now (exclusive ones per resource, read/write ones per owning thread); for the {@code distributed.lock.held.local} gauge. */
	public int localHeldCount() {
		return this.locals.heldCount() + this.readWriteHolds.size();
	}

	/** How this JVM describes itself in holder descriptions ({@code distributed-lock.node-name}). */
	public String getNodeName() {
		return this.nodeName;
	}

	/** The lease time used, and renewed, when a call does not give one ({@code distributed-lock.lease-time}). */
	public Duration getDefaultLeaseTime() {
		return this.defaultLeaseTime;
	}

	/**
	 * Refuses every later request in a mode, for example PESSIMISTIC on a Galera cluster, where row locks are not
	 * cluster-wide. Such requests throw {@link IllegalStateException} with the reason, before any SQL runs and
	 * before anything is held. Called during configuration; thread-safe.
	 * @param mode the mode to refuse
	 * @param reason why, naming what was found (it is the second half of the exception message)
	 * @throws IllegalArgumentException if the mode is the default mode (start-up must fail instead)
	 */
	public void refuseMode(LockMode mode, String reason) {
		Objects.requireNonNull(mode, "mode must not be null");
		Objects.requireNonNull(reason, "reason must not be null");
		if (mode == this.defaultMode) {
			throw new IllegalArgumentException("Cannot refuse the default lock mode " + mode + ": " + reason);
		}
		this.refusedModes.put(mode, reason);
	}

	/** The modes refused by {@link #refuseMode}, with their reasons. */
	public Map<LockMode, String> getRefusedModes() {
		return Map.copyOf(this.refusedModes);
	}

	/** The mode used when a call does not choose one. */
	public LockMode getDefaultMode() {
		return this.defaultMode;
	}

	/** Whether other threads of this JVM are queued for the resource right now; for tests and diagnostics. */
	boolean hasQueuedLocalWaiters(String resource) {
		return this.locals.hasQueuedThreads(resource);
	}

	/** The number of resources this JVM currently holds or waits for (read/write locks: holds per owning thread). */
	public int localResourceCount() {
		return this.locals.size() + this.readWriteHolds.size();
	}

	private static void requireAction(@Nullable Object action) {
		if (action == null) {
			throw new IllegalArgumentException("The action to run under the lock must not be null");
		}
	}

	private Request request(String resource, LockOptions options) {
		validateResource(resource);
		if (options == null) {
			throw new IllegalArgumentException("options must not be null for lock '" + resource
					+ "': use LockOptions.defaults() for the configured defaults");
		}
		LockMode mode = (options.getMode() != null) ? options.getMode() : this.defaultMode;
		String refusal = this.refusedModes.get(mode);
		if (refusal != null) {
			throw new IllegalStateException("Lock mode " + mode + " is refused for '" + resource + "': " + refusal);
		}
		LockProvider provider = this.providers.get(mode);
		if (provider == null) {
			throw new IllegalArgumentException("Lock mode " + mode + " is not available; available modes: "
					+ this.providers.keySet());
		}
		LockType type = options.getType();
		if (type != LockType.EXCLUSIVE && !(provider instanceof ReadWriteLockProvider)) {
			throw new IllegalArgumentException(readWriteRefusal(type, mode, resource));
		}
		Duration waitTime = (options.getWaitTime() != null) ? options.getWaitTime() : this.defaultWaitTime;
		Duration leaseTime = (options.getLeaseTime() != null) ? options.getLeaseTime() : this.defaultLeaseTime;
		Duration minHoldTime = (options.getMinHoldTime() != null) ? options.getMinHoldTime() : Duration.ZERO;
		if (minHoldTime.compareTo(leaseTime) > 0) {
			throw new IllegalArgumentException("minHoldTime " + minHoldTime + " exceeds the lease time " + leaseTime
					+ " of lock '" + resource + "'; it must not be longer than the lease"
					+ ((options.getLeaseTime() == null) ? " (distributed-lock.lease-time; give a longer leaseTime)" : ""));
		}
		return new Request(resource, provider, mode, type, waitTime, leaseTime, options.getLeaseTime() == null,
				minHoldTime);
	}

	/** Why a READ or WRITE lock cannot be had in a mode; also used to check annotations at start-up. */
	static String readWriteRefusal(LockType type, LockMode mode, String resource) {
		String why = (mode == LockMode.OPTIMISTIC) ? "OPTIMISTIC has no lock to hold, only a version check at commit"
				: "read/write locks are lease locks";
		return "Lock type " + type + " is not available in mode " + mode + " for '" + resource + "': " + why
				+ ". Use LockMode.LEASE for READ and WRITE locks (LockOptions.withMode(LockMode.LEASE) or "
				+ "@DistributedLock(mode = LockMode.LEASE, type = ...))";
	}

	/**
	 * Checks a resource name: not null, not blank, at most {@value #MAX_RESOURCE_LENGTH} Unicode code points (a
	 * supplementary character such as an emoji counts one, a combining accent counts one of its own), and
	 * well-formed Unicode (no unpaired surrogate), so that it can be stored exactly as UTF-8 (at most 4 bytes per
	 * code point: 1,020 bytes, the size of the lock table's {@code VARBINARY(1020)} key). No SQL runs. Thread-safe.
	 * @throws IllegalArgumentException naming the problem and what is allowed
	 */
	public static void validateResource(String resource) {
		if (resource == null) {
			throw new IllegalArgumentException("Lock resource name must not be null; give 1 to " + MAX_RESOURCE_LENGTH
					+ " characters");
		}
		if (resource.isBlank()) {
			throw new IllegalArgumentException("Lock resource name must not be blank, was '" + resource + "'; give 1 to "
					+ MAX_RESOURCE_LENGTH + " characters, not only white space");
		}
		int length = resource.codePointCount(0, resource.length());
		if (length > MAX_RESOURCE_LENGTH) {
			throw new IllegalArgumentException("Lock resource name is " + length + " characters (code points) long; at most "
					+ MAX_RESOURCE_LENGTH + " are allowed: '" + resource.substring(0, resource.offsetByCodePoints(0, 40))
					+ "...'");
		}
		if (!StandardCharsets.UTF_8.newEncoder().canEncode(resource)) {
			throw new IllegalArgumentException("Lock resource name is not well-formed Unicode (unpaired surrogate at index "
					+ unpairedSurrogate(resource) + "): '" + resource.replaceAll("\\p{Cs}", "\uFFFD")
					+ "'; only well-formed Unicode can be stored exactly");
		}
	}

	private static int unpairedSurrogate(String resource) {
		for (int i = 0; i < resource.length(); i++) {
			char c = resource.charAt(i);
			if (Character.isHighSurrogate(c) && i + 1 < resource.length() && Character.isLowSurrogate(resource.charAt(i + 1))) {
				i++;
			}
			else if (Character.isSurrogate(c)) {
				return i;
			}
		}
		return -1;
	}

	private Attempt doAcquire(Request request) {
		if (request.provider instanceof WorkLockProvider) {
			return acquireLocally(request); // refuses with a clear message
		}
		Observation observation = acquireObservation(request).start();
		try {
			Attempt attempt = acquireLocally(request);
			observation.lowCardinalityKeyValue("outcome", (attempt.handle != null) ? "acquired" : "timed_out");
			return attempt;
		}
		catch (RuntimeException | Error ex) {
			observation.lowCardinalityKeyValue("outcome", "failed");
			observation.error(ex);
			throw ex;
		}
		finally {
			observation.stop();
		}
	}

	private Attempt acquireLocally(Request request) {
		if (request.type != LockType.EXCLUSIVE) {
			return acquireReadWrite(request);
		}
		if (request.provider instanceof WorkLockProvider) {
			throw new IllegalArgumentException("Lock mode " + request.mode + " has no lock to hold: its work runs in the "
					+ "transaction that checks the version. Use execute(...) or @DistributedLock for '" + request.resource + "'");
		}
		LocalLocks.Entry entry = this.locals.retain(request.resource);
		boolean gateHeld = false;
		boolean acquired = false;
		try {
			LocalLocks.Gateless own = entry.gateless;
			LocalLocks.Gateless mine = (CurrentLock.get(request.resource).orElse(null) instanceof DefaultLockHandle open)
					? open.gatelessOf(entry) : null;
			if (mine != null && mine != own) {
				// this thread still holds the resource, but its row was taken over since (its connection died and the
				// next local thread was granted the row): re-entering would run more work without exclusion
				HeldLock superseded = mine.lock;
				throw new LockLostException(request.resource, superseded.fencingToken(), "Lock '" + request.resource
						+ "' (fencing token " + superseded.fencingToken() + ") was taken over after its connection "
						+ "failed; it cannot be re-entered");
			}
			if (own != null && own.thread == Thread.currentThread()) {
				// a PESSIMISTIC holder re-enters: its own acquisition's count, never a later holder's
				if (own.lock.isLost()) {
					throw new LockLostException(request.resource, own.lock.fencingToken(), "Lock '" + request.resource
							+ "' (fencing token " + own.lock.fencingToken() + ") is already lost; it cannot be re-entered");
				}
				own.holds++;
				DefaultLockHandle handle = new DefaultLockHandle(this, entry, own.lock, LockMode.PESSIMISTIC, own, null);
				acquired = true;
				CurrentLock.push(handle);
				return new Attempt(handle, null);
			}
			long deadline = System.nanoTime() + saturatedNanos(request.waitTime);
			if (entry.isGateOwner()) {
				// this thread holds the resource under a lease: it re-enters while the lease lasts; once the lease is
				// over (by this JVM's clock, or found lost) re-entering would run more work without exclusion, so the
				// outer hold counts as lost and this call acquires anew, keeping the gate
				LocalLocks.LeaseHold outer;
				LocalLocks.LeaseHold stale = null;
				synchronized (entry) {
					outer = entry.lease;
					if (outer != null && outer.isOver()) {
						stale = entry.supersede(outer);
						outer = null;
					}
				}
				gateHeld = true;
				if (stale != null) {
					superseded(request.resource, stale);
				}
				if (outer != null) {
					outer.holds++;
					DefaultLockHandle handle = new DefaultLockHandle(this, entry, outer.lock, LockMode.LEASE, null, outer);
					acquired = true;
					validateAtCommit(request.resource, outer.lock);
					CurrentLock.push(handle);
					return new Attempt(handle, null);
				}
			}
			else {
				LocalLocks.LeaseHold[] stale = new LocalLocks.LeaseHold[1];
				boolean owned = entry.acquireGate(deadline, stale);
				if (stale[0] != null) {
					superseded(request.resource, stale[0]);
				}
				if (!owned) {
					String localHolder = entry.holder;
					return new Attempt(null,
							(localHolder != null) ? localHolder + " (this JVM)" : "another thread of this JVM");
				}
				gateHeld = true;
			}
			LockRequest lockRequest = lockRequest(request, deadline);
			AcquireResult result = null;
			HeldLock parked = entry.parked;
			if (parked != null) {
				entry.parked = null;
				if (request.mode == LockMode.LEASE && !parked.isLost() && parked.canServe(lockRequest)) {
					result = AcquireResult.acquired(parked); // handed off by the previous local holder: no round trip
				}
				else {
					releaseQuietly(request.resource, parked);
				}
			}
			if (result == null) {
				long courtesy = entry.courtesyPending ? entry.courtesyUntilNanos - System.nanoTime() : 0;
				entry.courtesyPending = false;
				if (courtesy > 0) {
					// this JVM just kept the lock for a whole hand-off budget: give other nodes' waiters their turn
					TimeUnit.NANOSECONDS.sleep(Math.min(courtesy, lockRequest.remainingNanos()));
				}
				result = askDatabase(entry, request, lockRequest);
			}
			if (result.lock() == null) {
				return new Attempt(null, result.holder(), result.cause());
			}
			Observation holding = withResource(Observation.createNotStarted("distributed.lock.held", this.observations)
				.lowCardinalityKeyValue("mode", request.mode.name().toLowerCase(java.util.Locale.ROOT)), request.resource)
				.start();
			// PESSIMISTIC: the row lock is ours now, so the gate goes to the next local thread, which waits in the
			// server's row lock queue and is granted the row at our commit (no round trip between the two holders)
			LocalLocks.Gateless gateless = (request.mode == LockMode.PESSIMISTIC)
					? new LocalLocks.Gateless(result.lock()) : null;
			LocalLocks.LeaseHold lease = (gateless == null) ? new LocalLocks.LeaseHold(result.lock()) : null;
			claim(entry, result.lock(), request.mode, lockRequest.holder(), holding, gateless, lease);
			acquired = true;
			if (gateless != null) {
				entry.releaseGate();
				gateHeld = false;
			}
			else {
				// a local waiter takes the gate once this lease is found lost, without waiting for its end by the clock
				result.lock().onLost(entry::wakeWaiters);
			}
			DefaultLockHandle handle = new DefaultLockHandle(this, entry, result.lock(), request.mode, gateless, lease);
			if (this.interruptOnLoss) {
				Thread owner = Thread.currentThread();
				result.lock().onLost(owner::interrupt);
			}
			result.lock().onLost(() -> holding.event(LOST));
			if (lease != null) {
				validateAtCommit(request.resource, result.lock());
			}
			CurrentLock.push(handle);
			return new Attempt(handle, null);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new LockInterruptedException(request.resource, ex);
		}
		finally {
			if (!acquired) {
				if (gateHeld) {
					entry.releaseGate();
				}
				leave(entry);
			}
		}
	}

	/**
	 * A read or write lock: re-entered from the thread's own hold when it has one (a write hold also serves reads;
	 * a read hold cannot serve a write), else taken in the database for this thread as a new owner.
	 */
	private Attempt acquireReadWrite(Request request) {
		ReadWriteKey key = new ReadWriteKey(request.resource, Thread.currentThread());
		ReadWriteLockHandle.State state = this.readWriteHolds.get(key);
		if (state != null && (state.held.isLost() || System.nanoTime() - state.held.validUntilNanos() >= 0)) {
			// the thread's hold is over (its lease ended, or it was found lost): re-entering would run more work
			// without exclusion, so that hold counts as lost (its handles' last close() throws LockLostException) and
			// this call acquires anew
			this.readWriteHolds.remove(key, state);
			Observation holding = state.holding;
			state.holding = null;
			if (holding != null) {
				holding.event(LOST);
				holding.stop();
			}
			state = null;
		}
		if (state != null) {
			if (state.type == LockType.READ && request.type == LockType.WRITE) {
				throw new LockUpgradeException(request.resource);
			}
			state.holds++;
			ReadWriteLockHandle handle = new ReadWriteLockHandle(this, state, request.type);
			if (state.type == LockType.WRITE && state.mode == LockMode.LEASE) {
				validateAtCommit(request.resource, state.held); // re-entered in a transaction begun since
			}
			CurrentLock.push(handle);
			return new Attempt(handle, null);
		}
		LockRequest lockRequest = lockRequest(request);
		AcquireResult result;
		try {
			result = ((ReadWriteLockProvider) request.provider).acquire(lockRequest, request.type);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new LockInterruptedException(request.resource, ex);
		}
		HeldLock held = result.lock();
		if (held == null) {
			return new Attempt(null, result.holder(), result.cause());
		}
		state = new ReadWriteLockHandle.State(request.resource, request.mode, request.type, held, lockRequest.holder());
		this.readWriteHolds.put(key, state);
		if (this.interruptOnLoss) {
			Thread owner = Thread.currentThread();
			held.onLost(owner::interrupt);
		}
		Observation holding = withResource(Observation.createNotStarted("distributed.lock.held", this.observations)
			.lowCardinalityKeyValue("mode", request.mode.name().toLowerCase(java.util.Locale.ROOT)), request.resource)
			.start();
		state.holding = holding;
		held.onLost(() -> holding.event(LOST));
		ReadWriteLockHandle handle = new ReadWriteLockHandle(this, state, request.type);
		if (request.type == LockType.WRITE && request.mode == LockMode.LEASE) {
			// readers share the lock: a READ hold has nothing exclusive for a commit to be validated under
			validateAtCommit(request.resource, held);
		}
		CurrentLock.push(handle);
		return new Attempt(handle, null);
	}

	/**
	 * Called by {@link ReadWriteLockHandle#close()} on the owning thread. The last close of a WRITE hold whose
	 * commit-time validation is pending in the current transaction releases it only once that transaction has
	 * completed (as {@code deferRelease} does for exclusive holds): the hold stays the thread's meanwhile, with no
	 * open handle, and the thread may re-enter it; once the transaction has completed it is released unless it was
	 * re-entered and is still open.
	 */
	void releaseReadWrite(ReadWriteLockHandle.State state) {
		if (--state.holds > 0) {
			return;
		}
		CommitValidation.Check check = CommitValidation.pending(state.held);
		if (check != null) {
			if (!check.isDeferred()) {
				check.deferUntilCompletion(() -> {
					if (state.holds > 0) {
						return; // re-entered in the transaction and still open: its last close() releases
					}
					try {
						releaseReadWriteNow(state);
					}
					catch (LockLostException ex) {
						// the commit, if any, was checked under the row lock; only the lease's end was found late
						logger.warn(ex.getMessage() + " (released after its transaction completed)");
					}
					catch (RuntimeException ex) {
						logger.warn("Could not release the " + state.type + " lock '" + state.resource
								+ "' after its transaction completed", ex);
					}
				});
			}
			// else re-entered and closed again in the same transaction: the release deferred at the first close does it
			return;
		}
		releaseReadWriteNow(state);
	}

	private void releaseReadWriteNow(ReadWriteLockHandle.State state) {
		this.readWriteHolds.remove(new ReadWriteKey(state.resource, state.owner), state);
		Observation holding = state.holding;
		state.holding = null;
		if (holding != null) {
			holding.stop();
		}
		if (!state.held.release()) {
			throw new LockLostException(state.resource, state.held.fencingToken(), "The " + state.type + " lock '"
					+ state.resource + "' (fencing token " + state.held.fencingToken() + ") was no longer held at "
					+ "release (its lease had expired) and another owner may have taken it");
		}
	}

	/**
	 * Stops counting the caller as a user of the entry; the last user releases a handed-off lock nobody took (its
	 * intended successor gave up waiting).
	 */
	private void leave(LocalLocks.Entry entry) {
		if (this.locals.release(entry)) {
			HeldLock parked = entry.parked;
			entry.parked = null;
			if (parked != null) {
				releaseQuietly(entry.resource, parked);
			}
		}
	}

	private static void releaseQuietly(String resource, HeldLock lock) {
		try {
			lock.release();
		}
		catch (RuntimeException ex) {
			logger.warn("Could not release the lock '" + resource + "' handed off to a thread that no longer wanted it; "
					+ "it ends with its lease", ex);
		}
	}

	private LockRequest lockRequest(Request request) {
		return lockRequest(request, System.nanoTime() + saturatedNanos(request.waitTime));
	}

	private LockRequest lockRequest(Request request, long deadline) {
		return new LockRequest(request.resource, request.leaseTime, request.renew, request.minHoldTime, deadline,
				holderDescription());
	}

	/**
	 * Asks the provider for the lock. A PESSIMISTIC holder of this JVM lets the next local thread wait in the
	 * database, on a connection of its own, while the provider can spare one ({@link LockProvider#canWaitInDatabase()});
	 * otherwise, and when the provider refuses for its cap ({@link LockLimitExceededException}) while a local holder
	 * of the resource still has a connection to give back, that thread waits in the JVM for the local holder, as
	 * every local waiter did before, rather than fail.
	 */
	private AcquireResult askDatabase(LocalLocks.Entry entry, Request request, LockRequest lockRequest)
			throws InterruptedException {
		while (true) {
			long seen;
			boolean waitHere;
			synchronized (entry) {
				seen = entry.releases;
				waitHere = entry.gateless != null && !request.provider.canWaitInDatabase();
			}
			if (waitHere) {
				if (!awaitRelease(entry, seen, lockRequest)) {
					return AcquireResult.busy(localHolder(entry));
				}
				continue;
			}
			try {
				return request.provider.acquire(lockRequest);
			}
			catch (LockLimitExceededException ex) {
				synchronized (entry) {
					if (entry.releases == seen && entry.ownConnections == 0) {
						throw ex; // no local holder of this resource will give a connection back
					}
				}
				if (!awaitRelease(entry, seen, lockRequest)) {
					return AcquireResult.busy(localHolder(entry));
				}
			}
		}
	}

	/** Waits until a PESSIMISTIC hold of the entry has ended or given its connection back since {@code seen}. */
	private static boolean awaitRelease(LocalLocks.Entry entry, long seen, LockRequest lockRequest)
			throws InterruptedException {
		synchronized (entry) {
			while (entry.releases == seen) {
				long remaining = lockRequest.remainingNanos();
				if (remaining <= 0) {
					return false;
				}
				TimeUnit.NANOSECONDS.timedWait(entry, remaining);
			}
			return true;
		}
	}

	private static String localHolder(LocalLocks.Entry entry) {
		String holder = entry.holder;
		return ((holder != null) ? holder : "another thread") + " (this JVM)";
	}

	/**
	 * Counts the end of a PESSIMISTIC hold on a connection of the provider's own (the connection is back) and wakes
	 * threads waiting for one.
	 */
	private static void connectionReturned(LocalLocks.Entry entry) {
		synchronized (entry) {
			entry.ownConnections--;
			entry.releases++;
			entry.notifyAll();
		}
	}

	/**
	 * Records the current thread as the entry's holder. A PESSIMISTIC previous holder may not have cleared its
	 * fields yet (we were granted the row at its commit, and its thread clears them after): its hold observation is
	 * stopped here, and it no longer clears anything (see {@link LocalLocks.Entry#gateless}).
	 */
	private static void claim(LocalLocks.Entry entry, HeldLock lock, LockMode mode, String holder, Observation holding,
			LocalLocks.@Nullable Gateless gateless, LocalLocks.@Nullable LeaseHold lease) {
		Observation previous;
		synchronized (entry) {
			previous = (entry.gateless != null) ? entry.holding : null;
			entry.lease = lease;
			entry.held = lock;
			entry.mode = mode;
			entry.holder = holder;
			entry.holding = holding;
			entry.gateless = gateless;
			if (gateless != null && gateless.ownConnection) {
				entry.ownConnections++;
			}
		}
		if (previous != null) {
			previous.stop();
		}
	}

	/** Clears the entry's holder fields if the given PESSIMISTIC acquisition is still recorded as its holder. */
	private static void clearGateless(LocalLocks.Entry entry, LocalLocks.Gateless gateless) {
		Observation holding;
		synchronized (entry) {
			if (entry.gateless != gateless) {
				return; // the next holder has claimed the entry already
			}
			holding = entry.holding;
			entry.held = null;
			entry.holder = null;
			entry.holding = null;
			entry.gateless = null;
			entry.releases++;
			entry.notifyAll();
		}
		if (holding != null) {
			holding.stop();
		}
	}

	/**
	 * Called by {@link DefaultLockHandle#close()} on the acquiring thread.
	 * @param gateless the PESSIMISTIC acquisition the handle belongs to, {@code null} for a LEASE hold
	 * @param lease the LEASE acquisition the handle belongs to, {@code null} for a PESSIMISTIC hold
	 */
	void release(LocalLocks.Entry entry, HeldLock lock, LocalLocks.@Nullable Gateless gateless,
			LocalLocks.@Nullable LeaseHold lease) {
		if (gateless != null) {
			releaseGateless(entry, gateless);
			return;
		}
		Objects.requireNonNull(lease, "a LEASE handle has its hold");
		if (lease.holds == 1 && deferRelease(entry, lock, lease)) {
			return;
		}
		boolean superseded;
		synchronized (entry) {
			superseded = lease.superseded;
			if (!superseded && lease.holds == 1) {
				lease.closing = true; // from here on no local waiter takes the gate from this hold
			}
		}
		if (--lease.holds > 0) {
			leave(entry);
			return;
		}
		if (superseded) {
			// its lease was over and another hold has the gate now: release only this hold's own lease (an owner-checked
			// statement, which changes nothing once the lease has ended) and touch nothing of the entry's
			boolean released;
			try {
				released = lock.release();
			}
			finally {
				leave(entry);
			}
			if (!released) {
				throw new LockLostException(entry.resource, lock.fencingToken(), "Lock '" + entry.resource
						+ "' (fencing token " + lock.fencingToken() + ") was no longer held at release (its lease had "
						+ "ended before it was closed) and another owner may have taken it");
			}
			return;
		}
		synchronized (entry) {
			entry.lease = null;
			entry.held = null;
			entry.holder = null;
		}
		stopHolding(entry);
		boolean queued = entry.hasQueuedThreads();
		if (queued) {
			HeldLock successor = lock.handOff();
			if (successor != null) {
				// a local thread waits: pass the lock on in memory instead of releasing and re-taking it in the database
				entry.parked = successor;
				entry.releaseGate();
				leave(entry);
				return;
			}
		}
		boolean released;
		try {
			released = lock.release();
			long courtesy = queued ? lock.handOffCourtesyNanos() : 0;
			if (courtesy > 0) {
				// local threads still wait, and so does another node (as the release learned): they hold back for it
				entry.courtesyUntilNanos = System.nanoTime() + courtesy;
				entry.courtesyPending = true;
			}
		}
		finally {
			entry.releaseGate();
			leave(entry);
		}
		if (!released) {
			throw new LockLostException(entry.resource, lock.fencingToken(), "Lock '" + entry.resource
					+ "' (fencing token " + lock.fencingToken() + ") was no longer held at release (its lease had "
					+ "expired, or its connection failed) and another owner may have taken it");
		}
	}

	/**
	 * Defers the final release of a LEASE hold whose commit-time validation is pending in the current transaction
	 * until that transaction completes: released now, the lock could pass to another owner before the commit, and the
	 * validation would then roll back the transaction. Meanwhile the hold keeps the gate with no open handle (its
	 * thread may re-enter); once the transaction has completed, the hold is released as usual unless it was re-entered
	 * and is still open, and a loss found then is logged (the commit, if any, was validated under the row lock).
	 * @return whether the release was deferred (the hold count is then zero)
	 */
	private boolean deferRelease(LocalLocks.Entry entry, HeldLock lock, LocalLocks.LeaseHold lease) {
		CommitValidation.Check check = CommitValidation.pending(lock);
		if (check == null || lease.superseded) {
			return false;
		}
		lease.holds = 0;
		if (check.isDeferred()) {
			// re-entered and closed again in the same transaction: the release deferred at the first close does it;
			// this close only stops counting as a user of the entry
			leave(entry);
			return true;
		}
		check.deferUntilCompletion(() -> {
			if (lease.holds > 0) {
				return; // re-entered in the transaction and still open: its last close() releases
			}
			lease.holds = 1;
			try {
				release(entry, lock, null, lease);
			}
			catch (LockLostException ex) {
				// the commit, if any, was checked under the row lock; only the lease's end was found late
				logger.warn(ex.getMessage() + " (released after its transaction completed)");
			}
			catch (RuntimeException ex) {
				logger.warn("Could not release lock '" + entry.resource + "' after its transaction completed", ex);
			}
		});
		return true;
	}

	/**
	 * Ends the hold observation of a LEASE hold that was superseded because its lease was over, with a {@code lost}
	 * event, and says so in the log: the holder had not closed it in time.
	 */
	private static void superseded(String resource, LocalLocks.LeaseHold stale) {
		Observation holding = stale.holding;
		stale.holding = null;
		if (holding != null) {
			holding.event(LOST);
			holding.stop();
		}
		logger.warn("The lease of lock '" + resource + "' (fencing token " + stale.lock.fencingToken() + ", thread "
				+ stale.thread.getName() + ") ended before it was closed; the next local owner acquires anew, and the "
				+ "stale hold's close() will throw LockLostException");
	}

	/**
	 * Releases a hold of a PESSIMISTIC holder, which holds no gate. The holder fields are cleared before the
	 * database lock is released (the next holder may be granted the row at the commit); a transaction-bound lock is
	 * released by its transaction, after which the fields are cleared unless the next holder claimed them first.
	 */
	private void releaseGateless(LocalLocks.Entry entry, LocalLocks.Gateless gateless) {
		HeldLock lock = gateless.lock;
		if (--gateless.holds > 0) {
			leave(entry);
			return;
		}
		if (lock.isTransactionBound() && TransactionSynchronizationManager.isSynchronizationActive()) {
			// the row lock ends with the transaction; until then the thread may re-enter (the fields stay)
			afterTransaction(() -> {
				if (gateless.holds == 0) {
					clearGateless(entry, gateless);
				}
				leave(entry);
			});
			return;
		}
		clearGateless(entry, gateless);
		boolean released;
		try {
			released = lock.release();
		}
		finally {
			if (gateless.ownConnection) {
				connectionReturned(entry);
			}
			leave(entry);
		}
		if (!released) {
			throw new LockLostException(entry.resource, lock.fencingToken(), "Lock '" + entry.resource
					+ "' (fencing token " + lock.fencingToken() + ") was no longer held at release (its connection "
					+ "failed) and another owner may have taken it");
		}
	}

	/** Runs the action when the current (synchronized) transaction has completed, committed or rolled back. */
	private static void afterTransaction(Runnable action) {
		TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
			@Override
			public void afterCompletion(int status) {
				action.run();
			}
		});
	}

	private static void stopHolding(LocalLocks.Entry entry) {
		Observation holding = entry.holding;
		entry.holding = null;
		if (holding != null) {
			holding.stop();
		}
	}

	private String holderDescription() {
		return holderDescription(this.nodeName);
	}

	/**
	 * Describes the current thread of a node for a table's {@code holder} column: {@code node [thread]}, cut to 255
	 * code points.
	 */
	static String holderDescription(String nodeName) {
		String description = nodeName + " [" + Thread.currentThread().getName() + "]";
		if (description.codePointCount(0, description.length()) > MAX_HOLDER_LENGTH) {
			// the holder column counts characters; never cut an emoji's surrogate pair in half
			description = description.substring(0, description.offsetByCodePoints(0, MAX_HOLDER_LENGTH));
		}
		return description;
	}

	private static long saturatedNanos(Duration duration) {
		try {
			return duration.toNanos();
		}
		catch (ArithmeticException ex) {
			return Long.MAX_VALUE / 2;
		}
	}

	private record Request(String resource, LockProvider provider, LockMode mode, LockType type, Duration waitTime,
			Duration leaseTime, boolean renew, Duration minHoldTime) {

		Request withWaitTime(Duration waitTime) {
			return new Request(this.resource, this.provider, this.mode, this.type, waitTime, this.leaseTime, this.renew,
					this.minHoldTime);
		}

	}

	/** A thread's read/write hold of a resource. */
	private record ReadWriteKey(String resource, Thread owner) {
	}

	private record Attempt(@Nullable LockHandle handle, @Nullable String holder, @Nullable Throwable cause) {

		Attempt(@Nullable LockHandle handle, @Nullable String holder) {
			this(handle, holder, null);
		}

	}

}
