package io.github.dblock.reliability.checker;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import io.micrometer.common.KeyValue;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import org.jspecify.annotations.Nullable;

/**
 * When the library itself granted each hold of one node and when it declared the hold lost, read from its
 * {@code distributed.lock.held} observation (started at the grant, on the caller's thread; its {@code lost} event is
 * recorded when the loss is declared). A {@code @DistributedLock} section can only register its {@code onLost}
 * listener once the method runs, which is after the transaction advisor inside the lock advisor has begun its
 * transaction; a listener registered after the loss runs at once, so its time says when the method began, not when
 * the library told the loss. The checker takes the earlier of the two. Thread-safe.
 */
final class HoldObservations implements ObservationHandler<Observation.Context> {

	/**
	 * One hold as the library saw it; {@code lostNanos} is 0 until its loss is declared; {@code key} is its slot in
	 * the latest holds (the granting thread and the resource).
	 */
	record Hold(String resource, long grantedNanos, AtomicLong lostNanos, java.util.List<Object> key) {

		/** {@link System#nanoTime()} of the declared loss, {@code null} if none was declared. */
		@Nullable
		Long lostAt() {
			long lost = this.lostNanos.get();
			return (lost != 0) ? lost : null;
		}

	}

	/**
	 * The running hold of each thread and resource, removed when the hold's observation stops (workers on virtual
	 * threads would otherwise keep one entry per call).
	 */
	private final Map<java.util.List<Object>, Hold> latest = new ConcurrentHashMap<>();

	/** A registry that reports the holds to a new instance of this handler. */
	static ObservationRegistry registry(HoldObservations holds) {
		ObservationRegistry registry = ObservationRegistry.create();
		registry.observationConfig().observationHandler(holds);
		return registry;
	}

	/** The running hold of the resource granted on the current thread; {@code null} if there is none. */
	@Nullable
	Hold current(String resource) {
		return this.latest.get(key(resource));
	}

	/**
	 * The loss time the checker records for a hold: the earlier of the section's own {@code onLost} listener and the
	 * library's declaration; {@code null} when neither ran.
	 */
	static @Nullable Long lostAt(long listenerNanos, @Nullable Hold hold) {
		Long declared = (hold != null) ? hold.lostAt() : null;
		if (listenerNanos == 0) {
			return declared;
		}
		return (declared != null && declared - listenerNanos < 0) ? declared : Long.valueOf(listenerNanos);
	}

	@Override
	public boolean supportsContext(Observation.Context context) {
		return "distributed.lock.held".equals(context.getName());
	}

	@Override
	public void onStart(Observation.Context context) {
		KeyValue resource = context.getHighCardinalityKeyValue("resource");
		if (resource == null) {
			resource = context.getLowCardinalityKeyValue("resource");
		}
		if (resource == null) {
			return;
		}
		Hold hold = new Hold(resource.getValue(), System.nanoTime(), new AtomicLong(), key(resource.getValue()));
		context.put(Hold.class, hold);
		this.latest.put(hold.key(), hold);
	}

	@Override
	public void onStop(Observation.Context context) {
		Hold hold = context.get(Hold.class);
		if (hold != null) {
			this.latest.remove(hold.key(), hold);
		}
	}

	@Override
	public void onEvent(Observation.Event event, Observation.Context context) {
		Hold hold = context.get(Hold.class);
		if (hold != null && "lost".equals(event.getName())) {
			hold.lostNanos().compareAndSet(0, System.nanoTime());
		}
	}

	private static java.util.List<Object> key(String resource) {
		return java.util.List.of(Thread.currentThread(), resource);
	}

}
