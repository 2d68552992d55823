package io.github.dblock.engine;

/**
 * A handle whose hold can have its commits validated: {@link ThreadHolds#validateInNewTransaction()} asks each of the
 * current thread's handles that is one to register commit-time validation in the transaction just begun. Implemented
 * by {@link ExclusiveHandle} and {@link ReadWriteLockHandle}; called on the owning thread.
 */
interface CommitValidatedHold {

	/**
	 * Registers commit-time validation of this hold in the transaction that has just begun on the owning thread, if
	 * it is a hold whose commits are validated (a LEASE exclusive or LEASE WRITE hold). No SQL runs.
	 */
	void validateInTransaction();

}
