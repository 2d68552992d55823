package io.github.dblock.spi;

/**
 * A capability of a {@link HeldLock} that lives in the same database as the application's data: it can be checked
 * inside the application's own transaction, so that the transaction commits only while the lock is held (commit-time
 * validation, {@code distributed-lock.validate-at-commit}).
 * <p>
 * Both methods are called on the thread that runs the transaction, with transaction synchronization active.
 */
public interface TransactionCheckedLock extends HeldLock {

	/**
	 * Whether the current thread runs an active Spring-managed transaction on the data source this lock lives in
	 * (a connection of that data source is bound to the thread), so that {@link #lockRowInTransaction()} can run in it.
	 * No SQL runs.
	 * @return {@code false} outside a transaction, or in a transaction on another data source
	 */
	boolean inTransactionOfItsDatabase();

	/**
	 * Checks, on the current transaction's connection, that this hold still has the lock, and if so locks the lock's
	 * row until that transaction ends, so that no other owner can take the lock before the transaction has committed
	 * or rolled back (an owner's take, a renewal and a release of the row wait for it). One statement, bounded by the
	 * statement timeout.
	 * @return {@code true} if the lock is still this hold's (its lease has not ended and it was not passed on); then
	 * the row is locked by the transaction. {@code false} if not; nothing is locked then
	 * @throws org.springframework.dao.DataAccessException if the statement failed (the transaction should roll back)
	 * @throws IllegalStateException if {@link #inTransactionOfItsDatabase()} is {@code false}
	 */
	boolean lockRowInTransaction();

}
