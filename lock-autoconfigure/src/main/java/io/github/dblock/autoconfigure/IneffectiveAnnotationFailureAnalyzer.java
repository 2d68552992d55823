package io.github.dblock.autoconfigure;

import io.github.dblock.interceptor.IneffectiveAnnotationException;
import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * Reports a start-up stopped by an annotation that cannot take effect ({@link IneffectiveAnnotationException}, for
 * example {@code @DistributedLock} on a private method) as Spring Boot's failure report: the method and why as the
 * description, the fix as the action, instead of a stack trace. Registered in {@code META-INF/spring.factories}.
 * Stateless and thread-safe.
 */
public class IneffectiveAnnotationFailureAnalyzer extends AbstractFailureAnalyzer<IneffectiveAnnotationException> {

	@Override
	protected FailureAnalysis analyze(Throwable rootFailure, IneffectiveAnnotationException cause) {
		String annotation = "@" + cause.getAnnotationType().getSimpleName();
		String description = annotation + " on " + cause.getMethod() + " cannot take effect: " + cause.getReason()
				+ ".\n\nThe method would run without its " + guard(annotation) + ", so the application does not start.";
		return new FailureAnalysis(description, cause.getAction() + ".", cause);
	}

	private static String guard(String annotation) {
		return switch (annotation) {
			case "@DistributedSemaphore" -> "permit";
			case "@Idempotent" -> "idempotency key";
			default -> "lock";
		};
	}

}
