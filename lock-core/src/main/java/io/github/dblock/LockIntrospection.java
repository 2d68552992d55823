package io.github.dblock;

import java.util.List;

/**
 * A read-only view of the locks this JVM holds and waits for through one {@link LockTemplate}
 * ({@link LockTemplate#introspection()}), for diagnostics: the Actuator endpoint, the held-locks gauge, test
 * assertions. Every answer is a snapshot taken without asking the database. Thread-safe.
 */
public interface LockIntrospection {

	/**
	 * The locks this JVM holds now, sorted by resource: resource, mode, the holding thread's hold count (open
	 * handles), fencing token and holder description.
	 */
	List<LocalHold> localHolds();

	/** The number of locks this JVM holds now (exclusive ones per resource, read/write ones per owning thread). */
	int localHeldCount();

	/** The number of resources this JVM holds or waits for now (read/write locks: holds per owning thread). */
	int localResourceCount();

	/** Whether other threads of this JVM are queued for the resource's exclusive lock right now. */
	boolean hasQueuedThreads(String resource);

	/**
	 * A lock this JVM holds.
	 * @param resource the resource
	 * @param mode the mode it was taken in
	 * @param holdCount the holding thread's open handles (0 while a PESSIMISTIC lock waits for its transaction to end)
	 * @param fencingToken the acquisition's fencing token
	 * @param holder node and thread
	 * @param type {@link LockType#EXCLUSIVE}, or the side of a read/write lock held
	 */
	record LocalHold(String resource, LockMode mode, int holdCount, long fencingToken, String holder, LockType type) {

		/** An exclusive lock's hold. */
		public LocalHold(String resource, LockMode mode, int holdCount, long fencingToken, String holder) {
			this(resource, mode, holdCount, fencingToken, holder, LockType.EXCLUSIVE);
		}

	}

}
