package io.github.dblock.autoconfigure;

/**
 * Start-up checks of the lock database's topology (read-only servers, replicas, multi-primary clusters), under
 * {@code distributed-lock.topology.*}.
 * <p>
 * A group of {@link DistributedLockProperties}; not thread-safe (bound once at start-up, then only read).
 */
public class DistributedLockTopologyProperties {

	/**
	 * Whether what makes locks unsafe stops the application: a read-only server or connection or a replica fails
	 * start-up, and on a Galera cluster or multi-primary group PESSIMISTIC mode is refused. When false, these are
	 * only logged at WARN (for a proxy that answers the check from another server than the lock statements reach).
	 */
	private boolean enforce = true;

	public boolean isEnforce() {
		return this.enforce;
	}

	public void setEnforce(boolean enforce) {
		this.enforce = enforce;
	}

}
