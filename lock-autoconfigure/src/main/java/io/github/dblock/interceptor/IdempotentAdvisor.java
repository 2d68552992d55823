package io.github.dblock.interceptor;

import java.lang.reflect.Method;

import io.github.dblock.Idempotent;
import org.aopalliance.aop.Advice;
import org.springframework.aop.ClassFilter;
import org.springframework.aop.Pointcut;
import org.springframework.aop.support.AbstractPointcutAdvisor;
import org.springframework.aop.support.StaticMethodMatcherPointcut;
import org.springframework.core.annotation.AnnotationUtils;

/**
 * Applies {@link IdempotentInterceptor} to methods that carry {@link Idempotent}. Its order must place it inside the
 * transaction advisor (see {@code distributed-lock.idempotency.order}), so that the recorded outcome joins the
 * method's transaction.
 */
public class IdempotentAdvisor extends AbstractPointcutAdvisor {

	private final transient Pointcut pointcut;

	private final transient Advice advice;

	/**
	 * @param attributeSource decides which methods match (and parses their annotation)
	 * @param interceptor the advice
	 * @param order the advisor order
	 */
	public IdempotentAdvisor(IdempotentAttributeSource attributeSource, IdempotentInterceptor interceptor, int order) {
		this.advice = interceptor;
		this.pointcut = new StaticMethodMatcherPointcut() {

			@Override
			public boolean matches(Method method, Class<?> targetClass) {
				return attributeSource.getAttribute(method, targetClass) != null;
			}

			@Override
			public ClassFilter getClassFilter() {
				return (clazz) -> AnnotationUtils.isCandidateClass(clazz, Idempotent.class);
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
