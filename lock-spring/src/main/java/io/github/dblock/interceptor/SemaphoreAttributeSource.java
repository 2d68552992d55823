package io.github.dblock.interceptor;

import java.lang.reflect.Method;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import io.github.dblock.LockOptions;
import io.github.dblock.OnLockFailure;
import io.github.dblock.semaphore.DistributedSemaphore;
import io.github.dblock.semaphore.PermitHandle;
import org.jspecify.annotations.Nullable;
import org.springframework.core.MethodClassKey;
import org.springframework.core.env.PropertyResolver;
import org.springframework.util.StringUtils;

/**
 * Finds and parses {@link DistributedSemaphore} annotations once per method and target class, with the template and
 * duration rules of {@link LockAttributeSource} (it delegates to one), and caches the result. Parsing happens while
 * the auto-proxy creator matches methods, during start-up, so a broken annotation stops the application naming the
 * method. Thread-safe.
 */
public class SemaphoreAttributeSource {

	private final Map<MethodClassKey, Optional<LockAttribute>> cache = new ConcurrentHashMap<>(64);

	private final LockAttributeSource parser;

	/**
	 * @param placeholders resolves {@code ${...}} placeholders in names and durations (normally the application's
	 * {@link org.springframework.core.env.Environment})
	 */
	public SemaphoreAttributeSource(PropertyResolver placeholders) {
		this.parser = new LockAttributeSource(placeholders);
	}

	/**
	 * The parsed annotation of a method as invoked on a target class, or {@code null} if it has none.
	 * @throws IllegalStateException if the annotation is invalid, naming the method and the problem
	 */
	@Nullable
	public LockAttribute getSemaphoreAttribute(Method method, @Nullable Class<?> targetClass) {
		if (method.getDeclaringClass() == Object.class) {
			return null;
		}
		return this.cache.computeIfAbsent(new MethodClassKey(method, targetClass),
				(key) -> Optional.ofNullable(
						LockAttributeSource.find(method, targetClass, DistributedSemaphore.class, this::parse))).orElse(null);
	}

	private LockAttribute parse(Method method, DistributedSemaphore annotation) {
		String where = "@DistributedSemaphore on " + LockAttribute.describe(method);
		if (!StringUtils.hasText(annotation.name())) {
			throw new IllegalStateException(where + " has no name; give one, e.g. name = \"partner-api\"");
		}
		String template = this.parser.resolveTemplate(where, annotation.name());
		LockOptions options = this.parser.timing(where, LockOptions.defaults(), annotation.waitTime(),
				annotation.leaseTime());
		org.springframework.expression.Expression expression = this.parser.parseTemplate(where, template);
		TemplateExpressions.checkVariables(where, "name", TemplateExpressions.parts(expression), method);
		LockAttribute attribute = new LockAttribute(method, template, expression, options,
				OnLockFailure.THROW, null, "@DistributedSemaphore", PermitHandle.class);
		return LockAttributeSource.validateLiteral(where, attribute);
	}

}
