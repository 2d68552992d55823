package io.github.dblock.interceptor;

import io.github.dblock.semaphore.DistributedSemaphore;

/**
 * Applies {@link DistributedSemaphoreInterceptor} to methods that carry {@link DistributedSemaphore}. Its order must
 * be smaller (higher precedence) than the transaction advisor's so that the permit wraps the transaction. Thread-safe.
 */
public class DistributedSemaphoreAdvisor extends AnnotationMethodAdvisor {

	/**
	 * @param attributeSource decides which methods match (and parses their annotation)
	 * @param interceptor the advice
	 * @param order the advisor order; {@code distributed-lock.interceptor.order}, as for locks
	 */
	public DistributedSemaphoreAdvisor(SemaphoreAttributeSource attributeSource,
			DistributedSemaphoreInterceptor interceptor, int order) {
		super(DistributedSemaphore.class,
				(method, targetClass) -> attributeSource.getSemaphoreAttribute(method, targetClass) != null, interceptor,
				order);
	}

}
