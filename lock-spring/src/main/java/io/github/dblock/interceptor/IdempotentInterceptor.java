package io.github.dblock.interceptor;

import java.lang.reflect.Method;
import java.util.function.Supplier;

import io.github.dblock.idempotency.IdempotencyTemplate;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.springframework.aop.support.AopUtils;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.expression.BeanResolver;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Runs a method annotated with {@link io.github.dblock.idempotency.Idempotent} through
 * {@link IdempotencyTemplate#execute(String, io.github.dblock.idempotency.IdempotencyOptions, java.lang.reflect.Type,
 * io.github.dblock.idempotency.IdempotentCallback)}: evaluates the key over the arguments, claims it, proceeds (or returns the
 * recorded outcome of an earlier call, read as the method's generic return type), and records the outcome.
 * <p>
 * It is ordered inside the transaction advisor, so the method's transaction is already active here and the recorded
 * outcome joins it. For a {@code @Transactional} method without an active transaction at this point (the advisor was
 * ordered outside it), the call fails with {@link IllegalStateException} before anything is claimed, because the
 * outcome and the method's writes would no longer commit together. Thread-safe.
 */
public class IdempotentInterceptor implements MethodInterceptor {

	private final IdempotentAttributeSource attributeSource;

	private final Supplier<IdempotencyTemplate> template;

	private final ParameterNameDiscoverer parameterNames = new DefaultParameterNameDiscoverer();

	@Nullable
	private final BeanResolver beanResolver;

	/**
	 * @param attributeSource parses and caches annotations
	 * @param template supplies the template lazily, so that the advisor can be created before the data source
	 * @param beanResolver resolves {@code @beanName} references in key expressions, may be {@code null}
	 */
	public IdempotentInterceptor(IdempotentAttributeSource attributeSource, Supplier<IdempotencyTemplate> template,
			@Nullable BeanResolver beanResolver) {
		this.attributeSource = attributeSource;
		this.template = template;
		this.beanResolver = beanResolver;
	}

	@Override
	@Nullable
	public Object invoke(MethodInvocation invocation) throws Throwable {
		Method method = invocation.getMethod();
		Object target = invocation.getThis();
		Class<?> targetClass = (target != null) ? AopUtils.getTargetClass(target) : method.getDeclaringClass();
		IdempotentAttribute attribute = this.attributeSource.getAttribute(method, targetClass);
		if (attribute == null) {
			return invocation.proceed();
		}
		if (attribute.isTransactional() && !TransactionSynchronizationManager.isActualTransactionActive()) {
			throw new IllegalStateException("@Idempotent on " + attribute.describe() + " runs outside the method's "
					+ "@Transactional transaction, so its recorded outcome could not commit together with the method's "
					+ "writes; keep distributed-lock.idempotency.order at its default (the transaction advisor's order) or "
					+ "above the transaction advisor's order. Nothing was claimed");
		}
		String key = attribute.resolveKey(method, invocation.getArguments(), target, targetClass, this.parameterNames,
				this.beanResolver);
		return this.template.get().execute(key, attribute.getOptions(), attribute.getResultType(), (claim) -> {
			try {
				return invocation.proceed();
			}
			catch (Throwable ex) {
				// checked exceptions pass through unchanged: the template marks the key failed and rethrows them
				throw IdempotentInterceptor.<RuntimeException>rethrow(ex);
			}
		});
	}

	@SuppressWarnings("unchecked")
	private static <E extends Throwable> RuntimeException rethrow(Throwable ex) throws E {
		throw (E) ex;
	}

}
