package io.github.dblock.interceptor;

import io.micrometer.common.KeyValue;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationFilter;
import org.jspecify.annotations.Nullable;

/**
 * Reports a {@code distributed.lock.acquire} observation that timed out on behalf of an annotation with
 * {@code onFailure = SKIP} as {@code outcome=skipped} instead of {@code outcome=timed_out}: such a skip (typically a
 * scheduled job with {@code waitTime = "0"} finding another instance at work) is normal operation, and must not feed
 * time-out alerts. The {@link DistributedLockInterceptor} marks the calling thread with the resource while it
 * acquires for such an annotation; the observation stops on that thread, so this filter sees the mark. Other
 * observations pass unchanged.
 * <p>
 * The auto-configuration registers it on the observation registry it gives the {@link io.github.dblock.LockTemplate};
 * a template configured by hand needs {@code registry.observationConfig().observationFilter(SkippedOutcomeFilter.INSTANCE)}.
 * Stateless and thread-safe.
 */
public final class SkippedOutcomeFilter implements ObservationFilter {

	/** The shared instance. */
	public static final SkippedOutcomeFilter INSTANCE = new SkippedOutcomeFilter();

	/** The resource being acquired for a SKIP annotation on this thread, or {@code null}. */
	private static final ThreadLocal<@Nullable String> skipping = new ThreadLocal<>();

	private SkippedOutcomeFilter() {
	}

	@Override
	public Observation.Context map(Observation.Context context) {
		String resource = skipping.get();
		if (resource == null || !"distributed.lock.acquire".equals(context.getName())) {
			return context;
		}
		KeyValue outcome = context.getLowCardinalityKeyValue("outcome");
		if (outcome == null || !"timed_out".equals(outcome.getValue())) {
			return context;
		}
		KeyValue observed = context.getHighCardinalityKeyValue("resource");
		if (observed == null) {
			observed = context.getLowCardinalityKeyValue("resource");
		}
		if (observed != null && resource.equals(observed.getValue())) {
			context.addLowCardinalityKeyValue(KeyValue.of("outcome", "skipped"));
		}
		return context;
	}

	/**
	 * Marks this thread as acquiring {@code resource} for a SKIP annotation, until the returned mark is closed
	 * (which restores any outer mark).
	 * @param resource the evaluated resource name
	 * @return the mark, to close in a {@code finally} block or try-with-resources
	 */
	static Mark skipping(String resource) {
		String previous = skipping.get();
		skipping.set(resource);
		return () -> {
			if (previous != null) {
				skipping.set(previous);
			}
			else {
				skipping.remove();
			}
		};
	}

	/** A thread's mark; closing it does not throw. */
	interface Mark extends AutoCloseable {

		@Override
		void close();

	}

}
