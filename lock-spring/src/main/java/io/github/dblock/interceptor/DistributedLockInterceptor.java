package io.github.dblock.interceptor;

import java.lang.reflect.Method;
import java.util.function.BiFunction;
import java.util.function.Supplier;

import io.github.dblock.LockFailureHandler;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockNotAcquiredException;
import io.github.dblock.OnLockFailure;
import io.github.dblock.LockTemplate;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.aop.ProxyMethodInvocation;
import org.springframework.aop.support.AopUtils;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.expression.BeanResolver;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Acquires the lock described by a method's {@link io.github.dblock.DistributedLock} annotation, proceeds, and
 * releases it.
 * <p>
 * Steps per invocation:
 * <ol>
 * <li>Evaluate the resource template over the arguments (expressions were parsed once, at start-up).</li>
 * <li>Acquire through {@link LockTemplate#acquire(String, io.github.dblock.LockOptions)}; on time-out the method
 * does not run and {@link io.github.dblock.LockNotAcquiredException} propagates.</li>
 * <li>Proceed. The interceptor is ordered outside Spring's transaction interceptor, so the method's own
 * transaction has completed when control returns here. With commit-time validation on, that transaction commits
 * only if the lock is still held ({@link io.github.dblock.CommitValidation}, registered when it begins); otherwise
 * it rolls back and {@link io.github.dblock.LockLostException} propagates.</li>
 * <li>Release. If transaction synchronization is active at this point, a transaction was already running when
 * the method was called (the caller's); the release is then registered to run after that transaction completes,
 * so the lock covers the commit.</li>
 * </ol>
 * If the method completed normally but the release reports that the lock was lost (lease expired), the
 * {@link io.github.dblock.LockLostException} is thrown instead of the result.
 * <p>
 * {@link LockMode#PESSIMISTIC} and {@link LockMode#OPTIMISTIC} locks belong to a transaction: for them the method
 * runs through {@link LockTemplate#execute(String, io.github.dblock.LockOptions, io.github.dblock.LockCallback)},
 * inside the lock's transaction on the lock data source (PESSIMISTIC joins a caller's transaction there;
 * OPTIMISTIC may run the method several times). Thread-safe.
 */
public class DistributedLockInterceptor implements MethodInterceptor {

	private static final Log logger = LogFactory.getLog(DistributedLockInterceptor.class);

	private final LockAttributeSource attributeSource;

	private final Supplier<LockTemplate> lockTemplate;

	private final ParameterNameDiscoverer parameterNames = new DefaultParameterNameDiscoverer();

	@Nullable
	private final BeanResolver beanResolver;

	private final java.util.function.Function<String, LockFailureHandler> failureHandlers;

	/**
	 * @param attributeSource parses and caches annotations
	 * @param lockTemplate supplies the template lazily, so that the advisor can be created before the data source
	 * @param beanResolver resolves {@code @beanName} references in expressions, may be {@code null}
	 */
	public DistributedLockInterceptor(LockAttributeSource attributeSource, Supplier<LockTemplate> lockTemplate,
			@Nullable BeanResolver beanResolver) {
		this(attributeSource, lockTemplate, beanResolver, (name) -> {
			throw new IllegalStateException("No LockFailureHandler named '" + name + "' can be looked up here");
		});
	}

	/**
	 * @param attributeSource parses and caches annotations
	 * @param lockTemplate supplies the template lazily, so that the advisor can be created before the data source
	 * @param beanResolver resolves {@code @beanName} references in expressions, may be {@code null}
	 * @param failureHandlers finds a {@link LockFailureHandler} by bean name
	 */
	public DistributedLockInterceptor(LockAttributeSource attributeSource, Supplier<LockTemplate> lockTemplate,
			@Nullable BeanResolver beanResolver, java.util.function.Function<String, LockFailureHandler> failureHandlers) {
		this.attributeSource = attributeSource;
		this.lockTemplate = lockTemplate;
		this.beanResolver = beanResolver;
		this.failureHandlers = failureHandlers;
	}

	@Override
	@Nullable
	@SuppressWarnings("try") // the skip mark lasts the try block, not used in it
	public Object invoke(MethodInvocation invocation) throws Throwable {
		Resolved resolved = resolve(invocation, this.attributeSource::getLockAttribute, this.parameterNames,
				this.beanResolver);
		if (resolved == null) {
			return invocation.proceed();
		}
		LockAttribute attribute = resolved.attribute();
		String resource = resolved.name();
		boolean skips = attribute.getOnFailure() == OnLockFailure.SKIP && attribute.getFailureHandler() == null;
		try (SkippedOutcomeFilter.Mark mark = skips ? SkippedOutcomeFilter.skipping(resource) : null) {
			return invokeLocked(invocation, attribute, resource);
		}
		catch (LockNotAcquiredException ex) {
			if (!ex.getResource().equals(resource)) {
				throw ex; // another lock inside the method was busy: not this annotation's failure
			}
			return onFailure(invocation, attribute, resource, ex);
		}
	}

	@Nullable
	private Object invokeLocked(MethodInvocation invocation, LockAttribute attribute, String resource) throws Throwable {
		LockTemplate template = this.lockTemplate.get();
		LockMode mode = (attribute.getOptions().getMode() != null) ? attribute.getOptions().getMode()
				: template.getDefaultMode();
		if (mode != LockMode.LEASE) {
			return invokeInLockTransaction(template, resource, attribute, invocation);
		}
		LockHandle lock = template.acquire(resource, attribute.getOptions());
		Object result;
		try {
			result = proceed(invocation, attribute, lock);
		}
		catch (Throwable ex) {
			release(lock, ex);
			throw ex;
		}
		release(lock, null);
		return result;
	}

	/**
	 * The annotation of the invoked method and the name it gives for this invocation, or {@code null} if the method
	 * is not annotated.
	 * @throws IllegalArgumentException if the name template cannot be evaluated into a valid name
	 */
	@Nullable
	static Resolved resolve(MethodInvocation invocation, BiFunction<Method, Class<?>, LockAttribute> attributes,
			ParameterNameDiscoverer parameterNames, @Nullable BeanResolver beanResolver) {
		Method method = invocation.getMethod();
		Object target = invocation.getThis();
		Class<?> targetClass = (target != null) ? AopUtils.getTargetClass(target) : method.getDeclaringClass();
		LockAttribute attribute = attributes.apply(method, targetClass);
		if (attribute == null) {
			return null;
		}
		return new Resolved(attribute, attribute.resolveResource(method, invocation.getArguments(), target, targetClass,
				parameterNames, beanResolver));
	}

	/** An annotated invocation: the parsed annotation and the evaluated lock or semaphore name. */
	record Resolved(LockAttribute attribute, String name) {
	}

	/** Applies the annotation's failure policy to a busy lock. */
	@Nullable
	private Object onFailure(MethodInvocation invocation, LockAttribute attribute, String resource,
			LockNotAcquiredException ex) throws Throwable {
		if (attribute.getFailureHandler() != null) {
			LockFailureHandler handler = this.failureHandlers.apply(attribute.getFailureHandler());
			return handler.handle(new LockFailureHandler.LockFailure(resource, invocation.getMethod(),
					invocation.getArguments(), ex));
		}
		if (attribute.getOnFailure() == OnLockFailure.SKIP) {
			LockTemplate template = this.lockTemplate.get();
			template.withResource(io.micrometer.observation.Observation
				.createNotStarted("distributed.lock.skipped", template.getObservationRegistry())
				.lowCardinalityKeyValue("method", invocation.getMethod().getDeclaringClass().getSimpleName() + "."
						+ invocation.getMethod().getName()), resource)
				.start()
				.stop();
			if (logger.isDebugEnabled()) {
				logger.debug("Skipped " + invocation.getMethod().getName() + "(): " + ex.getMessage());
			}
			return emptyValue(invocation.getMethod().getReturnType());
		}
		throw ex;
	}

	/** What a skipped method returns: null, an empty Optional, or a primitive's zero. */
	@Nullable
	static Object emptyValue(Class<?> type) {
		if (type == java.util.Optional.class) {
			return java.util.Optional.empty();
		}
		if (type.isPrimitive() && type != void.class) {
			return java.lang.reflect.Array.get(java.lang.reflect.Array.newInstance(type, 1), 0);
		}
		return null;
	}

	/**
	 * PESSIMISTIC and OPTIMISTIC locks belong to a transaction: the template runs the method inside it (joining
	 * the caller's for PESSIMISTIC). As with {@code @Transactional}'s default rules, a checked exception from the
	 * method still commits and is then rethrown; an unchecked one rolls back.
	 */
	@Nullable
	private Object invokeInLockTransaction(LockTemplate template, String resource, LockAttribute attribute,
			MethodInvocation invocation) throws Throwable {
		@Nullable Throwable[] checked = new Throwable[1];
		Object result = template.execute(resource, attribute.getOptions(), (lock) -> {
			checked[0] = null;
			try {
				// OPTIMISTIC may run the method again: each run needs a fresh copy of the interceptor chain.
				if (invocation instanceof ProxyMethodInvocation proxied) {
					return proxied.invocableClone(attribute.withHandle(invocation.getArguments(), lock)).proceed();
				}
				return proceed(invocation, attribute, lock);
			}
			catch (RuntimeException | Error ex) {
				throw ex;
			}
			catch (Throwable ex) {
				checked[0] = ex;
				return null;
			}
		});
		Throwable failure = checked[0];
		if (failure != null) {
			throw failure;
		}
		return result;
	}

	/** Proceeds with {@code null} handle parameters filled in with the held lock (or permit). */
	@Nullable
	static Object proceed(MethodInvocation invocation, LockAttribute attribute, Object lock) throws Throwable {
		@Nullable Object[] arguments = invocation.getArguments();
		@Nullable Object[] filled = attribute.withHandle(arguments, lock);
		if (filled != arguments) {
			if (invocation instanceof ProxyMethodInvocation proxied) {
				proxied.setArguments(filled);
			}
			else {
				System.arraycopy(filled, 0, arguments, 0, arguments.length);
			}
		}
		return invocation.proceed();
	}

	/**
	 * Releases a lock (or permit) after the method: at once, or, inside a caller's transaction, once it completes; a
	 * release failure after a failed method is added to the method's exception.
	 */
	static void release(LockHandle lock, @Nullable Throwable methodFailure) {
		release(lock.resource(), lock::close, methodFailure);
	}

	/**
	 * Like {@link #release(LockHandle, Throwable)} for any held resource.
	 * @param resource the lock's resource or the semaphore's name, for messages
	 * @param close gives the resource back
	 */
	static void release(String resource, Runnable close, @Nullable Throwable methodFailure) {
		if (TransactionSynchronizationManager.isSynchronizationActive()) {
			if (logger.isDebugEnabled()) {
				logger.debug("Deferring release of lock '" + resource + "' until the surrounding transaction completes");
			}
			TransactionSynchronizationManager.registerSynchronization(new ReleaseAfterCompletion(resource, close));
			return;
		}
		if (methodFailure == null) {
			close.run();
			return;
		}
		try {
			close.run();
		}
		catch (RuntimeException releaseFailure) {
			methodFailure.addSuppressed(releaseFailure);
		}
	}

	/** Releases a lock once the transaction that was active when the locked method returned has completed. */
	private static final class ReleaseAfterCompletion implements TransactionSynchronization {

		private final String resource;

		private final Runnable close;

		ReleaseAfterCompletion(String resource, Runnable close) {
			this.resource = resource;
			this.close = close;
		}

		@Override
		public void afterCompletion(int status) {
			try {
				this.close.run();
			}
			catch (RuntimeException ex) {
				// Nothing can be thrown to the caller any more: the transaction has completed.
				logger.error("Releasing lock '" + this.resource + "' after transaction completion failed", ex);
			}
		}

	}

}
