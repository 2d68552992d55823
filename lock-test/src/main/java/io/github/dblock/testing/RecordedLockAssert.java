package io.github.dblock.testing;

import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockType;
import org.assertj.core.api.AbstractAssert;
import org.jspecify.annotations.Nullable;

/**
 * Assertions on one {@link RecordedLock}: the lock a call ran under (or asked for), its mode, type and fencing token,
 * and whether it is still held. Returned by {@link LockRecorderAssert}. Not thread-safe (like every AssertJ assertion).
 */
public final class RecordedLockAssert extends AbstractAssert<RecordedLockAssert, RecordedLock> {

	RecordedLockAssert(@Nullable RecordedLock actual) {
		super(actual, RecordedLockAssert.class);
	}

	/**
	 * Verifies the mode of the call.
	 * @param mode the expected mode
	 * @return this assertion
	 */
	public RecordedLockAssert hasMode(LockMode mode) {
		isNotNull();
		if (this.actual.mode() != mode) {
			failWithMessage("Expected %s to be in mode <%s>", this.actual, mode);
		}
		return this;
	}

	/**
	 * Verifies the kind of lock taken.
	 * @param type the expected type
	 * @return this assertion
	 */
	public RecordedLockAssert hasType(LockType type) {
		if (handle().type() != type) {
			failWithMessage("Expected %s to be of type <%s>", this.actual, type);
		}
		return this;
	}

	/**
	 * Verifies the fencing token of the acquisition.
	 * @param fencingToken the expected token
	 * @return this assertion
	 */
	public RecordedLockAssert hasFencingToken(long fencingToken) {
		if (handle().fencingToken() != fencingToken) {
			failWithMessage("Expected %s to have fencing token <%d>", this.actual, fencingToken);
		}
		return this;
	}

	/**
	 * Verifies that the fencing token is greater than another, for example a previous holder's.
	 * @param fencingToken the token it must exceed
	 * @return this assertion
	 */
	public RecordedLockAssert hasFencingTokenGreaterThan(long fencingToken) {
		if (handle().fencingToken() <= fencingToken) {
			failWithMessage("Expected %s to have a fencing token greater than <%d>", this.actual, fencingToken);
		}
		return this;
	}

	/**
	 * Verifies which node (template) made the call.
	 * @param node the expected node name
	 * @return this assertion
	 */
	public RecordedLockAssert wasTakenByNode(String node) {
		isNotNull();
		if (!this.actual.node().equals(node)) {
			failWithMessage("Expected %s to be taken by node <%s>", this.actual, node);
		}
		return this;
	}

	/**
	 * Verifies that the hold is still held now (for example a lock the code under test should keep).
	 * @return this assertion
	 */
	public RecordedLockAssert isStillHeld() {
		if (!handle().isHeld()) {
			failWithMessage("Expected %s to be still held but it was not (closed, lost, or its lease over)", this.actual);
		}
		return this;
	}

	/**
	 * Verifies that the hold is no longer held: released, lost, or its lease over (for example after the locked call
	 * returned).
	 * @return this assertion
	 */
	public RecordedLockAssert isNoLongerHeld() {
		if (handle().isHeld()) {
			failWithMessage("Expected %s to be no longer held but it still was", this.actual);
		}
		return this;
	}

	private LockHandle handle() {
		isNotNull();
		return this.actual.handle()
			.orElseThrow(() -> failure("Expected %s to have a handle, but it has none (not acquired, or OPTIMISTIC "
					+ "work, whose handle lives only while the work runs)", this.actual));
	}

}
