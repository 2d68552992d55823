package io.github.dblock.engine;

import io.github.dblock.LockLostException;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.TransactionCheckedLock;
import org.jspecify.annotations.Nullable;
import org.springframework.core.Ordered;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Commit-time validation of one LEASE hold (exclusive, or WRITE) in one transaction: a
 * {@link TransactionSynchronization}, ordered last, whose {@link #beforeCommit} locks the hold's row on the
 * transaction's own connection ({@link TransactionCheckedLock#lockRowInTransaction()}) and rolls the transaction back
 * with {@link LockLostException} if the lock is no longer the hold's. It can defer the hold's final release until the
 * transaction has completed. See {@link io.github.dblock.CommitValidation} and docs/DESIGN.md ("Commit-time
 * validation"). Used by the thread that runs the transaction.
 */
final class CommitCheck implements TransactionSynchronization {

	/**
	 * Registers the validation of a hold in the current transaction, if commit-time validation applies to it: a lock
	 * that can be checked in a transaction ({@link TransactionCheckedLock}), an active transaction with
	 * synchronization, on the lock's data source. Registers at most once per hold and transaction. No SQL runs.
	 * @param resource the resource, for messages
	 * @param held the hold
	 */
	static void register(String resource, HeldLock held) {
		TransactionCheckedLock checked = Capabilities.transactionChecked(held);
		if (checked == null || !TransactionSynchronizationManager.isSynchronizationActive()
				|| !TransactionSynchronizationManager.isActualTransactionActive() || pending(held) != null
				|| !checked.inTransactionOfItsDatabase()) {
			return;
		}
		TransactionSynchronizationManager.registerSynchronization(new CommitCheck(resource, checked));
	}

	/**
	 * The validation registered for the hold in the current transaction and not completed yet, or {@code null}.
	 */
	@Nullable
	static CommitCheck pending(HeldLock held) {
		if (!TransactionSynchronizationManager.isSynchronizationActive()) {
			return null;
		}
		for (TransactionSynchronization synchronization : TransactionSynchronizationManager.getSynchronizations()) {
			if (synchronization instanceof CommitCheck check && check.lock == held && !check.completed) {
				return check;
			}
		}
		return null;
	}

	private final String resource;

	final TransactionCheckedLock lock;

	/** Set once the transaction has completed; a release is no longer deferred then. */
	volatile boolean completed;

	/** A release deferred until the transaction completes (its hold's last handle was closed in it). */
	@Nullable
	private Runnable afterCompletion;

	CommitCheck(String resource, TransactionCheckedLock lock) {
		this.resource = resource;
		this.lock = lock;
	}

	/** Runs the action (a deferred release) once the transaction has completed, committed or rolled back. */
	void deferUntilCompletion(Runnable action) {
		this.afterCompletion = action;
	}

	/** Whether a release is already deferred until this check's transaction completes. */
	boolean isDeferred() {
		return this.afterCompletion != null;
	}

	/** Last among the synchronizations: after them, nothing but the commit writes. */
	@Override
	public int getOrder() {
		return Ordered.LOWEST_PRECEDENCE;
	}

	@Override
	public void beforeCommit(boolean readOnly) {
		if (readOnly) {
			return;
		}
		if (!this.lock.lockRowInTransaction()) {
			throw new LockLostException(this.resource, this.lock.fencingToken(), "Lock '" + this.resource
					+ "' (fencing token " + this.lock.fencingToken() + ") was no longer held when its transaction "
					+ "was about to commit (its lease had ended, or another owner had taken it); the transaction "
					+ "is rolled back");
		}
	}

	@Override
	public void afterCompletion(int status) {
		this.completed = true;
		Runnable action = this.afterCompletion;
		this.afterCompletion = null;
		if (action != null) {
			action.run();
		}
	}

}
