package io.github.dblock.testing;

import io.github.dblock.CurrentLock;
import io.github.dblock.LockHandle;
import io.github.dblock.LockTemplate;
import org.assertj.core.api.Assertions;
import org.jspecify.annotations.Nullable;

/**
 * AssertJ-style entry points for the locks of the code under test; import them statically next to AssertJ's
 * {@code Assertions.assertThat} (the overloads do not clash):
 *
 * <pre class="code">
 * assertThat(recorder).hasAcquired("stock:sku-1").hasMode(LockMode.LEASE).isNoLongerHeld(); // the lock a call ran under
 * assertThatCurrentLock("stock:sku-1").hasType(LockType.EXCLUSIVE);                          // inside the locked code
 * assertThat(faults).isFree("stock:sku-1");                                                  // nothing left held
 * assertThat(lockTemplate).holdsNoLocks();
 * </pre>
 *
 * Stateless and thread-safe; the assertions it returns are not (like every AssertJ assertion).
 */
public final class LockAssertions {

	private LockAssertions() {
	}

	/**
	 * Assertions on a lock handle.
	 * @param actual the handle, may be null (the assertions then fail)
	 * @return the assertion
	 */
	public static LockHandleAssert assertThat(@Nullable LockHandle actual) {
		return new LockHandleAssert(actual);
	}

	/**
	 * Assertions on the acquisitions a recorder saw.
	 * @param actual the recorder, may be null (the assertions then fail)
	 * @return the assertion
	 */
	public static LockRecorderAssert assertThat(@Nullable LockRecorder actual) {
		return new LockRecorderAssert(actual);
	}

	/**
	 * Assertions on one recorded acquisition.
	 * @param actual the recorded acquisition, may be null (the assertions then fail)
	 * @return the assertion
	 */
	public static RecordedLockAssert assertThat(@Nullable RecordedLock actual) {
		return new RecordedLockAssert(actual);
	}

	/**
	 * Assertions on the store of the locks (the real table through {@link JdbcLockFaults}, or an
	 * {@link InMemoryLockStore}): which resources are free or taken now.
	 * @param actual the store's faults, may be null (the assertions then fail)
	 * @return the assertion
	 */
	public static LockStoreAssert assertThat(@Nullable LockFaults actual) {
		return new LockStoreAssert(actual);
	}

	/**
	 * Assertions on the locks a template's node holds now.
	 * @param actual the template, may be null (the assertions then fail)
	 * @return the assertion
	 */
	public static LockTemplateAssert assertThat(@Nullable LockTemplate actual) {
		return new LockTemplateAssert(actual);
	}

	/**
	 * Assertions on the lock the current thread holds on the resource ({@link CurrentLock#get(String)}), for a stub
	 * or fake called from inside locked code; fails if it holds none (ShedLock's {@code LockAssert.assertLocked()},
	 * with the resource, mode and token to check).
	 * @param resource the resource name, compared exactly
	 * @return an assertion on the current thread's innermost hold of the resource
	 * @throws AssertionError if the current thread holds no lock on the resource
	 */
	public static LockHandleAssert assertThatCurrentLock(String resource) {
		LockHandle handle = CurrentLock.get(resource).orElse(null);
		if (handle == null) {
			Assertions.fail("Expected the current thread (" + Thread.currentThread().getName() + ") to hold the lock <"
					+ resource + "> but it holds " + CurrentLock.get().map(Object::toString).orElse("none"));
		}
		return new LockHandleAssert(handle);
	}

}
