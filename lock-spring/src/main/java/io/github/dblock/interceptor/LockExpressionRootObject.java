package io.github.dblock.interceptor;

import java.lang.reflect.Method;

import org.jspecify.annotations.Nullable;

/**
 * The root object of {@link io.github.dblock.DistributedLock} resource expressions: {@code #root.method},
 * {@code #root.args}, {@code #root.target} and {@code #root.targetClass}.
 *
 * @param method the invoked method
 * @param args its arguments
 * @param target the target bean, or {@code null} if the invocation has none
 * @param targetClass the target bean's class
 */
public record LockExpressionRootObject(Method method, @Nullable Object[] args, @Nullable Object target,
		Class<?> targetClass) {

	/** The invoked method's name. */
	public String methodName() {
		return this.method.getName();
	}

}
