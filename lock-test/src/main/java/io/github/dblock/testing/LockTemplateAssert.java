package io.github.dblock.testing;

import java.util.List;

import io.github.dblock.LockIntrospection;
import io.github.dblock.LockTemplate;
import org.assertj.core.api.AbstractAssert;
import org.jspecify.annotations.Nullable;

/**
 * Assertions on what a {@link LockTemplate}'s node holds now ({@link LockIntrospection#localHolds()}): that a test left
 * no lock held, or that a lock is held by this node. Start with {@link LockAssertions#assertThat(LockTemplate)}. Not
 * thread-safe (like every AssertJ assertion).
 */
public final class LockTemplateAssert extends AbstractAssert<LockTemplateAssert, LockTemplate> {

	LockTemplateAssert(@Nullable LockTemplate actual) {
		super(actual, LockTemplateAssert.class);
	}

	/**
	 * Verifies that the template's node holds no lock now, exclusive, read or write, on any thread.
	 * @return this assertion
	 */
	public LockTemplateAssert holdsNoLocks() {
		isNotNull();
		List<LockIntrospection.LocalHold> holds = this.actual.introspection().localHolds();
		if (!holds.isEmpty()) {
			failWithMessage("Expected node <%s> to hold no locks but it holds %s", this.actual.getNodeName(), holds);
		}
		return this;
	}

	/**
	 * Verifies that the template's node holds the resource's lock now (on any of its threads).
	 * @param resource the resource name, compared exactly
	 * @return this assertion
	 */
	public LockTemplateAssert holds(String resource) {
		isNotNull();
		List<LockIntrospection.LocalHold> holds = this.actual.introspection().localHolds();
		if (holds.stream().noneMatch((hold) -> hold.resource().equals(resource))) {
			failWithMessage("Expected node <%s> to hold the lock <%s> but it holds %s", this.actual.getNodeName(),
					resource, holds);
		}
		return this;
	}

}
