package io.github.dblock.jdbc.pessimistic;

import io.github.dblock.jdbc.sql.BoundedConnections;
import io.github.dblock.jdbc.sql.SqlErrors;
import java.sql.SQLTransientConnectionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.jspecify.annotations.Nullable;
import org.springframework.transaction.CannotCreateTransactionException;

/**
 * Ends a transaction manager's wait for a pooled connection, when it begins a transaction for a lock call, by the
 * call's own bound instead of the pool's {@code connectionTimeout}: at the bound the waiting thread is interrupted,
 * which ends the pool's wait (HikariCP, Commons DBCP and Tomcat's pool wait interruptibly), and the interrupt is
 * cleared again before the call goes on. Once the transaction has begun ({@link #began()}) nothing is interrupted.
 * The statements the transaction manager sends to begin (autocommit, isolation) run with the connection's own network
 * timeout. One per attempt, used by the thread that begins the transaction; the timer runs on one shared daemon
 * thread that ends when idle.
 */
final class TransactionBeginBound {

	private static final int WAITING = 0;

	private static final int BEGUN = 1;

	private static final int INTERRUPTING = 2;

	private static final int INTERRUPTED = 3;

	/** A bound that is never reached: the pool's own wait ends first. */
	static final TransactionBeginBound NONE = new TransactionBeginBound(null, 0);

	private static final ScheduledThreadPoolExecutor TIMER = timer();

	private final AtomicInteger state = new AtomicInteger(WAITING);

	private final @Nullable Thread thread;

	private final long waitNanos;

	private @Nullable ScheduledFuture<?> timeout;

	private TransactionBeginBound(@Nullable Thread thread, long waitNanos) {
		this.thread = thread;
		this.waitNanos = waitNanos;
	}

	/**
	 * Starts the bound for the current thread.
	 * @param waitNanos how long the transaction manager may wait for a pooled connection
	 * @param poolWaitNanos how long the pool itself waits ({@link BoundedConnections#poolWaitNanos}), or
	 * {@link Long#MAX_VALUE} when unknown: no timer is needed when that is shorter
	 */
	static TransactionBeginBound start(long waitNanos, long poolWaitNanos) {
		if (poolWaitNanos <= waitNanos) {
			return NONE;
		}
		TransactionBeginBound bound = new TransactionBeginBound(Thread.currentThread(), waitNanos);
		bound.timeout = TIMER.schedule(bound::reached, waitNanos, TimeUnit.NANOSECONDS);
		return bound;
	}

	/** The transaction has begun: from now on nothing is interrupted. Call first thing inside the transaction. */
	void began() {
		end();
	}

	/**
	 * Ends the bound: the timer is cancelled, and an interrupt it made is cleared.
	 * @return whether the bound was reached (the wait for a connection was interrupted, or would have been)
	 */
	boolean end() {
		if (this == NONE) {
			return false;
		}
		if (this.state.compareAndSet(WAITING, BEGUN)) {
			ScheduledFuture<?> timer = this.timeout;
			if (timer != null) {
				timer.cancel(false);
			}
			return false;
		}
		if (this.state.get() == BEGUN) {
			return false;
		}
		while (this.state.get() != INTERRUPTED) {
			Thread.onSpinWait(); // the timer thread is between its state change and the interrupt
		}
		Thread.interrupted(); // the interrupt this bound made
		this.state.set(BEGUN);
		return true;
	}

	/**
	 * The failure to report when the bound was reached before the transaction began: a connection failure
	 * ({@link SqlErrors#isConnectionFailure}) that names the lock, with the transaction manager's failure as its
	 * cause.
	 */
	CannotCreateTransactionException exceeded(String resource, RuntimeException failure) {
		SQLTransientConnectionException cause = new SQLTransientConnectionException("No pooled connection within "
				+ TimeUnit.NANOSECONDS.toMillis(this.waitNanos) + " ms for the transaction of lock '" + resource + "'");
		cause.initCause(failure);
		return new CannotCreateTransactionException("Could not begin the transaction of lock '" + resource
				+ "' within the call's bound", cause);
	}

	private void reached() {
		Thread waiting = this.thread;
		if (waiting != null && this.state.compareAndSet(WAITING, INTERRUPTING)) {
			waiting.interrupt();
			this.state.set(INTERRUPTED);
		}
	}

	private static ScheduledThreadPoolExecutor timer() {
		ScheduledThreadPoolExecutor timer = new ScheduledThreadPoolExecutor(1, (task) -> {
			Thread thread = new Thread(task, "dblock-transaction-begin-bound");
			thread.setDaemon(true);
			return thread;
		});
		timer.setRemoveOnCancelPolicy(true);
		timer.setKeepAliveTime(10, TimeUnit.SECONDS);
		timer.allowCoreThreadTimeOut(true);
		return timer;
	}

}
