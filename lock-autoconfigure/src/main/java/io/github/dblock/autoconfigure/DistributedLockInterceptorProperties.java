package io.github.dblock.autoconfigure;

import io.github.dblock.interceptor.DistributedLocksConfiguration;

/**
 * The {@code @DistributedLock} method interceptor, under {@code distributed-lock.interceptor.*}.
 * <p>
 * A group of {@link DistributedLockProperties}; not thread-safe (bound once at start-up, then only read).
 */
public class DistributedLockInterceptorProperties {

	/**
	 * Order of the @DistributedLock advisor. Must be smaller than the transaction advisor's order (Integer.MAX_VALUE
	 * by default) for the lock to be taken before the method's transaction begins and released after it ends.
	 */
	private int order = DistributedLocksConfiguration.DEFAULT_INTERCEPTOR_ORDER;

	public int getOrder() {
		return this.order;
	}

	public void setOrder(int order) {
		this.order = order;
	}

}
