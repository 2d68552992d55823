package io.github.dblock.autoconfigure;

/**
 * Observations and metrics of locks, under {@code distributed-lock.metrics.*}.
 * <p>
 * A group of {@link DistributedLockProperties}; not thread-safe (bound once at start-up, then only read).
 */
public class DistributedLockMetricsProperties {

	/**
	 * Whether the resource name becomes a metric tag. Off by default because resource names are often unbounded
	 * (order numbers); switch it on only when the application locks a small, fixed set of resources.
	 */
	private boolean resourceTag = false;

	public boolean isResourceTag() {
		return this.resourceTag;
	}

	public void setResourceTag(boolean resourceTag) {
		this.resourceTag = resourceTag;
	}

}
