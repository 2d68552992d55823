package io.github.dblock.autoconfigure;

import java.time.Duration;

/**
 * Deletion of lock rows whose lease ended long ago, under {@code distributed-lock.cleanup.*}.
 * <p>
 * A group of {@link DistributedLockProperties}; not thread-safe (bound once at start-up, then only read).
 */
public class DistributedLockCleanupProperties {

	/**
	 * Whether to delete rows whose lease ended more than the retention ago, periodically, on one instance at a
	 * time.
	 */
	private boolean enabled = true;

	/**
	 * How long after its lease ended a row is kept, and how far the server clock must have passed its fencing token,
	 * so that tokens keep increasing when the resource is taken again (at least 1h; keep it far above any server
	 * clock step).
	 */
	private Duration retention = Duration.ofDays(7);

	/**
	 * How often the cleanup runs.
	 */
	private Duration interval = Duration.ofHours(1);

	/**
	 * How many rows one cleanup statement deletes at most.
	 */
	private int batchSize = 500;

	public boolean isEnabled() {
		return this.enabled;
	}

	public void setEnabled(boolean enabled) {
		this.enabled = enabled;
	}

	public Duration getRetention() {
		return this.retention;
	}

	public void setRetention(Duration retention) {
		this.retention = retention;
	}

	public Duration getInterval() {
		return this.interval;
	}

	public void setInterval(Duration interval) {
		this.interval = interval;
	}

	public int getBatchSize() {
		return this.batchSize;
	}

	public void setBatchSize(int batchSize) {
		this.batchSize = batchSize;
	}

}
