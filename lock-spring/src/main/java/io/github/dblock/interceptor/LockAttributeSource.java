package io.github.dblock.interceptor;

import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiFunction;

import io.github.dblock.DistributedLock;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import org.jspecify.annotations.Nullable;
import org.springframework.aop.support.AopUtils;
import org.springframework.core.MethodClassKey;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.env.PropertyResolver;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.ParserContext;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.util.StringUtils;

/**
 * Finds and parses {@link DistributedLock} annotations, once per method and target class, and caches the
 * result, as Spring's transaction and cache attribute sources do. Parsing happens when the auto-proxy creator
 * asks the pointcut whether a method matches, that is during start-up, so a broken annotation stops the
 * application with a message naming the method. Thread-safe.
 */
public class LockAttributeSource {

	private static final Optional<LockAttribute> NONE = Optional.empty();

	private final Map<MethodClassKey, Optional<LockAttribute>> cache = new ConcurrentHashMap<>(256);

	private final SpelExpressionParser parser = new SpelExpressionParser();

	private final PropertyResolver placeholders;

	/**
	 * @param placeholders resolves {@code ${...}} placeholders in resource templates and durations (normally
	 * the application's {@link org.springframework.core.env.Environment})
	 */
	public LockAttributeSource(PropertyResolver placeholders) {
		this.placeholders = placeholders;
	}

	/**
	 * The lock attribute of a method as invoked on a target class, or {@code null} if it is not annotated.
	 * @throws IllegalStateException if the annotation is invalid, naming the method and the problem
	 */
	@Nullable
	public LockAttribute getLockAttribute(Method method, @Nullable Class<?> targetClass) {
		if (method.getDeclaringClass() == Object.class) {
			return null;
		}
		MethodClassKey key = new MethodClassKey(method, targetClass);
		Optional<LockAttribute> cached = this.cache.get(key);
		if (cached == null) {
			LockAttribute parsed = find(method, targetClass);
			cached = (parsed != null) ? Optional.of(parsed) : NONE;
			this.cache.put(key, cached);
		}
		return cached.orElse(null);
	}

	/**
	 * The attributes parsed so far: after start-up, those of every annotated method of every proxied bean.
	 * @return a snapshot, in no particular order
	 */
	public java.util.List<LockAttribute> getParsedAttributes() {
		return this.cache.values().stream().flatMap(Optional::stream).toList();
	}

	@Nullable
	private LockAttribute find(Method method, @Nullable Class<?> targetClass) {
		return find(method, targetClass, DistributedLock.class, this::parse);
	}

	/**
	 * Finds an annotation on the most specific method of the target class (else on the invoked method) and parses it.
	 * @return the parsed attribute, or {@code null} if the method has no such annotation
	 */
	@Nullable
	static <A extends Annotation> LockAttribute find(Method method, @Nullable Class<?> targetClass, Class<A> type,
			BiFunction<Method, A, LockAttribute> parser) {
		Method specific = AopUtils.getMostSpecificMethod(method, targetClass);
		A annotation = AnnotatedElementUtils.findMergedAnnotation(specific, type);
		if (annotation == null && specific != method) {
			annotation = AnnotatedElementUtils.findMergedAnnotation(method, type);
		}
		return (annotation != null) ? parser.apply(specific, annotation) : null;
	}

	private LockAttribute parse(Method method, DistributedLock annotation) {
		String where = "@DistributedLock on " + LockAttribute.describe(method);
		if (!StringUtils.hasText(annotation.resource())) {
			throw new IllegalStateException(where + " has no resource; give one, e.g. resource = \"order:#{#id}\"");
		}
		String template = resolveTemplate(where, annotation.resource());
		Expression expression = parseTemplate(where, template);
		LockOptions options = timing(where, LockOptions.defaults(), annotation.waitTime(), annotation.leaseTime());
		Duration leaseTime = options.getLeaseTime();
		Duration minHoldTime = duration(where, "minHoldTime", annotation.minHoldTime());
		if (minHoldTime != null) {
			if (minHoldTime.isNegative()) {
				throw new IllegalStateException(where + ": minHoldTime must be zero or positive, was " + annotation.minHoldTime());
			}
			if (leaseTime != null && minHoldTime.compareTo(leaseTime) > 0) {
				throw new IllegalStateException(where + ": minHoldTime " + annotation.minHoldTime()
						+ " exceeds leaseTime " + annotation.leaseTime());
			}
			options = options.withMinHoldTime(minHoldTime);
		}
		if (annotation.mode().length > 1) {
			throw new IllegalStateException(where + ": give at most one mode, was " + annotation.mode().length);
		}
		if (annotation.mode().length == 1) {
			options = options.withMode(annotation.mode()[0]);
		}
		options = options.withType(annotation.type());
		if (annotation.type() != io.github.dblock.LockType.EXCLUSIVE && options.getMode() != null
				&& options.getMode() != io.github.dblock.LockMode.LEASE) {
			throw new IllegalStateException(where + ": type = " + annotation.type() + " needs mode = LEASE, was "
					+ options.getMode() + " (read/write locks are lease locks"
					+ ((options.getMode() == io.github.dblock.LockMode.OPTIMISTIC)
							? "; OPTIMISTIC has no lock to hold)" : ")"));
		}
		String failureHandler = StringUtils.hasText(annotation.failureHandler()) ? annotation.failureHandler().trim() : null;
		if (failureHandler != null && annotation.onFailure() != io.github.dblock.OnLockFailure.THROW) {
			throw new IllegalStateException(where + ": give either onFailure = " + annotation.onFailure()
					+ " or failureHandler = \"" + failureHandler + "\", not both");
		}
		TemplateExpressions.checkVariables(where, "resource", TemplateExpressions.parts(expression), method);
		LockAttribute attribute = new LockAttribute(method, template, expression, options, annotation.onFailure(),
				failureHandler);
		return validateLiteral(where, attribute);
	}

	/** Checks a name without expressions at start-up, since it will never change; a failure names {@code where}. */
	static LockAttribute validateLiteral(String where, LockAttribute attribute) {
		if (attribute.isLiteral()) {
			try {
				LockTemplate.validateResource(attribute.getTemplate());
			}
			catch (IllegalArgumentException ex) {
				throw new IllegalStateException(where + ": " + ex.getMessage(), ex);
			}
		}
		return attribute;
	}

	/** Resolves the {@code ${...}} placeholders of a name template; a failure names {@code where}. */
	String resolveTemplate(String where, String resource) {
		return TemplateExpressions.resolve(this.placeholders, where, resource);
	}

	/** Parses the {@code #{...}} parts of a name template; a failure names {@code where}. */
	Expression parseTemplate(String where, String template) {
		try {
			return this.parser.parseExpression(template, ParserContext.TEMPLATE_EXPRESSION);
		}
		catch (ParseException ex) {
			throw new IllegalStateException(where + ": resource '" + template + "' does not parse: " + ex.getMessage(),
					ex);
		}
	}

	/**
	 * Adds an annotation's {@code waitTime} and {@code leaseTime} (blank: unset) to the options, checking their
	 * ranges; a failure names {@code where}.
	 */
	LockOptions timing(String where, LockOptions options, String waitTimeValue, String leaseTimeValue) {
		Duration waitTime = duration(where, "waitTime", waitTimeValue);
		if (waitTime != null) {
			if (waitTime.isNegative()) {
				throw new IllegalStateException(where + ": waitTime must be \"0\" (a single attempt) or positive, was "
						+ waitTimeValue);
			}
			options = options.withWaitTime(waitTime);
		}
		Duration leaseTime = duration(where, "leaseTime", leaseTimeValue);
		if (leaseTime != null) {
			if (leaseTime.compareTo(LockOptions.MIN_LEASE_TIME) < 0) {
				throw new IllegalStateException(where + ": leaseTime must be at least " + LockOptions.MIN_LEASE_TIME.toMillis()
						+ "ms (a shorter lease ends before the statement taking it returns), was " + leaseTimeValue);
			}
			if (leaseTime.compareTo(LockOptions.MAX_LEASE_TIME) > 0) {
				throw new IllegalStateException(where + ": leaseTime must be at most " + LockOptions.MAX_LEASE_TIME.toDays()
						+ "d (about 100 years), was " + leaseTimeValue);
			}
			options = options.withLeaseTime(leaseTime);
		}
		return options;
	}

	@Nullable
	private Duration duration(String where, String attribute, String value) {
		return TemplateExpressions.duration(this.placeholders, where, attribute, value);
	}

}
