package io.github.dblock.interceptor;

import java.util.function.Supplier;

import io.github.dblock.LockOptions;
import io.github.dblock.semaphore.PermitHandle;
import io.github.dblock.semaphore.SemaphoreOptions;
import io.github.dblock.semaphore.SemaphoreTemplate;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.expression.BeanResolver;

/**
 * Takes one permit of the semaphore named by a method's {@link io.github.dblock.semaphore.DistributedSemaphore} annotation,
 * proceeds, and gives the permit back: at once, or, when a transaction was already active before the call, after
 * that transaction completes (as {@link DistributedLockInterceptor} does for locks). If every permit stays held for
 * the wait time, the method does not run and {@link io.github.dblock.semaphore.PermitNotAcquiredException} propagates. If the
 * method completed but the permit's lease had expired, {@link io.github.dblock.LockLostException} is thrown instead of
 * the result. Thread-safe.
 */
public class DistributedSemaphoreInterceptor implements MethodInterceptor {

	private final SemaphoreAttributeSource attributeSource;

	private final Supplier<SemaphoreTemplate> semaphores;

	private final ParameterNameDiscoverer parameterNames = new DefaultParameterNameDiscoverer();

	@Nullable
	private final BeanResolver beanResolver;

	/**
	 * @param attributeSource parses and caches annotations
	 * @param semaphores supplies the template lazily, so that the advisor can be created before the data source
	 * @param beanResolver resolves {@code @beanName} references in expressions, may be {@code null}
	 */
	public DistributedSemaphoreInterceptor(SemaphoreAttributeSource attributeSource,
			Supplier<SemaphoreTemplate> semaphores, @Nullable BeanResolver beanResolver) {
		this.attributeSource = attributeSource;
		this.semaphores = semaphores;
		this.beanResolver = beanResolver;
	}

	@Override
	@Nullable
	public Object invoke(MethodInvocation invocation) throws Throwable {
		DistributedLockInterceptor.Resolved resolved = DistributedLockInterceptor.resolve(invocation,
				this.attributeSource::getSemaphoreAttribute, this.parameterNames, this.beanResolver);
		if (resolved == null) {
			return invocation.proceed();
		}
		LockAttribute attribute = resolved.attribute();
		PermitHandle permit = this.semaphores.get().acquire(resolved.name(), permitOptions(attribute.getOptions()));
		Object result;
		try {
			result = DistributedLockInterceptor.proceed(invocation, attribute, permit);
		}
		catch (Throwable ex) {
			DistributedLockInterceptor.release(permit.name(), permit::close, ex);
			throw ex;
		}
		DistributedLockInterceptor.release(permit.name(), permit::close, null);
		return result;
	}

	/** The annotation's wait and lease times (the only options a permit has) as the template's options. */
	private static SemaphoreOptions permitOptions(LockOptions parsed) {
		SemaphoreOptions options = SemaphoreOptions.defaults();
		if (parsed.getWaitTime() != null) {
			options = options.withWaitTime(parsed.getWaitTime());
		}
		if (parsed.getLeaseTime() != null) {
			options = options.withLeaseTime(parsed.getLeaseTime());
		}
		return options;
	}

}
