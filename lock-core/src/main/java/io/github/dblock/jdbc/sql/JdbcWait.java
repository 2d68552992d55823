package io.github.dblock.jdbc.sql;

import io.github.dblock.spi.AcquireResult;
import io.github.dblock.wait.WaitLoop;
import org.jspecify.annotations.Nullable;
import org.springframework.dao.DataAccessException;

/**
 * A {@link WaitLoop.Wait} of a JDBC provider: its attempts fail with {@link DataAccessException}s, and it rides out
 * those that {@link SqlErrors} calls a broken connection or an answer that came too late. Any other
 * {@link RuntimeException} of an attempt is thrown. The methods taking a
 * {@link DataAccessException} are the ones a provider implements; the loop reaches them through the bridges here.
 * @param <A> what one attempt returns
 * @param <R> the answer of the wait
 * <p>
 * Internal machinery of the JDBC engine, public only so that the other {@code io.github.dblock.jdbc} packages
 * can use it: not API, may change in any release.
 */
public interface JdbcWait<A, R> extends WaitLoop.Wait<A, R> {

	@Override
	default @Nullable A contended(RuntimeException ex) {
		return (ex instanceof DataAccessException failure) ? contended(failure) : null;
	}

	/**
	 * What a failed attempt counts as when the failure only says the resource is contended, or {@code null} (the
	 * default) when it is a failure: for a deadlock or lock wait timeout that outlasted an attempt's retries.
	 */
	default @Nullable A contended(DataAccessException ex) {
		return null;
	}

	@Override
	default boolean ridesOut(RuntimeException ex) {
		return (ex instanceof DataAccessException failure) && ridesOut(failure);
	}

	/**
	 * Whether the wait goes on after this failure until the deadline: by default a broken connection or a database
	 * that answered too slowly.
	 */
	default boolean ridesOut(DataAccessException ex) {
		return SqlErrors.isConnectionFailure(ex) || SqlErrors.isTooSlow(ex);
	}

	/** Only reached for a failure {@link #ridesOut(RuntimeException)} accepted, so a {@link DataAccessException}. */
	@Override
	default A afterOutage(RuntimeException ex) {
		return afterOutage((DataAccessException) ex);
	}

	/** @see WaitLoop.Wait#afterOutage */
	A afterOutage(DataAccessException ex);

	/** Only reached for a failure {@link #ridesOut(RuntimeException)} accepted, so a {@link DataAccessException}. */
	@Override
	default R outageAtDeadline(RuntimeException ex) {
		return outageAtDeadline((DataAccessException) ex);
	}

	/** @see WaitLoop.Wait#outageAtDeadline */
	R outageAtDeadline(DataAccessException ex);

	/**
	 * The answer to a wait whose deadline passed during an outage, as the lock providers give it: timed out, with the
	 * failure as its cause, when the database was reached but did not answer in time (too slow, silent, or the
	 * connection broke on the last attempt); the failure itself when no connection could be made at all.
	 * @throws DataAccessException {@code ex}, when {@link SqlErrors#isUnreachable} says the database was not reached
	 */
	static AcquireResult timedOutUnlessUnreachable(DataAccessException ex) {
		if (!SqlErrors.isUnreachable(ex)) {
			return AcquireResult.timedOut(null, ex);
		}
		throw ex;
	}

}
