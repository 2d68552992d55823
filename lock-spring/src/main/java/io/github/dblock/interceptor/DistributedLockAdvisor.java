package io.github.dblock.interceptor;

import io.github.dblock.DistributedLock;

/**
 * Applies {@link DistributedLockInterceptor} to methods that carry {@link DistributedLock}. Its order must be
 * smaller (higher precedence) than the transaction advisor's so that the lock wraps the transaction.
 */
public class DistributedLockAdvisor extends AnnotationMethodAdvisor {

	/**
	 * @param attributeSource decides which methods match (and parses their annotation)
	 * @param interceptor the advice
	 * @param order the advisor order; see {@code distributed-lock.interceptor.order}
	 */
	public DistributedLockAdvisor(LockAttributeSource attributeSource, DistributedLockInterceptor interceptor, int order) {
		super(DistributedLock.class, (method, targetClass) -> attributeSource.getLockAttribute(method, targetClass) != null,
				interceptor, order);
	}

}
