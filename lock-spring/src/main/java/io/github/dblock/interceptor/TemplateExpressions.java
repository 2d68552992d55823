package io.github.dblock.interceptor;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.List;

import org.jspecify.annotations.Nullable;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.core.env.PropertyResolver;
import org.springframework.expression.BeanResolver;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.ParserContext;
import org.springframework.expression.common.CompositeStringExpression;
import org.springframework.expression.common.LiteralExpression;
import org.springframework.expression.spel.SpelNode;
import org.springframework.expression.spel.ast.VariableReference;
import org.springframework.expression.spel.standard.SpelExpression;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.format.datetime.standard.DurationFormatterUtils;
import org.springframework.util.StringUtils;

/**
 * The annotation-attribute machinery shared by {@code @DistributedLock} and {@code @Idempotent}: name templates of
 * literal text, {@code ${...}} placeholders (resolved once, at start-up) and {@code #{...}} SpEL expressions (parsed
 * once, evaluated per call over the method's arguments), and duration attributes. Stateless and thread-safe.
 */
final class TemplateExpressions {

	private static final SpelExpressionParser parser = new SpelExpressionParser();

	private TemplateExpressions() {
	}

	/**
	 * Parses a template whose placeholders are already resolved (see {@link #resolve}).
	 * @param where names the annotation and method, for messages
	 * @param what names the attribute, for messages (for example {@code "key"})
	 * @return the literal parts and expressions in order (literal parts are {@link LiteralExpression}s)
	 * @throws IllegalStateException if the template does not parse
	 */
	static List<Expression> parse(String where, String what, String template) {
		try {
			return parts(parser.parseExpression(template, ParserContext.TEMPLATE_EXPRESSION));
		}
		catch (ParseException ex) {
			throw new IllegalStateException(where + ": " + what + " '" + template + "' does not parse: " + ex.getMessage(),
					ex);
		}
	}

	/**
	 * Checks at start-up that every {@code #name} variable of a parsed template is one the evaluation context will
	 * define for this method: a parameter name, {@code #p0}/{@code #a0} style indexes, {@code #root} or
	 * {@code #this}. An unknown name would otherwise evaluate to {@code null} and fail only on the first call.
	 * @param where names the annotation and method, for messages
	 * @param what names the attribute, for messages (for example {@code "resource"})
	 * @param parts the parsed template ({@link #parts})
	 * @param method the annotated method, whose parameters the expressions see
	 * @throws IllegalStateException naming the unknown variable and listing the valid ones
	 */
	static void checkVariables(String where, String what, List<Expression> parts, Method method) {
		@Nullable String @Nullable [] names = PARAMETER_NAMES.getParameterNames(method);
		int count = method.getParameterCount();
		for (Expression part : parts) {
			if (!(part instanceof SpelExpression spel)) {
				continue;
			}
			for (String variable : variables(spel.getAST(), new java.util.ArrayList<>())) {
				if (variable.equals("root") || variable.equals("this") || isIndexed(variable, count)
						|| (names != null && java.util.Arrays.asList(names).contains(variable))) {
					continue;
				}
				StringBuilder valid = new StringBuilder();
				for (int i = 0; i < count; i++) {
					valid.append((i > 0) ? ", " : "")
						.append((names != null) ? "#" + names[i] + " (or #p" + i + ")" : "#p" + i);
				}
				throw new IllegalStateException(where + ": " + what + " expression #{" + part.getExpressionString()
						+ "} refers to #" + variable + ", which is not a parameter of the method, so it would evaluate "
						+ "to null. " + ((count == 0) ? "The method has no parameters."
								: "Valid parameter references: " + valid + ".")
						+ ((names == null && count > 0) ? " Parameter names are not available: compile with "
								+ "-parameters (Spring Boot's Maven and Gradle plugins do) to use them." : ""));
			}
		}
	}

	private static final ParameterNameDiscoverer PARAMETER_NAMES = new DefaultParameterNameDiscoverer();

	/** The names of the {@code #variable} references under a node, in order of appearance. */
	private static List<String> variables(SpelNode node, List<String> found) {
		if (node instanceof VariableReference) {
			found.add(node.toStringAST().substring(1));
		}
		for (int i = 0; i < node.getChildCount(); i++) {
			variables(node.getChild(i), found);
		}
		return found;
	}

	/** Whether a name is {@code pN} or {@code aN} with {@code N} below the parameter count. */
	private static boolean isIndexed(String name, int count) {
		if (name.length() < 2 || (name.charAt(0) != 'p' && name.charAt(0) != 'a')) {
			return false;
		}
		try {
			int index = Integer.parseInt(name.substring(1));
			return index >= 0 && index < count;
		}
		catch (NumberFormatException ex) {
			return false;
		}
	}

	/** The template with its {@code ${...}} placeholders resolved; an {@link IllegalStateException} if one does not. */
	static String resolve(PropertyResolver placeholders, String where, String raw) {
		try {
			return placeholders.resolveRequiredPlaceholders(raw);
		}
		catch (IllegalArgumentException ex) {
			throw new IllegalStateException(where + ": " + ex.getMessage(), ex);
		}
	}

	/** The literal parts and expressions of a parsed template, in order. */
	static List<Expression> parts(Expression parsed) {
		return (parsed instanceof CompositeStringExpression composite) ? List.of(composite.getExpressions())
				: List.of(parsed);
	}

	/** Whether the template needs no evaluation (no SpEL parts). */
	static boolean isLiteral(List<Expression> parts) {
		return parts.stream().allMatch(LiteralExpression.class::isInstance);
	}

	/**
	 * Evaluates a template for one invocation, over a {@link MethodBasedEvaluationContext} (so {@code #name},
	 * {@code #p0} and {@code #a0} work) with {@link LockExpressionRootObject} as root.
	 * @param what names the attribute in messages, for example {@code "@DistributedLock resource"}
	 * @param annotated the annotated method, named in messages
	 * @throws IllegalArgumentException if an expression throws or evaluates to {@code null} or blank, naming the
	 * method and the expression
	 */
	static String evaluate(List<Expression> parts, String what, Method annotated, Method method, @Nullable Object[] args,
			@Nullable Object target,
			Class<?> targetClass, ParameterNameDiscoverer parameterNames, @Nullable BeanResolver beanResolver) {
		LockExpressionRootObject root = new LockExpressionRootObject(method, args, target, targetClass);
		MethodBasedEvaluationContext context = new MethodBasedEvaluationContext(root, method,
				(args != null) ? args : new Object[0], parameterNames);
		if (beanResolver != null) {
			context.setBeanResolver(beanResolver);
		}
		StringBuilder result = new StringBuilder();
		for (Expression part : parts) {
			if (part instanceof LiteralExpression literal) {
				result.append(literal.getExpressionString());
				continue;
			}
			String value;
			try {
				value = part.getValue(context, String.class);
			}
			catch (RuntimeException ex) {
				throw new IllegalArgumentException(what + " expression #{" + part.getExpressionString() + "} of "
						+ LockAttribute.describe(annotated) + " failed: " + ex.getMessage(), ex);
			}
			if (value == null || value.isBlank()) {
				throw new IllegalArgumentException(what + " expression #{" + part.getExpressionString() + "} of "
						+ LockAttribute.describe(annotated) + " evaluated to " + ((value == null) ? "null" : "a blank string")
						+ "; the name would be ambiguous, so every expression must give a non-blank value");
			}
			result.append(value);
		}
		return result.toString();
	}

	/**
	 * Parses a duration attribute ({@code "500ms"}, {@code "5s"}, ISO-8601; placeholders allowed).
	 * @return the duration, or {@code null} if the attribute is empty
	 * @throws IllegalStateException naming the annotation, method and attribute if it does not resolve or parse
	 */
	@Nullable
	static Duration duration(PropertyResolver placeholders, String where, String attribute, String value) {
		if (!StringUtils.hasText(value)) {
			return null;
		}
		String resolved;
		try {
			resolved = placeholders.resolveRequiredPlaceholders(value.trim());
		}
		catch (IllegalArgumentException ex) {
			throw new IllegalStateException(where + ": " + attribute + " '" + value + "': " + ex.getMessage(), ex);
		}
		try {
			return DurationFormatterUtils.detectAndParse(resolved);
		}
		catch (IllegalArgumentException ex) {
			throw new IllegalStateException(where + ": " + attribute + " '" + value + "'"
					+ (resolved.equals(value.trim()) ? "" : " (resolved to '" + resolved + "')")
					+ " is not a duration (use e.g. \"500ms\", \"5s\", \"PT1M\")", ex);
		}
	}

}
