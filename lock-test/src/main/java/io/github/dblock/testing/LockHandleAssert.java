package io.github.dblock.testing;

import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockType;
import org.assertj.core.api.AbstractAssert;
import org.jspecify.annotations.Nullable;

/**
 * Assertions on a {@link LockHandle}: the lock a call holds or held, its mode, type and fencing token, and whether it
 * is still held. Start with {@link LockAssertions#assertThat(LockHandle)} or
 * {@link LockAssertions#assertThatCurrentLock(String)}. Not thread-safe (like every AssertJ assertion); the handle's
 * accessors may be read from any thread.
 */
public final class LockHandleAssert extends AbstractAssert<LockHandleAssert, LockHandle> {

	LockHandleAssert(@Nullable LockHandle actual) {
		super(actual, LockHandleAssert.class);
	}

	/**
	 * Verifies that the lock is on the given resource (compared exactly, as the locks compare names).
	 * @param resource the expected resource name
	 * @return this assertion
	 */
	public LockHandleAssert hasResource(String resource) {
		isNotNull();
		if (!this.actual.resource().equals(resource)) {
			failWithMessage("Expected the lock to be on <%s> but it was on <%s>", resource, this.actual.resource());
		}
		return this;
	}

	/**
	 * Verifies the mode the lock was taken in.
	 * @param mode the expected mode
	 * @return this assertion
	 */
	public LockHandleAssert hasMode(LockMode mode) {
		isNotNull();
		if (this.actual.mode() != mode) {
			failWithMessage("Expected lock <%s> to be held in mode <%s> but it was <%s>", this.actual.resource(), mode,
					this.actual.mode());
		}
		return this;
	}

	/**
	 * Verifies the kind of lock: EXCLUSIVE, or the READ or WRITE side of a read/write lock.
	 * @param type the expected type
	 * @return this assertion
	 */
	public LockHandleAssert hasType(LockType type) {
		isNotNull();
		if (this.actual.type() != type) {
			failWithMessage("Expected lock <%s> to be of type <%s> but it was <%s>", this.actual.resource(), type,
					this.actual.type());
		}
		return this;
	}

	/**
	 * Verifies the fencing token of the acquisition.
	 * @param fencingToken the expected token
	 * @return this assertion
	 */
	public LockHandleAssert hasFencingToken(long fencingToken) {
		isNotNull();
		if (this.actual.fencingToken() != fencingToken) {
			failWithMessage("Expected lock <%s> to have fencing token <%d> but it had <%d>", this.actual.resource(),
					fencingToken, this.actual.fencingToken());
		}
		return this;
	}

	/**
	 * Verifies that the fencing token is greater than another, for example a previous holder's.
	 * @param fencingToken the token it must exceed
	 * @return this assertion
	 */
	public LockHandleAssert hasFencingTokenGreaterThan(long fencingToken) {
		isNotNull();
		if (this.actual.fencingToken() <= fencingToken) {
			failWithMessage("Expected lock <%s> to have a fencing token greater than <%d> but it had <%d>",
					this.actual.resource(), fencingToken, this.actual.fencingToken());
		}
		return this;
	}

	/**
	 * Verifies that the handle still holds its lock ({@link LockHandle#isHeld()}: not closed, not lost, lease not
	 * over by this JVM's clock).
	 * @return this assertion
	 */
	public LockHandleAssert isHeld() {
		isNotNull();
		if (!this.actual.isHeld()) {
			failWithMessage("Expected lock <%s> to be held but it was not (closed, lost, or its lease over): %s",
					this.actual.resource(), this.actual);
		}
		return this;
	}

	/**
	 * Verifies that the handle no longer holds its lock: closed, lost, or its lease over.
	 * @return this assertion
	 */
	public LockHandleAssert isNotHeld() {
		isNotNull();
		if (this.actual.isHeld()) {
			failWithMessage("Expected lock <%s> not to be held any more but it was: %s", this.actual.resource(),
					this.actual);
		}
		return this;
	}

}
