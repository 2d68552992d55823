package io.github.dblock.engine;

import io.github.dblock.LockLostException;
import io.github.dblock.spi.HeldLock;
import io.micrometer.observation.Observation;
import org.jspecify.annotations.Nullable;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The release of an exclusive hold at its handle's close: a LEASE handed off to the next local thread of its mode or
 * released in the database (after the transaction whose commit it validates, if any), a PESSIMISTIC hold with or
 * after its transaction. Thread-safe (each call works on the closing thread's own hold).
 */
final class ExclusiveRelease {

	private static final org.apache.commons.logging.Log logger = org.apache.commons.logging.LogFactory
		.getLog(ExclusiveRelease.class);

	private final LocalLocks locals;

	private final LockSettings settings;

	ExclusiveRelease(LocalLocks locals, LockSettings settings) {
		this.locals = locals;
		this.settings = settings;
	}

	/** The settings the handles of these holds validate commits with. */
	LockSettings settings() {
		return this.settings;
	}

	/**
	 * Called by {@link ExclusiveHandle#close()} on the acquiring thread.
	 * @param pessimisticHold the PESSIMISTIC acquisition the handle belongs to, {@code null} for a LEASE hold
	 * @param lease the LEASE acquisition the handle belongs to, {@code null} for a PESSIMISTIC hold
	 * @throws LockLostException if the lock was no longer held at release
	 */
	void release(LocalLock entry, HeldLock lock, @Nullable PessimisticHold pessimisticHold,
			@Nullable LeaseHold lease) {
		if (pessimisticHold != null) {
			releasePessimisticHold(entry, pessimisticHold);
			return;
		}
		if (lease == null) {
			throw new IllegalStateException("a LEASE handle has its hold");
		}
		if (lease.holds == 1 && deferRelease(entry, lock, lease)) {
			return;
		}
		boolean superseded = entry.beginClosing(lease);
		if (--lease.holds > 0) {
			this.locals.leave(entry);
			return;
		}
		if (superseded) {
			releaseSuperseded(entry, lock);
			return;
		}
		stop(entry.clearLease());
		boolean queued = entry.hasQueuedThreads();
		if (queued && entry.nextInLineAsks(lease.mode)) {
			HeldLock successor = lock.handOff();
			if (successor != null) {
				// a local thread of the same mode waits: pass the lock on in memory instead of releasing and re-taking it
				// in the database (a thread of another mode takes its own lock from the database)
				entry.handOff.park(successor, lease.mode);
				entry.releaseGate();
				this.locals.leave(entry);
				return;
			}
		}
		releaseLease(entry, lock, queued);
	}

	/** Releases a LEASE in the database and lets the gate go; the holder fields are cleared already. */
	private void releaseLease(LocalLock entry, HeldLock lock, boolean queued) {
		boolean released;
		try {
			released = lock.release();
			long courtesy = queued ? lock.handOffCourtesyNanos() : 0;
			if (courtesy > 0) {
				// local threads still wait, and so does another node (as the release learned): they hold back for it
				entry.handOff.holdBackFor(courtesy);
			}
		}
		finally {
			entry.releaseGate();
			this.locals.leave(entry);
		}
		if (!released) {
			throw new LockLostException(entry.resource, lock.fencingToken(), "Lock '" + entry.resource
					+ "' (fencing token " + lock.fencingToken() + ") was no longer held at release (its lease had "
					+ "expired, or its connection failed) and another owner may have taken it");
		}
	}

	/**
	 * Releases a hold whose lease was over while another hold has the gate now: only this hold's own lease (an
	 * owner-checked statement, which changes nothing once the lease has ended), touching nothing of the entry's.
	 */
	private void releaseSuperseded(LocalLock entry, HeldLock lock) {
		boolean released;
		try {
			released = lock.release();
		}
		finally {
			this.locals.leave(entry);
		}
		if (!released) {
			throw new LockLostException(entry.resource, lock.fencingToken(), "Lock '" + entry.resource
					+ "' (fencing token " + lock.fencingToken() + ") was no longer held at release (its lease had "
					+ "ended before it was closed) and another owner may have taken it");
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
	private boolean deferRelease(LocalLock entry, HeldLock lock, LeaseHold lease) {
		CommitCheck check = CommitCheck.pending(lock);
		if (check == null || lease.superseded) {
			return false;
		}
		lease.holds = 0;
		if (check.isDeferred()) {
			// re-entered and closed again in the same transaction: the release deferred at the first close does it;
			// this close only stops counting as a user of the entry
			this.locals.leave(entry);
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
	 * Releases a hold of a PESSIMISTIC holder, which holds no gate. The holder fields are cleared before the
	 * database lock is released (the next holder may be granted the row at the commit); a transaction-bound lock is
	 * released by its transaction, after which the fields are cleared unless the next holder claimed them first.
	 */
	private void releasePessimisticHold(LocalLock entry, PessimisticHold pessimisticHold) {
		HeldLock lock = pessimisticHold.lock;
		if (--pessimisticHold.holds > 0) {
			this.locals.leave(entry);
			return;
		}
		if (lock.isTransactionBound() && TransactionSynchronizationManager.isSynchronizationActive()) {
			// the row lock ends with the transaction; until then the thread may re-enter (the fields stay)
			afterTransaction(() -> {
				if (pessimisticHold.holds == 0) {
					stop(entry.clearPessimisticHold(pessimisticHold));
				}
				this.locals.leave(entry);
			});
			return;
		}
		stop(entry.clearPessimisticHold(pessimisticHold));
		boolean released;
		try {
			released = lock.release();
		}
		finally {
			if (pessimisticHold.ownConnection) {
				entry.connections.connectionReturned();
			}
			this.locals.leave(entry);
		}
		if (!released) {
			throw new LockLostException(entry.resource, lock.fencingToken(), "Lock '" + entry.resource
					+ "' (fencing token " + lock.fencingToken() + ") was no longer held at release (its connection "
					+ "failed) and another owner may have taken it");
		}
	}

	private static void stop(@Nullable Observation observation) {
		if (observation != null) {
			observation.stop();
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

}
