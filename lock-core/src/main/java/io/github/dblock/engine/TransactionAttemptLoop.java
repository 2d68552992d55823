package io.github.dblock.engine;

import java.time.Duration;

import io.github.dblock.LockCallback;
import io.github.dblock.LockInterruptedException;
import io.github.dblock.LockNotAcquiredException;
import io.github.dblock.LockType;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.spi.TransactionalLockProvider;
import io.github.dblock.wait.Backoff;
import io.github.dblock.wait.WaitLoop;
import org.jspecify.annotations.Nullable;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.transaction.TransactionSystemException;

/**
 * A PESSIMISTIC {@code execute} outside any transaction as a loop of attempts, each a transaction of its own begun
 * once the attempt has the resource's local gate ({@link #execute}). Thread-safe.
 */
final class TransactionAttemptLoop {

	private static final org.apache.commons.logging.Log logger = org.apache.commons.logging.LogFactory
		.getLog(TransactionAttemptLoop.class);

	/**
	 * Pauses between the attempts of a PESSIMISTIC {@code execute} that each run in a transaction of their own:
	 * 5 ms doubling to 100 ms, with jitter.
	 */
	private static final Backoff ATTEMPT_BACKOFF = new Backoff(Duration.ofMillis(5), Duration.ofMillis(100));

	/** The shared wait loop with {@link #ATTEMPT_BACKOFF}, warning once per wait of a lost connection. */
	private static final WaitLoop ATTEMPT_LOOP = new WaitLoop(ATTEMPT_BACKOFF, logger);

	private final LockSettings settings;

	private final ExclusiveHolds exclusive;

	private final Acquisitions acquisitions;

	TransactionAttemptLoop(LockSettings settings, ExclusiveHolds exclusive, Acquisitions acquisitions) {
		this.settings = settings;
		this.exclusive = exclusive;
		this.acquisitions = acquisitions;
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
	<T> @Nullable T execute(TransactionalLockProvider provider, LockCall call,
			LockCallback<T> action) {
		ExecuteAttempts attempts = new ExecuteAttempts(this.settings.acquisition(call.resource(), call.mode()).start());
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
	 * One attempt of {@link #execute}: the action's result, or the acquisition's refusal, or
	 * (both {@code null}) an outage ridden out.
	 */
	private record Step<T>(@Nullable Done<T> done, @Nullable LockNotAcquiredException notAcquired,
			@Nullable RuntimeException outage) {
	}

	/** The steps of {@link #execute} in the shared {@link WaitLoop}. */
	private final class TransactionAttempts<T> implements WaitLoop.Wait<Step<T>, Done<T>> {

		private final TransactionalLockProvider provider;

		private final LockCall call;

		private final LockCallback<T> action;

		private final ExecuteAttempts attempts;

		private final long deadline;

		TransactionAttempts(TransactionalLockProvider provider, LockCall call, LockCallback<T> action,
				ExecuteAttempts attempts) {
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
					? TransactionAttemptLoop.this.exclusive.admit(current, this.deadline) : Admission.REENTRY;
			String refusedBy = admission.refusedBy();
			if (refusedBy != null) {
				return new Step<>(null, new LockNotAcquiredException(this.call.resource(), this.call.waitTime(), refusedBy),
						null);
			}
			try {
				LockRequest request = current.toLockRequest(this.deadline, TransactionAttemptLoop.this.settings.holderDescription());
				if (admission.isAdmitted()) {
					String busy = this.provider.prepareOutsideTransaction(request);
					if (busy != null) {
						return new Step<>(null,
								new LockNotAcquiredException(this.call.resource(), this.call.waitTime(), busy), null);
					}
				}
				Admission gate = admission.isAdmitted() ? admission : null;
				return new Step<>(new Done<>(this.provider.inTransaction(request,
						() -> TransactionAttemptLoop.this.acquisitions.executeHolding(current, this.action, this.call.waitTime(), this.attempts, gate))), null,
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
				TransactionAttemptLoop.this.exclusive.giveBack(admission); // when the transaction never took it over
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

}
