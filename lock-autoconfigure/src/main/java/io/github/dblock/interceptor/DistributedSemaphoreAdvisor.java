package io.github.dblock.interceptor;

import java.lang.reflect.Method;

import io.github.dblock.DistributedSemaphore;
import org.aopalliance.aop.Advice;
import org.springframework.aop.ClassFilter;
import org.springframework.aop.Pointcut;
import org.springframework.aop.support.AbstractPointcutAdvisor;
import org.springframework.aop.support.StaticMethodMatcherPointcut;
import org.springframework.core.annotation.AnnotationUtils;

/**
 * Applies {@link DistributedSemaphoreInterceptor} to methods that carry {@link DistributedSemaphore}. Its order must
 * be smaller (higher precedence) than the transaction advisor's so that the permit wraps the transaction.
 */
public class DistributedSemaphoreAdvisor extends AbstractPointcutAdvisor {

	private final transient Pointcut pointcut;

	private final transient Advice advice;

	/**
	 * @param attributeSource decides which methods match (and parses their annotation)
	 * @param interceptor the advice
	 * @param order the advisor order; {@code distributed-lock.interceptor.order}, as for locks
	 */
	public DistributedSemaphoreAdvisor(SemaphoreAttributeSource attributeSource,
			DistributedSemaphoreInterceptor interceptor, int order) {
		this.advice = interceptor;
		this.pointcut = new StaticMethodMatcherPointcut() {

			@Override
			public boolean matches(Method method, Class<?> targetClass) {
				return attributeSource.getSemaphoreAttribute(method, targetClass) != null;
			}

			@Override
			public ClassFilter getClassFilter() {
				return (clazz) -> AnnotationUtils.isCandidateClass(clazz, DistributedSemaphore.class);
			}

		};
		setOrder(order);
	}

	@Override
	public Pointcut getPointcut() {
		return this.pointcut;
	}

	@Override
	public Advice getAdvice() {
		return this.advice;
	}

}
