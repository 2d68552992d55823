package io.github.dblock;

import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.LockProvider;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.spi.TransactionalLockProvider;
import org.jspecify.annotations.Nullable;

/**
 * The PESSIMISTIC side of one resource's {@link LocalLocks.Entry}: which local threads the gate let into the
 * database, whether a local PESSIMISTIC holder holds the row, and the connections its holders give back. The gate
 * admits one acquirer at a time while no local thread holds the row, and up to a bound while one does
 * ({@link #admit}): those wait in the server's row lock queue, each on a connection of its own, and the first of them
 * is granted the row at the holder's commit without a round trip between the two. An admitted acquirer behind another
 * local thread waits in the JVM instead while the provider cannot spare a connection ({@link #acquire}).
 * <p>
 * Guarded by its own monitor, which is notified whenever anything here changes. The entry calls {@link #claimed} and
 * {@link #cleared} under the entry's monitor; nothing here takes the entry's monitor, so the two are always taken in
 * that order. Thread-safe.
 */
final class DatabaseWaiters {

	/** Whether a local PESSIMISTIC holder is recorded as the entry's holder. */
	private boolean localHolder;

	/** PESSIMISTIC holds on connections of the provider's own that have not given their connection back yet. */
	private int ownConnections;

	/**
	 * How often a PESSIMISTIC holder has cleared its fields or given its connection back, or an admitted acquirer came
	 * back from the database. A local thread that waits in the JVM instead of the database (the provider could not
	 * spare a connection) waits for the next one.
	 */
	private long releases;

	/** PESSIMISTIC acquirers let past the gate to ask the database that have not come back from it. */
	private int admitted;

	/**
	 * Those of {@link #admitted} that are inside the provider's acquisition now (waiting in the server's row lock
	 * queue, or on its way there), not waiting in the JVM for a connection.
	 */
	private int asking;

	/**
	 * Waits, as the gate's owner, until the current PESSIMISTIC acquirer may ask the database, and counts it as
	 * admitted: at once when no other local thread is admitted; otherwise only while a local PESSIMISTIC holder
	 * holds the row (so that the admitted threads queue in InnoDB behind it rather than poll a row held elsewhere),
	 * fewer than {@code maxWaiters} are admitted, and all of those are inside the provider's acquisition (so that each
	 * asks the provider whether it can spare a connection after the one before it took its own). The caller lets the
	 * gate go once admitted, so that the next local thread may follow it into the server's queue, and calls
	 * {@link #leave()} when it is back, after it has claimed the entry if it was granted the row.
	 * @param deadlineNanos the {@link System#nanoTime()} until which to wait
	 * @param maxWaiters how many local threads of the resource may be admitted at once, at least 1
	 * @return whether it was admitted before the deadline
	 * @throws InterruptedException if interrupted while waiting; it is not admitted then
	 */
	synchronized boolean admit(long deadlineNanos, int maxWaiters) throws InterruptedException {
		while (this.admitted > 0 && (!this.localHolder || this.admitted >= maxWaiters || this.asking < this.admitted)) {
			long wait = deadlineNanos - System.nanoTime();
			if (wait <= 0) {
				return false;
			}
			TimeUnit.NANOSECONDS.timedWait(this, wait);
		}
		this.admitted++;
		return true;
	}

	/** Counts an admitted acquirer as back from the database, and wakes the threads waiting on it. */
	synchronized void leave() {
		this.admitted--;
		this.releases++;
		notifyAll();
	}

	/** Records a new holder of the entry: a PESSIMISTIC one ({@code pessimistic} not {@code null}) or another. */
	synchronized void claimed(@Nullable Gateless pessimistic) {
		this.localHolder = pessimistic != null;
		if (pessimistic != null && pessimistic.ownConnection) {
			this.ownConnections++;
		}
		notifyAll(); // a gate owner may wait to follow this holder into the server's queue (see admit)
	}

	/** Records that the PESSIMISTIC holder cleared its fields. */
	synchronized void cleared() {
		this.localHolder = false;
		this.releases++;
		notifyAll();
	}

	/**
	 * Counts the end of a PESSIMISTIC hold on a connection of the provider's own (the connection is back) and wakes
	 * threads waiting for one.
	 */
	synchronized void connectionReturned() {
		this.ownConnections--;
		this.releases++;
		notifyAll();
	}

	/**
	 * Asks the provider for the lock, as an admitted acquirer (or, for a provider that is not transactional, as the
	 * gate's owner). A PESSIMISTIC acquirer with another local thread ahead of it (a local holder, or an admitted
	 * thread already asking) waits in the database, on a connection of its own, only while the provider can spare one
	 * ({@link TransactionalLockProvider#canWaitInDatabase()}); otherwise, and when the provider refuses for its cap
	 * ({@link LockLimitExceededException}) while a local thread of the resource still has a connection to give back,
	 * it waits in the JVM until one of them is done, rather than fail.
	 * @param localHolder describes the local holder for a busy result
	 */
	AcquireResult acquire(LockProvider provider, LockRequest request, Supplier<String> localHolder)
			throws InterruptedException {
		TransactionalLockProvider pessimistic = (provider instanceof TransactionalLockProvider transactional)
				? transactional : null;
		while (true) {
			long seen = releases();
			if (pessimistic != null && hasLocalThreadAhead() && !pessimistic.canWaitInDatabase()) {
				if (!awaitRelease(seen, request)) {
					return AcquireResult.busy(localHolder.get());
				}
				continue;
			}
			LockLimitExceededException refused;
			try {
				return ask(provider, request, pessimistic != null);
			}
			catch (LockLimitExceededException ex) {
				refused = ex;
			}
			if (noConnectionToComeBack(seen)) {
				throw refused; // no local thread of this resource will give a connection back
			}
			if (!awaitRelease(seen, request)) {
				return AcquireResult.busy(localHolder.get());
			}
		}
	}

	/** One acquisition by the provider; a PESSIMISTIC acquirer is counted as asking meanwhile. */
	private AcquireResult ask(LockProvider provider, LockRequest request, boolean pessimistic)
			throws InterruptedException {
		if (!pessimistic) {
			return provider.acquire(request);
		}
		asking(1);
		try {
			return provider.acquire(request);
		}
		finally {
			asking(-1);
		}
	}

	private synchronized void asking(int change) {
		this.asking += change;
		if (change > 0) {
			notifyAll(); // the gate's owner may wait for it (see admit)
		}
	}

	private synchronized long releases() {
		return this.releases;
	}

	/**
	 * Whether another local thread will hold the row before an admitted acquirer that asks now: a local PESSIMISTIC
	 * holder, or an admitted thread inside the provider's acquisition.
	 */
	private synchronized boolean hasLocalThreadAhead() {
		return this.localHolder || this.asking > 0;
	}

	/**
	 * Whether no local thread will give a connection back to a thread that has seen {@code seen} releases: nothing
	 * ended since, no holder has a connection of the provider's own, and no admitted thread is asking.
	 */
	private synchronized boolean noConnectionToComeBack(long seen) {
		return this.releases == seen && this.ownConnections == 0 && this.asking == 0;
	}

	/**
	 * Waits until something that may free a connection happened since {@code seen}.
	 * @return whether it did before the request's deadline
	 */
	private synchronized boolean awaitRelease(long seen, LockRequest request) throws InterruptedException {
		while (this.releases == seen) {
			long remaining = request.remainingNanos();
			if (remaining <= 0) {
				return false;
			}
			TimeUnit.NANOSECONDS.timedWait(this, remaining);
		}
		return true;
	}

}
