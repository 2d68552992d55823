package io.github.dblock.engine;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

import io.github.dblock.CheckedLockCallback;
import io.github.dblock.LockCallback;
import io.github.dblock.LockHandle;
import io.github.dblock.LockInterruptedException;
import io.github.dblock.LockIntrospection;
import io.github.dblock.LockIntrospection.LocalHold;
import io.github.dblock.LockNotAcquiredException;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.LockType;
import io.github.dblock.spi.Backoff;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.spi.TransactionalLockProvider;
import io.github.dblock.spi.WaitLoop;
import io.github.dblock.spi.WorkLockProvider;
import io.micrometer.observation.Observation;
import org.jspecify.annotations.Nullable;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.transaction.TransactionSystemException;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The engine behind {@link LockTemplate}: takes a resolved {@link LockCall} to the JVM-local side
 * ({@link ExclusiveHolds}, {@link ReadWriteHolds}) and runs actions under locks in the way each mode needs (a work
 * provider's own transaction for OPTIMISTIC, a transaction per attempt for PESSIMISTIC outside any transaction, the
 * provider's transaction otherwise). Observes acquisitions. Thread-safe.
 */
public final class LockEngine {

	private static final org.apache.commons.logging.Log logger = org.apache.commons.logging.LogFactory
		.getLog(LockTemplate.class);

	/**
	 * Pauses between the attempts of a PESSIMISTIC {@code execute} that each run in a transaction of their own:
	 * 5 ms doubling to 100 ms, with jitter.
	 */
	private static final Backoff ATTEMPT_BACKOFF = new Backoff(Duration.ofMillis(5), Duration.ofMillis(100));

	/** The shared wait loop with {@link #ATTEMPT_BACKOFF}, warning once per wait of a lost connection. */
	private static final WaitLoop ATTEMPT_LOOP = new WaitLoop(ATTEMPT_BACKOFF, logger);

	private final LockSettings settings;

	private final ExclusiveHolds exclusive;

	private final ReadWriteHolds readWrite;

	private final LockIntrospection introspection = new Introspection();

	/** An engine with the given settings, holding nothing yet. */
	public LockEngine(LockSettings settings) {
		this.settings = settings;
		this.exclusive = new ExclusiveHolds(settings);
		this.readWrite = new ReadWriteHolds(settings);
	}

	/** The read-only view of this engine's holds and waiters, for diagnostics. */
	public LockIntrospection introspection() {
		return this.introspection;
	}

	/**
	 * Runs a callback that may throw a checked exception as {@link #execute(LockCall, LockCallback)} does; its
	 * checked exception is rethrown as it was.
	 */
	public <T, E extends Exception> @Nullable T executeChecked(LockCall call, CheckedLockCallback<T, E> action)
			throws E {
		return CheckedCalls.executeChecked(this, call, action);
	}

	/** Acquires for the current thread, observed as one {@code distributed.lock.acquire}. */
	public Attempt acquire(LockCall call) {
		if (call.provider() instanceof WorkLockProvider) {
			return acquireUnobserved(call); // refuses with a clear message
		}
		Observation observation = this.settings.acquisition(call.resource(), call.mode()).start();
		try {
			Attempt attempt = acquireUnobserved(call);
			observation.lowCardinalityKeyValue("outcome", (attempt.handle() != null) ? "acquired" : "timed_out");
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

	private Attempt acquireUnobserved(LockCall call) {
		return acquireUnobserved(call, null);
	}

	/**
	 * @param admission the gate taken for the call before its transaction began, or {@code null}
	 * ({@link ExclusiveHolds#admit})
	 */
	private Attempt acquireUnobserved(LockCall call, @Nullable Admission admission) {
		if (call.type() != LockType.EXCLUSIVE) {
			return this.readWrite.acquire(call);
		}
		if (call.provider() instanceof WorkLockProvider) {
			throw new IllegalArgumentException("Lock mode " + call.mode() + " has no lock to hold: its work runs in the "
					+ "transaction that checks the version. Use execute(...) or @DistributedLock for '" + call.resource() + "'");
		}
		return this.exclusive.acquire(call, admission);
	}

	/** Runs the action under the lock as {@link LockTemplate#execute(String, LockOptions, LockCallback)} describes. */
	public <T> @Nullable T execute(LockCall call, LockCallback<T> action) {
		if (call.provider() instanceof WorkLockProvider work) {
			return executeWork(work, call, action);
		}
		if (!(call.provider() instanceof TransactionalLockProvider transactional)) {
			return executeHolding(call, action, call.waitTime(), null, null);
		}
		if (!TransactionSynchronizationManager.isActualTransactionActive()
				&& TransactionSynchronizationManager.getResourceMap().isEmpty()) {
			return executeInTransactionsOfItsOwn(transactional, call, action);
		}
		return transactional.inTransaction(call.toLockRequest(call.deadlineNanos(), this.settings.holderDescription()),
				() -> executeHolding(call, action, call.waitTime(), null, null));
	}

	/**
	 * PESSIMISTIC {@code execute} outside any transaction, with nothing transactional bound to the thread (an
	 * open-in-view {@code EntityManager} is: a JPA transaction manager would begin on it and clear it at each
	 * rollback): every attempt is a transaction of its own, begun only once the attempt has the resource's local gate
	 * ({@link ExclusiveHolds#admit}) and the provider has made ready what the acquisition needs outside a transaction
	 * ({@link TransactionalLockProvider#prepareOutsideTransaction}): so the other threads of this JVM that wait for the
	 * resource queue in the JVM without a pooled connection, and no acquisition holds one connection while it waits for
	 * another (a small pool then serves the callers in turn instead of running dry). Inside a transaction the provider reports a row held
	 * under a lease (a LEASE-mode owner, or a minimum hold time) at once, since its locking statement has locked the
	 * row until the transaction ends and waiting would keep the LEASE holder from releasing. So while the wait time
	 * lasts, an attempt that was not granted the lock ends its transaction (the transaction manager rolls it back on
	 * the {@link LockNotAcquiredException}; it holds nothing but that attempt), and after a pause
	 * ({@link #ATTEMPT_BACKOFF}), announced in the row so that a LEASE holder's JVM holds its own threads back at its
	 * next release ({@link TransactionalLockProvider#announceNextAttempt}), a new transaction tries again. The
	 * action runs only in the attempt that holds the lock, so it never runs twice; a {@link LockNotAcquiredException}
	 * thrown by the action itself is not retried. A lost or unobtainable connection before the action started
	 * ({@link TransactionalLockProvider#isRetryableAttemptFailure}) is retried the same way, without the
	 * announcement.
	 */
	private <T> @Nullable T executeInTransactionsOfItsOwn(TransactionalLockProvider provider, LockCall call,
			LockCallback<T> action) {
		Attempts attempts = new Attempts(this.settings.acquisition(call.resource(), call.mode()).start());
		TransactionAttempts<T> wait = new TransactionAttempts<>(provider, call, action, attempts);
		try {
			return ATTEMPT_LOOP.run(wait::remainingNanos, wait).value();
		}
		catch (InterruptedException interrupted) {
			Thread.currentThread().interrupt();
			LockInterruptedException failure = new LockInterruptedException(call.resource(), interrupted);
			attempts.stop("failed", failure);
			throw failure;
		}
	}

	/** The result of one attempt's action, which may be {@code null}. */
	private record Done<T>(@Nullable T value) {
	}

	/**
	 * One attempt of {@link #executeInTransactionsOfItsOwn}: the action's result, or the acquisition's refusal, or
	 * (both {@code null}) an outage ridden out.
	 */
	private record Step<T>(@Nullable Done<T> done, @Nullable LockNotAcquiredException notAcquired,
			@Nullable RuntimeException outage) {
	}

	/** The steps of {@link #executeInTransactionsOfItsOwn} in the shared {@link WaitLoop}. */
	private final class TransactionAttempts<T> implements WaitLoop.Wait<Step<T>, Done<T>> {

		private final TransactionalLockProvider provider;

		private final LockCall call;

		private final LockCallback<T> action;

		private final Attempts attempts;

		private final long deadline;

		TransactionAttempts(TransactionalLockProvider provider, LockCall call, LockCallback<T> action,
				Attempts attempts) {
			this.provider = provider;
			this.call = call;
			this.action = action;
			this.attempts = attempts;
			this.deadline = call.deadlineNanos();
		}

		long remainingNanos() {
			return this.deadline - System.nanoTime();
		}

		@Override
		public Step<T> attempt(int attempt) throws InterruptedException {
			this.attempts.notAcquired = false;
			this.attempts.actionStarted = false;
			LockCall current = (attempt == 0) ? this.call
					: this.call.withWaitTime(Duration.ofNanos(Math.max(0, remainingNanos())));
			// the local gate first, then the transaction: local waiters queue without a pooled connection
			Admission admission = (current.type() == LockType.EXCLUSIVE)
					? LockEngine.this.exclusive.admit(current, this.deadline) : Admission.REENTRY;
			String refusedBy = admission.refusedBy();
			if (refusedBy != null) {
				return new Step<>(null, new LockNotAcquiredException(this.call.resource(), this.call.waitTime(), refusedBy),
						null);
			}
			try {
				LockRequest request = current.toLockRequest(this.deadline, LockEngine.this.settings.holderDescription());
				if (admission.isAdmitted()) {
					String busy = this.provider.prepareOutsideTransaction(request);
					if (busy != null) {
						return new Step<>(null,
								new LockNotAcquiredException(this.call.resource(), this.call.waitTime(), busy), null);
					}
				}
				Admission gate = admission.isAdmitted() ? admission : null;
				return new Step<>(new Done<>(this.provider.inTransaction(request,
						() -> executeHolding(current, this.action, this.call.waitTime(), this.attempts, gate))), null,
						null);
			}
			catch (LockNotAcquiredException ex) {
				if (!this.attempts.notAcquired) {
					this.attempts.stop("failed", ex); // not the acquisition's (no-op when it had succeeded)
					throw ex;
				}
				return new Step<>(null, ex, null);
			}
			catch (Error ex) {
				this.attempts.stop("failed", ex);
				throw ex;
			}
			finally {
				LockEngine.this.exclusive.giveBack(admission); // when the transaction never took it over
			}
		}

		@Override
		public @Nullable Done<T> result(Step<T> outcome) {
			return outcome.done();
		}

		@Override
		public Done<T> atDeadline(Step<T> outcome) {
			this.attempts.stop("timed_out", null);
			LockNotAcquiredException notAcquired = outcome.notAcquired();
			RuntimeException outage = outcome.outage();
			throw (notAcquired != null) ? notAcquired
					: (outage != null) ? notAnswered(this.call, outage)
							: new LockNotAcquiredException(this.call.resource(), this.call.waitTime(), null);
		}

		@Override
		public String waitingFor() {
			return "acquiring '" + this.call.resource() + "' (PESSIMISTIC)";
		}

		/**
		 * A lost or unobtainable connection before the action started: the attempt's transaction died with it, so a
		 * new attempt is safe. Any other failure ends the wait (and its observation).
		 */
		@Override
		public boolean ridesOut(RuntimeException ex) {
			boolean retry = !this.attempts.actionStarted && !hidesAnError(ex)
					&& this.provider.isRetryableAttemptFailure(ex);
			if (!retry) {
				this.attempts.stop("failed", ex); // no-op when the acquisition had already succeeded
			}
			return retry;
		}

		@Override
		public Step<T> afterOutage(RuntimeException ex) {
			return new Step<>(null, null, ex);
		}

		/**
		 * The wait time ran out during a failure before the action started: not acquired, naming the lock, its mode and
		 * the failure, unless the provider says the database could not be reached at all (then the failure itself).
		 */
		@Override
		public Done<T> outageAtDeadline(RuntimeException ex) {
			if (this.provider.isUnreachableFailure(ex)) {
				this.attempts.stop("failed", ex);
				throw ex;
			}
			this.attempts.stop("timed_out", ex);
			throw notAnswered(this.call, ex);
		}

		/** The back-off step; before an attempt after a refusal, announced to a LEASE holder's JVM. */
		@Override
		public long pauseNanos(Step<T> outcome, int attempt, long remainingNanos, Backoff backoff) {
			long pause = backoff.pauseNanos(attempt, 0, remainingNanos);
			if (outcome.notAcquired() != null && pause < remainingNanos) {
				announceNextAttempt(this.provider, this.call, pause + backoff.initial().toNanos());
			}
			return pause;
		}

	}

	/**
	 * The lock was not acquired because the database, or the pool of its connections, did not answer in time: a
	 * {@link LockNotAcquiredException} that names the lock, its mode and the failure (its cause).
	 */
	private static LockNotAcquiredException notAnswered(LockCall call, RuntimeException failure) {
		return new LockNotAcquiredException(call.resource(), call.waitTime(), null, "Could not acquire lock '"
				+ call.resource() + "' (" + call.mode() + ") within " + call.waitTime() + ": the database did not answer "
				+ "in time, or no pooled connection came in time for the lock's transaction ("
				+ NestedExceptionUtils.getMostSpecificCause(failure).getMessage() + "); each " + call.mode()
				+ " lock holds a connection of the lock DataSource's pool while it is held and while it waits in the "
				+ "database", failure);
	}

	/**
	 * Tells a LEASE holder's JVM that this waiter tries again soon, so that it lets the waiter in instead of passing
	 * the lock among its own threads; only a hint, so a failure is logged.
	 */
	private static void announceNextAttempt(TransactionalLockProvider provider, LockCall call, long withinNanos) {
		try {
			provider.announceNextAttempt(call.resource(), Duration.ofNanos(withinNanos));
		}
		catch (RuntimeException ex) {
			logger.debug("Could not announce the next attempt on lock '" + call.resource() + "'", ex);
		}
	}

	/**
	 * Whether the failure is a rollback's, thrown in place of an {@link Error} from the attempt (see
	 * {@code TransactionTemplate}): that must surface, not be retried as the rollback's connection failure.
	 */
	private static boolean hidesAnError(RuntimeException ex) {
		return ex instanceof TransactionSystemException rollback && rollback.getApplicationException() instanceof Error;
	}

	@SuppressWarnings("try") // the observation's scope is open for the try block, not used in it
	private <T> @Nullable T executeWork(WorkLockProvider provider, LockCall call,
			LockCallback<T> action) {
		this.exclusive.refuseWorkUnderHold(call.resource());
		WorkLockProvider.Outcome<T> outcome;
		Observation observation = this.settings.acquisition(call.resource(), call.mode()).start();
		try (Observation.Scope scope = observation.openScope()) {
			outcome = provider.execute(call.toLockRequest(call.deadlineNanos(), this.settings.holderDescription()),
					(held) -> {
						LockHandle handle = new WorkLockHandle(call.resource(), call.mode(), held.fencingToken(),
								this.exclusive);
						ThreadHolds.push(handle);
						try {
							return action.doWithLock(handle);
						}
						finally {
							ThreadHolds.pop(handle);
						}
					});
			observation.lowCardinalityKeyValue("outcome", outcome.committed() ? "acquired" : "timed_out");
		}
		catch (InterruptedException ex) {
			observation.lowCardinalityKeyValue("outcome", "failed").error(ex);
			Thread.currentThread().interrupt();
			throw new LockInterruptedException(call.resource(), ex);
		}
		catch (RuntimeException | Error ex) {
			observation.lowCardinalityKeyValue("outcome", "failed").error(ex);
			throw ex;
		}
		finally {
			observation.stop();
		}
		if (!outcome.committed()) {
			throw new LockNotAcquiredException(call.resource(), call.waitTime(), outcome.failure());
		}
		return outcome.value();
	}

	/**
	 * Acquires, runs the action and releases.
	 * @param reportedWaitTime the wait time a {@link LockNotAcquiredException} names (the caller's, also when this
	 * attempt had only the rest of it)
	 * @param attempts when not {@code null}, one of several attempts: the acquisition is observed by it rather than
	 * on its own, and it is told when the acquisition itself (not the action) failed
	 * @param admission the gate taken for the attempt before its transaction began, or {@code null}
	 */
	private <T> @Nullable T executeHolding(LockCall call, LockCallback<T> action,
			Duration reportedWaitTime, @Nullable Attempts attempts, @Nullable Admission admission) {
		T result;
		Attempt attempt = (attempts != null) ? acquireUnobserved(call, admission) : acquire(call);
		LockHandle lock = attempt.handle();
		if (lock == null) {
			if (attempts != null) {
				attempts.notAcquired = true;
			}
			throw new LockNotAcquiredException(call.resource(), reportedWaitTime, attempt.holder(), attempt.cause());
		}
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

	/** The view {@link #introspection()} returns: snapshots of the exclusive and read/write holds, no SQL. */
	private final class Introspection implements LockIntrospection {

		@Override
		public List<LocalHold> localHolds() {
			List<LocalHold> holds = new ArrayList<>(LockEngine.this.exclusive.localHolds());
			holds.addAll(LockEngine.this.readWrite.localHolds());
			holds.sort(Comparator.comparing(LocalHold::resource));
			return holds;
		}

		@Override
		public int localHeldCount() {
			return LockEngine.this.exclusive.heldCount() + LockEngine.this.readWrite.size();
		}

		@Override
		public int localResourceCount() {
			return LockEngine.this.exclusive.resourceCount() + LockEngine.this.readWrite.size();
		}

		@Override
		public boolean hasQueuedThreads(String resource) {
			return LockEngine.this.exclusive.hasQueuedThreads(resource);
		}

	}

}
