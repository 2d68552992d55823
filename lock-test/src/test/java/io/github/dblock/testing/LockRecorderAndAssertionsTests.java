package io.github.dblock.testing;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.LockType;
import io.github.dblock.LockUpgradeException;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import org.junit.jupiter.api.Test;

import static io.github.dblock.testing.LockAssertions.assertThat;
import static io.github.dblock.testing.LockAssertions.assertThatCurrentLock;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link LockRecorder} records what a template's callers asked for and got, and {@link LockAssertions} pass on what
 * happened and fail, naming what was recorded, on what did not.
 */
class LockRecorderAndAssertionsTests {

	private final InMemoryLockTemplate locks = new InMemoryLockTemplate();

	private final LockRecorder recorder = this.locks.recorder();

	@Test
	void recordsAcquisitionsWithTheirHandlesReentriesBusyCallsAndFailures() {
		LockHandle outer = this.locks.acquire("r");
		try (LockHandle inner = this.locks.acquire("r")) {
			assertThat(inner.fencingToken()).isEqualTo(outer.fencingToken());
		}
		outer.close();
		this.locks.faults().takeOver("busy", Duration.ofMinutes(1));
		assertThat(this.locks.tryAcquire("busy")).isEmpty();
		try (LockHandle read = this.locks.acquire("rw", LockOptions.defaults().withType(LockType.READ))) {
			assertThatExceptionOfType(LockUpgradeException.class)
				.isThrownBy(() -> this.locks.acquire("rw", LockOptions.defaults().withType(LockType.WRITE)));
		}
		List<RecordedLock> recorded = this.recorder.acquisitions();
		assertThat(recorded).extracting(RecordedLock::resource).containsExactly("r", "r", "busy", "rw", "rw");
		assertThat(recorded).extracting(RecordedLock::outcome)
			.containsExactly(RecordedLock.Outcome.ACQUIRED, RecordedLock.Outcome.ACQUIRED,
					RecordedLock.Outcome.NOT_ACQUIRED, RecordedLock.Outcome.ACQUIRED, RecordedLock.Outcome.FAILED);
		assertThat(recorded.get(0).handle()).containsSame(outer);
		assertThat(recorded.get(1).fencingToken()).hasValue(outer.fencingToken());
		assertThat(recorded.get(0).node()).isEqualTo("in-memory");
		assertThat(recorded.get(0).thread()).isEqualTo(Thread.currentThread().getName());
		assertThat(recorded.get(2).handle()).isEmpty();
		assertThat(recorded.get(3).type()).contains(LockType.READ);
		assertThat(recorded.get(4).failure()).containsInstanceOf(LockUpgradeException.class);
		assertThat(this.recorder).hasAcquired("r", 2).hasMode(LockMode.LEASE).hasType(LockType.EXCLUSIVE)
			.hasFencingToken(outer.fencingToken()).isNoLongerHeld();
		assertThat(this.recorder).hasFoundBusy("busy");
		assertThat(this.recorder).hasNotAcquired("busy");
		this.recorder.clear();
		assertThat(this.recorder).hasNoAcquisitions();
	}

	@Test
	void optimisticWorkIsRecordedWithoutAHandle() {
		this.locks.execute("o", LockOptions.defaults().withMode(LockMode.OPTIMISTIC), (lock) -> "done");
		assertThat(this.recorder).hasAcquired("o").hasMode(LockMode.OPTIMISTIC);
		assertThat(this.recorder.lastAcquired("o").orElseThrow().handle()).isEmpty();
		assertThatThrownBy(() -> assertThat(this.recorder).hasAcquired("o").hasFencingToken(1))
			.isInstanceOf(AssertionError.class).hasMessageContaining("OPTIMISTIC");
	}

	@Test
	void attachesToATemplateThatHasARegistryAlreadyWithoutReplacingIt() {
		ObservationRegistry registry = ObservationRegistry.create();
		AtomicInteger seenByTheApplication = new AtomicInteger();
		registry.observationConfig().observationHandler(new ObservationHandler<Observation.Context>() {
			@Override
			public boolean supportsContext(Observation.Context context) {
				return true;
			}

			@Override
			public void onStop(Observation.Context context) {
				if (context.getName().equals("distributed.lock.acquire")) {
					seenByTheApplication.incrementAndGet();
				}
			}
		});
		LockTemplate template = new InMemoryLockTemplate(new InMemoryLockStore(), "app");
		template.setObservationRegistry(registry);
		LockRecorder own = new LockRecorder().attachTo(template);
		template.acquire("x").close();
		assertThat(template.getObservationRegistry()).isSameAs(registry);
		assertThat(seenByTheApplication).hasValue(1);
		assertThat(own).hasAcquired("x", 1).wasTakenByNode("app");
	}

	@Test
	void assertionsFailNamingWhatWasRecordedOrHeld() {
		this.locks.acquire("a").close();
		assertThatThrownBy(() -> assertThat(this.recorder).hasAcquired("b")).isInstanceOf(AssertionError.class)
			.hasMessageContaining("<b>").hasMessageContaining("resource=a");
		assertThatThrownBy(() -> assertThat(this.recorder).hasAcquired("a", 2)).isInstanceOf(AssertionError.class)
			.hasMessageContaining("<2> times but it was <1> times");
		assertThatThrownBy(() -> assertThat(this.recorder).hasNotAcquired("a")).isInstanceOf(AssertionError.class);
		assertThatThrownBy(() -> assertThat(this.recorder).hasFoundBusy("a")).isInstanceOf(AssertionError.class);
		try (LockHandle held = this.locks.acquire("a")) {
			assertThatThrownBy(() -> assertThat(this.locks.store()).isFree("a")).isInstanceOf(AssertionError.class)
				.hasMessageContaining("<a>");
			assertThatThrownBy(() -> assertThat(this.locks).holdsNoLocks()).isInstanceOf(AssertionError.class)
				.hasMessageContaining("resource=a");
			assertThat(this.locks).holds("a");
			assertThat(this.locks.store()).isLocked("a");
			assertThat(held).isHeld().hasResource("a").hasMode(LockMode.LEASE).hasType(LockType.EXCLUSIVE)
				.hasFencingTokenGreaterThan(0);
			assertThatThrownBy(() -> assertThat(held).hasMode(LockMode.PESSIMISTIC)).isInstanceOf(AssertionError.class)
				.hasMessageContaining("PESSIMISTIC");
			assertThatCurrentLock("a").hasFencingToken(held.fencingToken());
			assertThatThrownBy(() -> assertThatCurrentLock("b")).isInstanceOf(AssertionError.class)
				.hasMessageContaining("<b>");
			assertThatThrownBy(() -> assertThat(this.recorder).hasAcquired("a").isNoLongerHeld())
				.isInstanceOf(AssertionError.class);
		}
		assertThat(this.locks.store()).isFree("a");
		assertThat(this.locks).holdsNoLocks();
		assertThatThrownBy(() -> assertThat((LockHandle) null).isHeld()).isInstanceOf(AssertionError.class);
	}

}
