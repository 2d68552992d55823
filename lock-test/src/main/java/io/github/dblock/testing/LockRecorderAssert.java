package io.github.dblock.testing;

import java.util.List;

import org.assertj.core.api.AbstractAssert;
import org.assertj.core.api.Assertions;
import org.assertj.core.api.ListAssert;
import org.jspecify.annotations.Nullable;

/**
 * Assertions on what a {@link LockRecorder} recorded: which locks the code under test took (or found busy), and
 * through {@link RecordedLockAssert} the mode, type and fencing token of each. Start with
 * {@link LockAssertions#assertThat(LockRecorder)}:
 *
 * <pre class="code">
 * assertThat(recorder).hasAcquired("stock:sku-1").hasMode(LockMode.LEASE).isNoLongerHeld();
 * assertThat(recorder).hasFoundBusy("report:daily");
 * </pre>
 *
 * Not thread-safe (like every AssertJ assertion); the recorder may go on recording meanwhile, each method reads a
 * snapshot.
 */
public final class LockRecorderAssert extends AbstractAssert<LockRecorderAssert, LockRecorder> {

	LockRecorderAssert(@Nullable LockRecorder actual) {
		super(actual, LockRecorderAssert.class);
	}

	/**
	 * Verifies that the lock of the resource was taken at least once.
	 * @param resource the resource name, compared exactly
	 * @return an assertion on the latest acquisition of the resource that took the lock
	 */
	public RecordedLockAssert hasAcquired(String resource) {
		isNotNull();
		RecordedLock last = this.actual.lastAcquired(resource)
			.orElseThrow(() -> failure("Expected the lock <%s> to have been acquired, but it was not; recorded: %s",
					resource, this.actual.acquisitions()));
		return new RecordedLockAssert(last);
	}

	/**
	 * Verifies that the lock of the resource was taken exactly {@code times} times (re-entries included).
	 * @param resource the resource name, compared exactly
	 * @param times how often
	 * @return an assertion on the latest acquisition of the resource that took the lock
	 */
	public RecordedLockAssert hasAcquired(String resource, int times) {
		isNotNull();
		long acquired = this.actual.acquisitions(resource).stream().filter(RecordedLock::isAcquired).count();
		if (acquired != times) {
			failWithMessage("Expected the lock <%s> to have been acquired <%d> times but it was <%d> times; recorded: %s",
					resource, times, acquired, this.actual.acquisitions(resource));
		}
		return hasAcquired(resource);
	}

	/**
	 * Verifies that the lock of the resource was never taken (it may have been asked for and found busy).
	 * @param resource the resource name, compared exactly
	 * @return this assertion
	 */
	public LockRecorderAssert hasNotAcquired(String resource) {
		isNotNull();
		if (this.actual.lastAcquired(resource).isPresent()) {
			failWithMessage("Expected the lock <%s> never to have been acquired, but it was: %s", resource,
					this.actual.acquisitions(resource));
		}
		return this;
	}

	/**
	 * Verifies that an acquisition of the resource found the lock busy for its whole wait time (an exception, a
	 * skip, or an empty {@code tryAcquire}).
	 * @param resource the resource name, compared exactly
	 * @return an assertion on the latest such acquisition
	 */
	public RecordedLockAssert hasFoundBusy(String resource) {
		isNotNull();
		List<RecordedLock> ofResource = this.actual.acquisitions(resource);
		for (int i = ofResource.size() - 1; i >= 0; i--) {
			if (ofResource.get(i).outcome() == RecordedLock.Outcome.NOT_ACQUIRED) {
				return new RecordedLockAssert(ofResource.get(i));
			}
		}
		throw failure("Expected an acquisition of <%s> to have found the lock busy, but none did; recorded: %s",
				resource, ofResource);
	}

	/**
	 * Verifies that nothing was recorded.
	 * @return this assertion
	 */
	public LockRecorderAssert hasNoAcquisitions() {
		isNotNull();
		if (!this.actual.acquisitions().isEmpty()) {
			failWithMessage("Expected no lock acquisitions but found %s", this.actual.acquisitions());
		}
		return this;
	}

	/**
	 * Every recorded acquisition, oldest first, for AssertJ's list assertions.
	 * @return a list assertion
	 */
	public ListAssert<RecordedLock> acquisitions() {
		isNotNull();
		return Assertions.assertThat(this.actual.acquisitions());
	}

}
