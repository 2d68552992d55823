package io.github.dblock.testing;

import org.assertj.core.api.AbstractAssert;
import org.jspecify.annotations.Nullable;

/**
 * Assertions on the store of the locks, through its {@link LockFaults}: whether resources are free or taken there
 * now, by any owner of any node ({@link LockFaults#isLocked(String)}). Start with
 * {@link LockAssertions#assertThat(LockFaults)}, typically at the end of a test: {@code
 * assertThat(faults).isFree("stock:sku-1")}. Not thread-safe (like every AssertJ assertion).
 */
public final class LockStoreAssert extends AbstractAssert<LockStoreAssert, LockFaults> {

	LockStoreAssert(@Nullable LockFaults actual) {
		super(actual, LockStoreAssert.class);
	}

	/**
	 * Verifies that the resources are free now: no exclusive, read or write lock on them is held (nor kept for a
	 * minimum hold time).
	 * @param resources the resource names
	 * @return this assertion
	 * @throws org.springframework.dao.DataAccessException on the real table, if the database could not be reached
	 */
	public LockStoreAssert isFree(String... resources) {
		isNotNull();
		for (String resource : resources) {
			if (this.actual.isLocked(resource)) {
				failWithMessage("Expected the lock <%s> to be free but it is taken (%s)", resource, this.actual);
			}
		}
		return this;
	}

	/**
	 * Verifies that the resource is taken now by some owner.
	 * @param resource the resource name
	 * @return this assertion
	 * @throws org.springframework.dao.DataAccessException on the real table, if the database could not be reached
	 */
	public LockStoreAssert isLocked(String resource) {
		isNotNull();
		if (!this.actual.isLocked(resource)) {
			failWithMessage("Expected the lock <%s> to be taken but it is free (%s)", resource, this.actual);
		}
		return this;
	}

}
