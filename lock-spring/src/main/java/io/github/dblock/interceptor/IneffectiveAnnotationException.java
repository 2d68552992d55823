package io.github.dblock.interceptor;

import java.lang.annotation.Annotation;
import java.lang.reflect.Method;

/**
 * Thrown at start-up when a {@link io.github.dblock.DistributedLock @DistributedLock},
 * {@link io.github.dblock.semaphore.DistributedSemaphore @DistributedSemaphore} or
 * {@link io.github.dblock.idempotency.Idempotent @Idempotent} annotation on a method cannot take effect: the method is
 * private, static or final, its bean was not proxied, its settings contradict the configuration, and so on. The
 * method would otherwise run without its lock, so start-up stops; Spring Boot reports the exception as a failure
 * analysis with {@link #getReason()} as the description and {@link #getAction()} as the action. Immutable.
 */
public class IneffectiveAnnotationException extends IllegalStateException {

	private static final long serialVersionUID = 1L;

	private final Class<? extends Annotation> annotationType;

	private final String method;

	private final String reason;

	private final String action;

	/**
	 * @param annotationType the annotation that cannot take effect
	 * @param method the annotated method
	 * @param reason why, as a sentence without its final period
	 * @param action what to do about it, as a sentence without its final period
	 */
	public IneffectiveAnnotationException(Class<? extends Annotation> annotationType, Method method, String reason,
			String action) {
		super("@" + annotationType.getSimpleName() + " on " + LockAttribute.describe(method) + " cannot take effect: "
				+ reason + ". " + action + ".");
		this.annotationType = annotationType;
		this.method = LockAttribute.describe(method);
		this.reason = reason;
		this.action = action;
	}

	/** The annotation that cannot take effect. */
	public Class<? extends Annotation> getAnnotationType() {
		return this.annotationType;
	}

	/** The annotated method, as {@code Type.method(ParameterType, ...)}. */
	public String getMethod() {
		return this.method;
	}

	/** Why the annotation cannot take effect. */
	public String getReason() {
		return this.reason;
	}

	/** What to do about it. */
	public String getAction() {
		return this.action;
	}

}
