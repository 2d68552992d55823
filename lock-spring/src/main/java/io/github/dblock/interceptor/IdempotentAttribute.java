package io.github.dblock.interceptor;

import java.lang.reflect.Method;
import java.lang.reflect.Type;
import java.util.List;

import io.github.dblock.idempotency.IdempotencyOptions;
import io.github.dblock.idempotency.IdempotencyTemplate;
import org.jspecify.annotations.Nullable;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.expression.BeanResolver;
import org.springframework.expression.Expression;

/**
 * A parsed {@link io.github.dblock.idempotency.Idempotent} annotation: the key template's parts, the options, the generic return
 * type that recorded outcomes are read as, and whether the method asks for a transaction. Immutable and thread-safe;
 * built once per method and target class by {@link IdempotentAttributeSource}.
 */
public final class IdempotentAttribute {

	private final Method method;

	private final String template;

	private final List<Expression> parts;

	private final IdempotencyOptions options;

	private final Type resultType;

	private final boolean transactional;

	IdempotentAttribute(Method method, String template, List<Expression> parts, IdempotencyOptions options,
			Type resultType, boolean transactional) {
		this.method = method;
		this.template = template;
		this.parts = parts;
		this.options = options;
		this.resultType = resultType;
		this.transactional = transactional;
	}

	/** The annotated method. */
	public Method getMethod() {
		return this.method;
	}

	/** The key template after placeholder resolution. */
	public String getTemplate() {
		return this.template;
	}

	/** The options from the annotation; unset ones take configured defaults. */
	public IdempotencyOptions getOptions() {
		return this.options;
	}

	/** The method's return type resolved against the target class, for example {@code List<Receipt>}. */
	public Type getResultType() {
		return this.resultType;
	}

	/** Whether the method (or its class) is {@code @Transactional} with a propagation that starts or needs one. */
	public boolean isTransactional() {
		return this.transactional;
	}

	/** Whether the key needs no evaluation. */
	boolean isLiteral() {
		return TemplateExpressions.isLiteral(this.parts);
	}

	/**
	 * Evaluates the key for one invocation.
	 * @throws IllegalArgumentException if an expression throws or gives {@code null} or blank, or the key is invalid,
	 * naming the method
	 */
	String resolveKey(Method invoked, @Nullable Object[] args, @Nullable Object target, Class<?> targetClass,
			ParameterNameDiscoverer parameterNames, @Nullable BeanResolver beanResolver) {
		String key = isLiteral() ? this.template : TemplateExpressions.evaluate(this.parts, "@Idempotent key",
				this.method, invoked, args, target, targetClass, parameterNames, beanResolver);
		try {
			IdempotencyTemplate.validateKey(key);
		}
		catch (IllegalArgumentException ex) {
			throw new IllegalArgumentException("@Idempotent key \"" + this.template + "\" of "
					+ LockAttribute.describe(this.method) + " gave an invalid key: " + ex.getMessage(), ex);
		}
		return key;
	}

	/** The annotated method, as {@code com.example.Service.method()}, for messages. */
	public String describe() {
		return LockAttribute.describe(this.method);
	}

}
