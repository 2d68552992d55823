package io.github.dblock.wait;

import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

import org.apache.commons.logging.Log;
import org.jspecify.annotations.Nullable;
import org.springframework.core.NestedExceptionUtils;

/**
 * The one wait loop of the library: every provider and primitive that waits (LEASE, read/write leases, PESSIMISTIC on
 * its own connection, semaphores, idempotency claims, OPTIMISTIC's retries after a conflict) and the engine's
 * PESSIMISTIC transaction-per-attempt loop run their attempts here, until one succeeds or the caller's deadline
 * passes, with the shared {@link Backoff} (exponential, jittered) between attempts, {@link InterruptedException} on
 * interruption, and outage riding: an attempt that failed in a way {@link Wait#ridesOut} accepts (for the JDBC
 * providers a broken connection or an answer that came too late) is made again until the deadline, with one warning
 * per wait. What differs per caller (the attempt itself, when it ends the wait, the pause hint, the answer at the
 * deadline, the clean-up on giving up) is a {@link Wait}. Relies on no database feature.
 * <p>
 * One loop, per wait: the order of one round is
 * <ol>
 * <li>{@link Wait#attempt}; if it throws a {@link RuntimeException}: {@link Wait#contended} may count it as an
 * unsuccessful attempt (a deadlock that outlasted the retries); else, unless {@link Wait#ridesOut} it, it is thrown;
 * past the deadline {@link Wait#outageAtDeadline} answers; else the outage is warned of (once per wait) and the
 * attempt counts as {@link Wait#afterOutage};</li>
 * <li>{@link Wait#result} ends the wait with its answer when it has one;</li>
 * <li>past the deadline {@link Wait#atDeadline} answers;</li>
 * <li>an interrupted thread gets {@link InterruptedException} (its flag cleared);</li>
 * <li>the thread sleeps {@link Wait#pauseNanos} (0: the next attempt at once).</li>
 * </ol>
 * {@link Wait#ended} runs last whichever way the wait ended.
 * <p>
 * The loop starts attempts until the caller's deadline and never restarts a time bound: an attempt (and the answer
 * at the deadline) must itself end by one bound fixed when the call started; the JDBC providers give each wait one
 * call deadline (the caller's deadline plus the statement timeout plus 2 s) that bounds every pool wait and reply of
 * every attempt.
 * <p>
 * Immutable and thread-safe: one instance serves every wait of a provider; a {@link Wait} holds one wait's state,
 * and its methods run on the waiting thread only.
 */
public final class WaitLoop {

	private final Backoff backoff;

	private final Log logger;

	/**
	 * @param backoff the pauses between attempts
	 * @param logger where the one warning per wait about an outage goes (the provider's)
	 */
	public WaitLoop(Backoff backoff, Log logger) {
		this.backoff = backoff;
		this.logger = logger;
	}

	/**
	 * The pauses between attempts.
	 * @return the back-off given at construction, never {@code null}
	 */
	public Backoff backoff() {
		return this.backoff;
	}

	/**
	 * Runs one wait.
	 * @param remainingNanos the time left until the caller's deadline, in nanoseconds (0 or less: passed), e.g.
	 * {@code request::remainingNanos}
	 * @param wait the steps of this wait
	 * @param <A> what one attempt returns
	 * @param <R> the answer of the wait
	 * @return the answer of {@link Wait#result}, {@link Wait#atDeadline} or {@link Wait#outageAtDeadline}
	 * @throws InterruptedException if the thread was interrupted between attempts (or while an attempt waited)
	 * @throws RuntimeException a failure of an attempt that is neither {@link Wait#contended} nor ridden out, or one
	 * that {@link Wait#atDeadline} or {@link Wait#outageAtDeadline} throws
	 */
	public <A, R> R run(LongSupplier remainingNanos, Wait<A, R> wait) throws InterruptedException {
		@Nullable R answer = null;
		try {
			answer = loop(remainingNanos, wait);
			return answer;
		}
		finally {
			wait.ended(answer);
		}
	}

	private <A, R> R loop(LongSupplier remainingNanos, Wait<A, R> wait) throws InterruptedException {
		int outages = 0;
		for (int attempt = 0;; attempt++) {
			A outcome;
			try {
				outcome = wait.attempt(attempt);
			}
			catch (RuntimeException ex) {
				A contended = wait.contended(ex);
				if (contended != null) {
					outcome = contended;
				}
				else {
					if (!wait.ridesOut(ex)) {
						throw ex;
					}
					if (remainingNanos.getAsLong() <= 0) {
						return wait.outageAtDeadline(ex);
					}
					if (outages++ == 0) {
						this.logger.warn("Lost the connection to the lock database while " + wait.waitingFor()
								+ ", or it answered too slowly; retrying until the wait time ends: "
								+ NestedExceptionUtils.getMostSpecificCause(ex));
					}
					outcome = wait.afterOutage(ex);
				}
			}
			R result = wait.result(outcome);
			if (result != null) {
				return result;
			}
			long remaining = remainingNanos.getAsLong();
			if (remaining <= 0) {
				return wait.atDeadline(outcome);
			}
			if (Thread.interrupted()) {
				throw new InterruptedException();
			}
			TimeUnit.NANOSECONDS.sleep(wait.pauseNanos(outcome, attempt, remaining, this.backoff));
		}
	}

	/**
	 * The steps of one wait that differ per provider; one instance per wait (it may keep the wait's state, such as
	 * an owner token, whether an attempt's outcome is unknown, or what to clean up).
	 * @param <A> what one attempt returns
	 * @param <R> the answer of the wait
	 */
	public interface Wait<A, R> {

		/**
		 * Makes one attempt.
		 * @param attempt the number of attempts made before, from 0
		 * @throws RuntimeException on a failure (see the class comment for what the loop does with it)
		 * @throws InterruptedException if interrupted while the attempt waits
		 */
		A attempt(int attempt) throws InterruptedException;

		/**
		 * The answer that ends the wait after this attempt (such as the lock taken), or {@code null} to go on.
		 */
		@Nullable
		R result(A outcome);

		/** The answer when the deadline passed after this unsuccessful attempt (such as busy, with the holder). */
		R atDeadline(A outcome);

		/** What the wait is doing, for the outage warning: {@code "acquiring 'resource'"}. */
		String waitingFor();

		/**
		 * What a failed attempt counts as when the failure only says the resource is contended, or {@code null}
		 * (the default) when it is a failure: for a deadlock or lock wait timeout that outlasted an attempt's retries.
		 */
		@Nullable
		default A contended(RuntimeException ex) {
			return null;
		}

		/**
		 * Whether the wait goes on after this failure until the deadline (for the JDBC providers: a broken
		 * connection or a database that answered too slowly); {@code false} throws it. By default none is: a wait that
		 * rides out no failure implements neither this nor {@link #afterOutage} and {@link #outageAtDeadline}.
		 */
		default boolean ridesOut(RuntimeException ex) {
			return false;
		}

		/**
		 * What an attempt that met an outage counts as (an unsuccessful attempt); the place to note that its outcome
		 * is unknown. Only called for a failure {@link #ridesOut} accepted; by default it throws the failure.
		 */
		default A afterOutage(RuntimeException ex) {
			throw ex;
		}

		/**
		 * The answer when the deadline passed during an outage: for a lock, timed out with the failure as its cause
		 * unless the database was not reached at all (after a last look for a take whose reply was lost, where an
		 * attempt's outcome may be unknown).
		 * Only called for a failure {@link #ridesOut} accepted; by default it throws the failure.
		 * @throws RuntimeException to end the wait with a failure
		 */
		default R outageAtDeadline(RuntimeException ex) {
			throw ex;
		}

		/**
		 * The pause before the next attempt, in nanoseconds (0: at once); by default the back-off step of this
		 * attempt, knowing no lease.
		 * @param outcome the unsuccessful attempt
		 * @param attempt its number, from 0
		 * @param remainingNanos the time left until the deadline, positive
		 * @param backoff the loop's back-off
		 * @throws InterruptedException if interrupted while working out the pause
		 */
		default long pauseNanos(A outcome, int attempt, long remainingNanos, Backoff backoff)
				throws InterruptedException {
			return backoff.pauseNanos(attempt, 0, remainingNanos);
		}

		/**
		 * Runs last, however the wait ended: the clean-up of a wait that gave up (a withdrawn announcement, a cleared
		 * intent). Must not throw.
		 * @param answer the wait's answer, or {@code null} when it ended with an exception
		 */
		default void ended(@Nullable R answer) {
		}

	}

}
