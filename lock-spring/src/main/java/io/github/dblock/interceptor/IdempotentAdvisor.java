package io.github.dblock.interceptor;

import io.github.dblock.idempotency.Idempotent;

/**
 * Applies {@link IdempotentInterceptor} to methods that carry {@link Idempotent}. Unlike the lock advisors, its order
 * must place it inside the transaction advisor (see {@code distributed-lock.idempotency.order}), so that the recorded
 * outcome joins the method's transaction. Thread-safe.
 */
public class IdempotentAdvisor extends AnnotationMethodAdvisor {

	/**
	 * @param attributeSource decides which methods match (and parses their annotation)
	 * @param interceptor the advice
	 * @param order the advisor order
	 */
	public IdempotentAdvisor(IdempotentAttributeSource attributeSource, IdempotentInterceptor interceptor, int order) {
		super(Idempotent.class, (method, targetClass) -> attributeSource.getAttribute(method, targetClass) != null,
				interceptor, order);
	}

}
