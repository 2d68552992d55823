package io.github.dblock;

import java.lang.reflect.Method;

import org.jspecify.annotations.Nullable;

/**
 * Decides what a {@link DistributedLock} method returns when its lock stays busy, for
 * {@code @DistributedLock(failureHandler = "beanName")}: implement it as a Spring bean with that name. It is called
 * on the caller's thread instead of the method, which does not run. Implementations must be thread-safe.
 */
@FunctionalInterface
public interface LockFailureHandler {

	/**
	 * Handles a lock that could not be acquired.
	 * @param failure the resource, the method, its arguments and the exception
	 * @return the value the method call returns instead; it must fit the method's return type
	 * @throws Exception to make the call fail instead (for example the failure's own exception)
	 */
	@Nullable
	Object handle(LockFailure failure) throws Exception;

	/**
	 * A lock that could not be acquired for a method call.
	 *
	 * @param resource the evaluated resource name
	 * @param method the annotated method
	 * @param arguments the call's arguments
	 * @param exception what the lock reported, with the wait time and the holder when known
	 */
	record LockFailure(String resource, Method method, @Nullable Object[] arguments, LockNotAcquiredException exception) {
	}

}
