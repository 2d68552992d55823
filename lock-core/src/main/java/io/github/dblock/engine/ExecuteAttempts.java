package io.github.dblock.engine;

import io.micrometer.observation.Observation;
import org.jspecify.annotations.Nullable;

/**
 * The attempts of one {@link TransactionAttemptLoop}: one acquisition observation for all of them, and what the
 * current attempt got to. Not thread-safe: used by the calling thread.
 */
final class ExecuteAttempts {

	private final Observation observation;

	private boolean stopped;

	/** Set when the current attempt's acquisition (not its action) failed. */
	boolean notAcquired;

	/** Set when the current attempt holds the lock and its action is about to run. */
	boolean actionStarted;

	ExecuteAttempts(Observation observation) {
		this.observation = observation;
	}

	void stop(String outcome, @Nullable Throwable error) {
		if (this.stopped) {
			return;
		}
		this.stopped = true;
		this.observation.lowCardinalityKeyValue("outcome", outcome);
		if (error != null) {
			this.observation.error(error);
		}
		this.observation.stop();
	}

}
