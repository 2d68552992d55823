package io.github.dblock.testing.autoconfigure;

import io.github.dblock.testing.LockRecorder;
import org.springframework.core.Ordered;
import org.springframework.test.context.TestContext;
import org.springframework.test.context.TestExecutionListener;

/**
 * Clears the {@link LockRecorder} of a Spring test's application context before each test method, so that a test
 * sees only its own acquisitions although the context (and its recorder) is cached and shared between tests.
 * Registered for every Spring test through {@code META-INF/spring.factories}; it does nothing for a context without
 * a recorder and never loads a context. Stateless and thread-safe.
 */
public final class LockRecorderTestExecutionListener implements TestExecutionListener, Ordered {

	@Override
	public void beforeTestMethod(TestContext testContext) {
		if (testContext.hasApplicationContext()) {
			testContext.getApplicationContext().getBeanProvider(LockRecorder.class).ifAvailable(LockRecorder::clear);
		}
	}

	/** Early, before listeners that run code of the test's own (a recorder cleared later would lose its calls). */
	@Override
	public int getOrder() {
		return Ordered.HIGHEST_PRECEDENCE + 100;
	}

}
