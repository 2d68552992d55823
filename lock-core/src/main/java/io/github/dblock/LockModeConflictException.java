package io.github.dblock;

/**
 * Thrown at once, without waiting and without touching the database, when a thread that holds an exclusive lock asks
 * for the same resource, through the same {@link LockTemplate}, in another {@link LockMode}: for example a
 * PESSIMISTIC lock while it holds the LEASE lock (also one whose release waits for its transaction to complete), a
 * LEASE lock while it holds the PESSIMISTIC one, or OPTIMISTIC work under either. Re-entry gives the holding thread
 * another hold of the lock it has; a hold of another mode would be a different lock with different guarantees (a
 * LEASE passed off as a PESSIMISTIC hold would not keep its row locked until the transaction commits), and acquiring
 * it anew would wait for the thread itself until the wait time ran out. Use one mode per resource, or release the
 * first hold before asking in the other mode. A programming error, like {@link IllegalStateException}; the lock the
 * thread holds stays held.
 */
public class LockModeConflictException extends DistributedLockException {

	private final LockMode heldMode;

	private final LockMode requestedMode;

	/**
	 * @param resource the resource name
	 * @param heldMode the mode the current thread holds the resource in
	 * @param requestedMode the mode the refused call asked for
	 */
	public LockModeConflictException(String resource, LockMode heldMode, LockMode requestedMode) {
		super(resource, "Lock '" + resource + "': the current thread holds it in mode " + heldMode
				+ " and asked for it in mode " + requestedMode + "; a thread re-enters a lock only in the mode it holds"
				+ " (a hold of another mode would not give that mode's guarantees, and waiting for it would wait for"
				+ " this thread). Use one mode per resource, or release the " + heldMode + " lock first", null);
		this.heldMode = heldMode;
		this.requestedMode = requestedMode;
	}

	/** The mode the thread holds the resource in. */
	public LockMode getHeldMode() {
		return this.heldMode;
	}

	/** The mode the refused call asked for. */
	public LockMode getRequestedMode() {
		return this.requestedMode;
	}

}
