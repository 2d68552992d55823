package io.github.dblock.interceptor;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import io.github.dblock.idempotency.IdempotencyOptions;
import io.github.dblock.idempotency.IdempotencyTemplate;
import io.github.dblock.idempotency.Idempotent;
import org.jspecify.annotations.Nullable;
import org.springframework.aop.support.AopUtils;
import org.springframework.core.MethodClassKey;
import org.springframework.core.ResolvableType;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.env.PropertyResolver;
import org.springframework.expression.Expression;
import org.springframework.transaction.annotation.Propagation;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.util.StringUtils;

/**
 * Finds and parses {@link Idempotent} annotations once per method and target class, and caches the result, like
 * {@link LockAttributeSource}: parsing happens while the auto-proxy creator asks the pointcut, during start-up, so a
 * broken annotation stops the application naming the method. Thread-safe.
 */
public class IdempotentAttributeSource {

	private final Map<MethodClassKey, Optional<IdempotentAttribute>> cache = new ConcurrentHashMap<>(64);

	private final PropertyResolver placeholders;

	/**
	 * @param placeholders resolves {@code ${...}} placeholders in keys and durations (normally the
	 * {@link org.springframework.core.env.Environment})
	 */
	public IdempotentAttributeSource(PropertyResolver placeholders) {
		this.placeholders = placeholders;
	}

	/**
	 * The attribute of a method as invoked on a target class, or {@code null} if it is not annotated.
	 * @throws IllegalStateException if the annotation is invalid, naming the method and the problem
	 */
	@Nullable
	public IdempotentAttribute getAttribute(Method method, @Nullable Class<?> targetClass) {
		if (method.getDeclaringClass() == Object.class) {
			return null;
		}
		return this.cache.computeIfAbsent(new MethodClassKey(method, targetClass),
				(key) -> Optional.ofNullable(find(method, targetClass))).orElse(null);
	}

	@Nullable
	private IdempotentAttribute find(Method method, @Nullable Class<?> targetClass) {
		Method specific = AopUtils.getMostSpecificMethod(method, targetClass);
		Idempotent annotation = AnnotatedElementUtils.findMergedAnnotation(specific, Idempotent.class);
		if (annotation == null && specific != method) {
			annotation = AnnotatedElementUtils.findMergedAnnotation(method, Idempotent.class);
		}
		return (annotation != null) ? parse(specific, targetClass, annotation) : null;
	}

	private IdempotentAttribute parse(Method method, @Nullable Class<?> targetClass, Idempotent annotation) {
		String where = "@Idempotent on " + LockAttribute.describe(method);
		if (!StringUtils.hasText(annotation.key())) {
			throw new IllegalStateException(where + " has no key; give one, e.g. key = \"payment:#{#request.id}\"");
		}
		String template = TemplateExpressions.resolve(this.placeholders, where, annotation.key());
		List<Expression> parts = TemplateExpressions.parse(where, "key", template);
		TemplateExpressions.checkVariables(where, "key", parts, method);
		IdempotencyOptions options = options(where, annotation);
		if (method.getReturnType() == java.util.concurrent.Future.class
				|| java.util.concurrent.CompletionStage.class.isAssignableFrom(method.getReturnType())
				|| method.getReturnType().getName().startsWith("org.reactivestreams.")
				|| method.getReturnType().getName().startsWith("reactor.core.publisher.")) {
			throw new IllegalStateException(where + ": asynchronous return type " + method.getReturnType().getName()
					+ " is not supported: the outcome would be recorded before the work completes");
		}
		Class<?> owner = (targetClass != null) ? targetClass : method.getDeclaringClass();
		IdempotentAttribute attribute = new IdempotentAttribute(method, template, parts, options,
				org.springframework.core.GenericTypeResolver.resolveType(method.getGenericReturnType(), owner),
				requiresTransaction(method, owner));
		if (attribute.isLiteral()) {
			try {
				IdempotencyTemplate.validateKey(template);
			}
			catch (IllegalArgumentException ex) {
				throw new IllegalStateException(where + ": " + ex.getMessage(), ex);
			}
		}
		return attribute;
	}

	/** The annotation's retention, wait time, lease time and on-duplicate over the defaults. */
	private IdempotencyOptions options(String where, Idempotent annotation) {
		IdempotencyOptions options = IdempotencyOptions.defaults();
		try {
			Duration retention = TemplateExpressions.duration(this.placeholders, where, "retention", annotation.retention());
			if (retention != null) {
				options = options.withRetention(retention);
			}
			Duration waitTime = TemplateExpressions.duration(this.placeholders, where, "waitTime", annotation.waitTime());
			if (waitTime != null) {
				options = options.withWaitTime(waitTime);
			}
			Duration leaseTime = TemplateExpressions.duration(this.placeholders, where, "leaseTime", annotation.leaseTime());
			if (leaseTime != null) {
				options = options.withLeaseTime(leaseTime);
			}
		}
		catch (IllegalArgumentException ex) {
			throw new IllegalStateException(where + ": " + ex.getMessage(), ex);
		}
		if (annotation.onDuplicate().length > 1) {
			throw new IllegalStateException(where + ": give at most one onDuplicate, was " + annotation.onDuplicate().length);
		}
		if (annotation.onDuplicate().length == 1) {
			options = options.withOnDuplicate(annotation.onDuplicate()[0]);
		}
		return options;
	}

	/** Whether Spring's {@code @Transactional} on the method, or else its class, starts or requires a transaction. */
	private static boolean requiresTransaction(Method method, Class<?> owner) {
		Transactional transactional = AnnotatedElementUtils.findMergedAnnotation(method, Transactional.class);
		if (transactional == null) {
			transactional = AnnotatedElementUtils.findMergedAnnotation(owner, Transactional.class);
		}
		if (transactional == null) {
			return false;
		}
		Propagation propagation = transactional.propagation();
		return propagation == Propagation.REQUIRED || propagation == Propagation.REQUIRES_NEW
				|| propagation == Propagation.NESTED || propagation == Propagation.MANDATORY;
	}

}
