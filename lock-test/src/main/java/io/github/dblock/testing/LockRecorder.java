package io.github.dblock.testing;

import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedQueue;

import io.github.dblock.CurrentLock;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockTemplate;
import io.micrometer.common.KeyValue;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import org.jspecify.annotations.Nullable;

/**
 * Records the acquisitions of one or more {@link LockTemplate}s: every call that asks a template for a lock (its own
 * methods, {@code @DistributedLock} methods, the ShedLock and Spring Integration adapters), with its resource, mode
 * and outcome and, when the lock was taken, the caller's handle (type, fencing token, whether it is still held), in
 * the order the acquisitions ended. {@link LockAssertions#assertThat(LockRecorder)} asserts on them.
 * <p>
 * It listens to the template's {@code distributed.lock.acquire} observations (see
 * {@link LockTemplate#setObservationRegistry}) and, when one ends acquired, takes the new hold from
 * {@link CurrentLock} on the acquiring thread; so it adds no code to the lock path, only an observation handler.
 * Semaphores and idempotency keys are not recorded.
 * <p>
 * Thread-safe; recording and reading may happen on any threads at once.
 */
public final class LockRecorder {

	private static final String ACQUIRE = "distributed.lock.acquire";

	/** In the order the acquisitions ended; appended by the acquiring threads. */
	private final ConcurrentLinkedQueue<RecordedLock> acquisitions = new ConcurrentLinkedQueue<>();

	/**
	 * Starts recording the acquisitions of a template: adds an observation handler to its observation registry, or,
	 * when it has none ({@link ObservationRegistry#NOOP}), gives it a new registry with only that handler. Attaching
	 * the same recorder to several templates (nodes) records them all; {@link RecordedLock#node()} tells them apart.
	 * @param template the template; not null
	 * @return this recorder
	 * @throws IllegalArgumentException if the template is null
	 */
	public LockRecorder attachTo(LockTemplate template) {
		if (template == null) {
			throw new IllegalArgumentException("template must not be null");
		}
		ObservationRegistry registry = template.getObservationRegistry();
		if (registry == ObservationRegistry.NOOP) {
			registry = ObservationRegistry.create();
			template.setObservationRegistry(registry);
		}
		registry.observationConfig().observationHandler(new Handler(template.getNodeName()));
		return this;
	}

	/** Every recorded acquisition, oldest first; a snapshot. */
	public List<RecordedLock> acquisitions() {
		return List.copyOf(this.acquisitions);
	}

	/** The recorded acquisitions of one resource, oldest first; a snapshot. */
	public List<RecordedLock> acquisitions(String resource) {
		return this.acquisitions.stream().filter((recorded) -> recorded.resource().equals(resource)).toList();
	}

	/** The latest acquisition of the resource that took the lock, if any. */
	public Optional<RecordedLock> lastAcquired(String resource) {
		List<RecordedLock> ofResource = acquisitions(resource);
		for (int i = ofResource.size() - 1; i >= 0; i--) {
			if (ofResource.get(i).isAcquired()) {
				return Optional.of(ofResource.get(i));
			}
		}
		return Optional.empty();
	}

	/** Forgets what was recorded so far, for example between tests that share a template. */
	public void clear() {
		this.acquisitions.clear();
	}

	@Override
	public String toString() {
		return "LockRecorder" + this.acquisitions;
	}

	/** The observation handler of one template. */
	private final class Handler implements ObservationHandler<Observation.Context> {

		private final String node;

		Handler(String node) {
			this.node = node;
		}

		@Override
		public boolean supportsContext(Observation.Context context) {
			return ACQUIRE.equals(context.getName());
		}

		@Override
		public void onStop(Observation.Context context) {
			String resource = value(context, "resource");
			String mode = value(context, "mode");
			if (resource == null || mode == null) {
				return;
			}
			LockMode lockMode;
			try {
				lockMode = LockMode.valueOf(mode.toUpperCase(Locale.ROOT));
			}
			catch (IllegalArgumentException ex) {
				return; // not a lock mode of this library: not one of its acquisitions
			}
			String outcome = value(context, "outcome");
			RecordedLock.Outcome recorded;
			LockHandle handle = null;
			if ("acquired".equals(outcome)) {
				recorded = RecordedLock.Outcome.ACQUIRED;
				// the acquisition ends on the acquiring thread, after the new hold became its innermost one
				handle = (lockMode != LockMode.OPTIMISTIC) ? CurrentLock.get(resource).orElse(null) : null;
			}
			else if ("failed".equals(outcome)) {
				recorded = RecordedLock.Outcome.FAILED;
			}
			else {
				recorded = RecordedLock.Outcome.NOT_ACQUIRED; // timed_out, or skipped under onFailure = SKIP
			}
			LockRecorder.this.acquisitions.add(new RecordedLock(resource, lockMode, recorded, handle,
					context.getError(), this.node, Thread.currentThread().getName()));
		}

		private static @Nullable String value(Observation.Context context, String key) {
			KeyValue value = context.getLowCardinalityKeyValue(key);
			if (value == null) {
				value = context.getHighCardinalityKeyValue(key);
			}
			return (value != null) ? value.getValue() : null;
		}

	}

}
