package io.github.dblock;

import io.github.dblock.engine.ThreadHolds;
import io.github.dblock.spi.TransactionCheckedLock;
import org.jspecify.annotations.Nullable;
import org.springframework.transaction.TransactionExecution;
import org.springframework.transaction.TransactionExecutionListener;
import org.springframework.transaction.support.TransactionSynchronization;

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
		ThreadHolds.validateInNewTransaction();
	}

}
