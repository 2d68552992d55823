package io.github.dblock.interceptor;

import java.lang.reflect.Method;
import java.util.List;

import io.github.dblock.LockOptions;
import org.jspecify.annotations.Nullable;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.expression.BeanResolver;
import org.springframework.expression.Expression;
import org.springframework.expression.common.LiteralExpression;

/**
 * A parsed {@link io.github.dblock.DistributedLock} annotation: the resource template's SpEL parts, already
 * parsed, and the lock options. Immutable and thread-safe; built once per method by {@link LockAttributeSource}.
 */
public final class LockAttribute {

	private final Method method;

	private final String template;

	/** Literal parts and expressions in order; literal parts are {@link LiteralExpression}s. */
	private final List<Expression> parts;

	private final LockOptions options;

	private final io.github.dblock.OnLockFailure onFailure;

	@Nullable
	private final String failureHandler;

	/**
	 * Positions of parameters of the handle type ({@link io.github.dblock.LockHandle}, or
	 * {@link io.github.dblock.semaphore.PermitHandle} for a semaphore), filled in by the interceptor.
	 */
	private final int[] handleParameters;

	/** The annotation, as named in messages. */
	private final String annotationName;

	LockAttribute(Method method, String template, Expression parsed, LockOptions options,
			io.github.dblock.OnLockFailure onFailure, @Nullable String failureHandler) {
		this(method, template, parsed, options, onFailure, failureHandler, "@DistributedLock",
				io.github.dblock.LockHandle.class);
	}

	LockAttribute(Method method, String template, Expression parsed, LockOptions options,
			io.github.dblock.OnLockFailure onFailure, @Nullable String failureHandler, String annotationName,
			Class<?> handleType) {
		this.annotationName = annotationName;
		this.method = method;
		this.template = template;
		this.parts = TemplateExpressions.parts(parsed);
		this.options = options;
		this.onFailure = onFailure;
		this.failureHandler = failureHandler;
		this.handleParameters = java.util.stream.IntStream.range(0, method.getParameterCount())
			.filter((i) -> method.getParameterTypes()[i] == handleType)
			.toArray();
	}

	/**
	 * The arguments with every {@code null} parameter of the handle type replaced by the held lock (or permit); the
	 * same array when there is nothing to fill in, a copy otherwise.
	 */
	@Nullable Object[] withHandle(@Nullable Object[] arguments, Object lock) {
		if (this.handleParameters.length == 0) {
			return arguments;
		}
		@Nullable Object[] result = arguments.clone();
		for (int i : this.handleParameters) {
			if (result[i] == null) {
				result[i] = lock;
			}
		}
		return result;
	}

	/** The annotated method. */
	public Method getMethod() {
		return this.method;
	}

	/** The resource template after placeholder resolution. */
	public String getTemplate() {
		return this.template;
	}

	/** The options from the annotation; unset ones take configured defaults. */
	public LockOptions getOptions() {
		return this.options;
	}

	/** What to do when the lock stays busy. */
	public io.github.dblock.OnLockFailure getOnFailure() {
		return this.onFailure;
	}

	/** The name of the {@link io.github.dblock.LockFailureHandler} bean, or {@code null}. */
	@Nullable
	public String getFailureHandler() {
		return this.failureHandler;
	}

	/** Whether the resource needs no evaluation (no SpEL parts). */
	public boolean isLiteral() {
		return TemplateExpressions.isLiteral(this.parts);
	}

	/**
	 * Evaluates the resource for one invocation.
	 * @throws IllegalArgumentException if an expression evaluates to {@code null} or blank, or throws, or the
	 * resource is not a valid lock resource name (see {@link io.github.dblock.LockTemplate#validateResource}), naming
	 * the method and the expression or template
	 */
	String resolveResource(Method method, @Nullable Object[] args, @Nullable Object target, Class<?> targetClass,
			ParameterNameDiscoverer parameterNames, @Nullable BeanResolver beanResolver) {
		if (isLiteral()) {
			return this.template; // validated at start-up
		}
		String resolved = TemplateExpressions.evaluate(this.parts, this.annotationName + " resource", this.method, method, args,
				target, targetClass, parameterNames, beanResolver);
		try {
			io.github.dblock.LockTemplate.validateResource(resolved);
		}
		catch (IllegalArgumentException ex) {
			throw new IllegalArgumentException(this.annotationName + " resource \"" + this.template + "\" of "
					+ describe(this.method) + " gave an invalid lock resource: " + ex.getMessage(), ex);
		}
		return resolved;
	}

	/** The annotated method, as {@code com.example.Service.method()}, for messages. */
	public String describe() {
		return describe(this.getMethod());
	}

	static String describe(Method method) {
		return method.getDeclaringClass().getName() + "." + method.getName() + "()";
	}

}
