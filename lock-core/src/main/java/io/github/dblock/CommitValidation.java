package io.github.dblock;

import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.TransactionCheckedLock;
import org.jspecify.annotations.Nullable;
import org.springframework.core.Ordered;
import org.springframework.transaction.TransactionExecution;
import org.springframework.transaction.TransactionExecutionListener;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Commit-time validation ({@code distributed-lock.validate-at-commit}): a transaction on the lock's data source that
 * runs while its thread holds a LEASE lock (exclusive, or the WRITE side of a read/write lock) commits only while that
 * lock is held. READ holds are not checked: readers share the lock, so a reader's commit has nothing exclusive to
 * protect.
 * <p>
 * For every such hold, a {@link TransactionSynchronization} is registered in the transaction; its
 * {@link TransactionSynchronization#beforeCommit beforeCommit} checks the lock row on the transaction's own connection
 * ({@link TransactionCheckedLock#lockRowInTransaction()}: a {@code SELECT ... FOR UPDATE} of the row by owner token
 * and unexpired lease, for a WRITE lock the resource's row and then its holder row, or on a multi-primary cluster a
 * write that certification orders against a take on another node; on MariaDB without its snapshot isolation, so that
 * a row changed since the transaction's first read does not fail the check). If the lock is no longer this hold's, it throws
 * {@link LockLostException} and the transaction rolls back; if it is, the row stays locked until the commit, so no
 * other owner can take the lock between the check and the commit. Read-only transactions are not checked.
 * <p>
 * Registration happens where a LEASE handle is handed out while a transaction is active ({@link LockTemplate}'s
 * acquisition and re-entry), and, for a lock taken before the transaction began (a {@code @DistributedLock} method
 * that is also {@code @Transactional}: the lock is taken outside the transaction), when the transaction begins: this
 * class is a {@link TransactionExecutionListener}, which the auto-configuration adds to every transaction manager
 * ({@code ConfigurableTransactionManager}); its {@link #afterBegin} registers the validation for each LEASE lock the
 * thread holds then. A hold whose last handle is closed while the transaction is still open keeps the lock until the
 * transaction has completed (see {@link LockTemplate}), since releasing it first would let another owner in before
 * the commit.
 * <p>
 * Stateless and thread-safe: all state lives in the transaction's synchronizations.
 */
public final class CommitValidation implements TransactionExecutionListener {

	/**
	 * Registers the validation of the current thread's LEASE locks (exclusive and WRITE holds) in a transaction that
	 * has just begun.
	 * @param transaction the transaction
	 * @param beginFailure the failure if the transaction could not begin ({@code null} if it began)
	 */
	@Override
	public void afterBegin(TransactionExecution transaction, @Nullable Throwable beginFailure) {
		if (beginFailure != null || !transaction.isNewTransaction()) {
			return;
		}
		for (LockHandle handle : CurrentLock.all()) {
			// also a hold whose lease has already ended by this JVM's clock: unchecked, its transaction could commit
			if (handle instanceof DefaultLockHandle open && open.mode() == LockMode.LEASE) {
				open.validateInTransaction();
			}
			else if (handle instanceof ReadWriteLockHandle readWrite) {
				readWrite.validateInTransaction(); // WRITE holds only
			}
		}
	}

	/**
	 * Registers the validation of a hold in the current transaction, if commit-time validation applies to it: a lock
	 * that can be checked in a transaction ({@link TransactionCheckedLock}), an active transaction with
	 * synchronization, on the lock's data source. Registers at most once per hold and transaction. No SQL runs.
	 * @param resource the resource, for messages
	 * @param held the hold
	 */
	static void register(String resource, HeldLock held) {
		if (!(held instanceof TransactionCheckedLock checked)
				|| !TransactionSynchronizationManager.isSynchronizationActive()
				|| !TransactionSynchronizationManager.isActualTransactionActive() || pending(held) != null
				|| !checked.inTransactionOfItsDatabase()) {
			return;
		}
		TransactionSynchronizationManager.registerSynchronization(new Check(resource, checked));
	}

	/**
	 * The validation registered for the hold in the current transaction and not completed yet, or {@code null}.
	 */
	@Nullable
	static Check pending(HeldLock held) {
		if (!TransactionSynchronizationManager.isSynchronizationActive()) {
			return null;
		}
		for (TransactionSynchronization synchronization : TransactionSynchronizationManager.getSynchronizations()) {
			if (synchronization instanceof Check check && check.lock == held && !check.completed) {
				return check;
			}
		}
		return null;
	}

	/** The check of one hold in one transaction. */
	static final class Check implements TransactionSynchronization {

		private final String resource;

		final TransactionCheckedLock lock;

		/** Set once the transaction has completed; a release is no longer deferred then. */
		volatile boolean completed;

		/** A release deferred until the transaction completes (its hold's last handle was closed in it). */
		@Nullable
		private Runnable afterCompletion;

		Check(String resource, TransactionCheckedLock lock) {
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

}
