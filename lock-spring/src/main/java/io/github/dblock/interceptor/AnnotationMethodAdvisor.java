package io.github.dblock.interceptor;

import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.util.function.BiPredicate;

import org.aopalliance.aop.Advice;
import org.springframework.aop.ClassFilter;
import org.springframework.aop.Pointcut;
import org.springframework.aop.support.AbstractPointcutAdvisor;
import org.springframework.aop.support.StaticMethodMatcherPointcut;
import org.springframework.core.annotation.AnnotationUtils;

/**
 * An advisor for the methods that carry one of this library's annotations: classes are filtered by the annotation
 * type, methods by whether their attribute source finds (and parses) an annotation. The lock and semaphore advisors
 * take an order smaller (higher precedence) than the transaction advisor's, so that the advice wraps the
 * transaction; the idempotency advisor one that places it inside. Thread-safe once constructed.
 */
public abstract class AnnotationMethodAdvisor extends AbstractPointcutAdvisor {

	private final transient Pointcut pointcut;

	private final transient Advice advice;

	/**
	 * @param annotationType the annotation; classes that cannot carry it are skipped
	 * @param matches whether a method, invoked on a target class, carries a valid annotation
	 * @param advice the advice
	 * @param order the advisor order
	 */
	protected AnnotationMethodAdvisor(Class<? extends Annotation> annotationType,
			BiPredicate<Method, Class<?>> matches, Advice advice, int order) {
		this.advice = advice;
		this.pointcut = new StaticMethodMatcherPointcut() {

			@Override
			public boolean matches(Method method, Class<?> targetClass) {
				return matches.test(method, targetClass);
			}

			@Override
			public ClassFilter getClassFilter() {
				return (clazz) -> AnnotationUtils.isCandidateClass(clazz, annotationType);
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
