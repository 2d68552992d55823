package io.github.dblock.spi;

import java.util.function.Function;

import org.jspecify.annotations.Nullable;

/**
 * A provider whose locks exist only around a unit of work ({@link io.github.dblock.LockMode#OPTIMISTIC}): it
 * cannot hand out a lock to hold, so {@link #acquire(LockRequest)} is not supported and
 * {@link io.github.dblock.LockTemplate} calls {@link #execute(LockRequest, Function)} instead.
 */
public interface WorkLockProvider extends LockProvider {

	/**
	 * Runs the work under the lock, repeating it as the mode requires.
	 * @param request what to lock and until when to keep trying
	 * @param work the work; receives the lock as seen during the work
	 * @return the outcome: the result of the run that committed, or {@link Outcome#committed()} false with why no
	 * attempt committed (contention); never {@code null}
	 * @throws InterruptedException if interrupted between attempts
	 */
	<T> Outcome<T> execute(LockRequest request, Function<HeldLock, T> work) throws InterruptedException;

	/**
	 * The result of a unit of work, or the description of why it never committed.
	 * @param value the work's result when committed
	 * @param committed whether a run committed
	 * @param failure why no run committed, for the exception message
	 */
	record Outcome<T>(@Nullable T value, boolean committed, @Nullable String failure) {
	}

}
