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
	 * runs longer than its lease, another owner can take the lock: protect writes with the fencing token.
	 */
	LEASE

}
