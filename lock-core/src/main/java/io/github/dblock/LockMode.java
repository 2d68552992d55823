package io.github.dblock;

/**
 * How a distributed lock is implemented in the database.
 * <p>
 * Every mode gives mutual exclusion between owners (threads of this JVM and of other JVMs), per-thread
 * reentrancy and a strictly increasing fencing token per resource. They differ in what a crash of the
 * holder costs and in what they hold while the lock is held.
 */
public enum LockMode {

	/**
	 * A lease row: the holder's owner token and an expiry instant computed from the database server's clock
	 * ({@code UTC_TIMESTAMP(6)}) are written with one short autocommit statement, and cleared with one
	 * owner-checked statement on release. No connection or transaction is held while the lock is held. If the
	 * holder dies, the lock becomes free when its lease time has passed on the server's clock. If the holder
	 * runs longer than its lease, another owner can take the lock: protect writes with the fencing token. The only
	 * mode that also offers read/write locks ({@link LockType#READ}, {@link LockType#WRITE}), as leases of their own.
	 */
	LEASE,

	/**
	 * An InnoDB exclusive row lock on the resource's row, held by a transaction: the row is locked (and its
	 * fencing token advanced) by one {@code UPDATE} by primary key, and the lock ends when the transaction
	 * commits or rolls back. If the holder's process dies or its connection drops, the server releases the lock
	 * at once: there is no lease to wait out. Waiting uses the server's own lock queue (no polling), bounded by
	 * the wait time rounded up to whole seconds (the unit of {@code innodb_lock_wait_timeout}); a wait time of
	 * zero fails at once if the row is locked. Every held lock pins a database connection and an open
	 * transaction. Inside a Spring transaction on the lock data source the lock joins that transaction;
	 * otherwise it runs its own.
	 */
	PESSIMISTIC,

	/**
	 * Optimistic compare-and-set: the work runs in a transaction without excluding anyone; just before commit,
	 * one {@code UPDATE ... WHERE resource = ? AND fencing_token = ?} checks that nobody else committed work
	 * under this resource since the work began (the fencing token serves as the version). If someone did, the
	 * transaction rolls back and the work is run again, up to {@code distributed-lock.optimistic.max-attempts}
	 * times. Only available through {@link LockTemplate#execute} and {@link DistributedLock}: the work must be
	 * safe to re-run and must write through the lock data source, in that transaction.
	 */
	OPTIMISTIC

}
