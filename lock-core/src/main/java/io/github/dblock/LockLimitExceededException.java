package io.github.dblock;

/**
 * Thrown when a {@link LockMode#PESSIMISTIC} lock is requested while this JVM already holds or awaits as many
 * pessimistic locks on their own connections as {@code distributed-lock.pessimistic.max-connections} allows.
 * Each such lock pins a connection of the pool for as long as it is held, so the cap keeps locks from starving
 * the application's other database work. Nothing is held when this is thrown.
 */
public class LockLimitExceededException extends DistributedLockException {

	private final int limit;

	public LockLimitExceededException(String resource, int limit) {
		super(resource, "Cannot lock '" + resource + "' in PESSIMISTIC mode: this JVM already holds or awaits " + limit
				+ " pessimistic locks on their own connections (distributed-lock.pessimistic.max-connections=" + limit
				+ "). Raise the limit, give locks their own pool with @LockDataSource, or use LEASE mode.", null);
		this.limit = limit;
	}

	/** The configured limit. */
	public int getLimit() {
		return this.limit;
	}

}
