package io.github.dblock.autoconfigure;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.jdbc.admin.LockTableCleaner;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.context.SmartLifecycle;

/**
 * Runs each of its cleaners' {@link LockTableCleaner#deleteExpired()}, {@link LockTableCleaner#deleteExpiredReadWriteHolds()}
 * and {@link LockTableCleaner#deleteExpiredPermits()} every {@code distributed-lock.cleanup.interval} on one instance at a
 * time: each run first takes the LEASE lock {@value #LOCK_NAME} without waiting, with a minimum hold of half the
 * interval, so instances whose schedules drift do not clean twice per period. The first run happens after a random
 * part of the interval, so that instances started together do not all try at once. One daemon thread; started and
 * stopped with the application context.
 */
public class LockTableCleanupJob implements SmartLifecycle {

	/** The resource this job locks. */
	public static final String LOCK_NAME = "distributed-lock:cleanup";

	private static final Log logger = LogFactory.getLog(LockTableCleanupJob.class);

	private final List<LockTableCleaner> cleaners;

	private final LockTemplate locks;

	private final Duration interval;

	/** Set while running. */
	private volatile @Nullable ScheduledExecutorService scheduler;

	public LockTableCleanupJob(LockTableCleaner cleaner, LockTemplate locks, Duration interval) {
		this(List.of(cleaner), locks, interval);
	}

	/**
	 * A job that runs several cleaners in turn under the one cleanup lock, for example the lock table's and the
	 * idempotency records' ({@link LockTableCleaner#forIdempotencyRecords}).
	 */
	public LockTableCleanupJob(List<LockTableCleaner> cleaners, LockTemplate locks, Duration interval) {
		this.cleaners = List.copyOf(cleaners);
		this.locks = locks;
		this.interval = interval;
	}

	/**
	 * One run: takes the cleanup lock if free and deletes expired rows.
	 * @return the number of rows deleted, or empty if another instance holds the cleanup lock
	 */
	@SuppressWarnings("try") // the cleanup lock is held for the try block, not used in it
	public Optional<Integer> runOnce() {
		Duration half = this.interval.dividedBy(2);
		Optional<LockHandle> lock = this.locks.tryAcquire(LOCK_NAME, LockOptions.defaults()
			.withMode(LockMode.LEASE)
			.withWaitTime(Duration.ZERO)
			.withLeaseTime(this.interval)
			.withMinHoldTime(half));
		if (lock.isEmpty()) {
			return Optional.empty();
		}
		try (LockHandle held = lock.get()) {
			int deleted = 0;
			int holders = 0;
			for (LockTableCleaner cleaner : this.cleaners) {
				deleted += cleaner.deleteExpired();
				holders += cleaner.deleteExpiredReadWriteHolds() + cleaner.deleteExpiredPermits();
			}
			if (deleted > 0) {
				logger.info("Deleted " + deleted + " expired rows from the lock table and idempotency records");
			}
			if (holders > 0) {
				logger.info("Deleted " + holders + " expired read/write holder and semaphore permit rows");
			}
			return Optional.of(deleted + holders);
		}
	}

	private void runSafely() {
		try {
			runOnce();
		}
		catch (RuntimeException ex) {
			logger.warn("Cleaning the lock table failed; retrying at the next interval", ex);
		}
	}

	@Override
	public void start() {
		ScheduledExecutorService executor = Executors.newSingleThreadScheduledExecutor((task) -> {
			Thread thread = new Thread(task, "distributed-lock-cleanup");
			thread.setDaemon(true);
			return thread;
		});
		long period = this.interval.toMillis();
		long firstDelay = ThreadLocalRandom.current().nextLong(period / 10, period + 1);
		executor.scheduleWithFixedDelay(this::runSafely, firstDelay, period, TimeUnit.MILLISECONDS);
		this.scheduler = executor;
	}

	@Override
	public void stop() {
		ScheduledExecutorService executor = this.scheduler;
		if (executor != null) {
			executor.shutdownNow();
			this.scheduler = null;
		}
	}

	@Override
	public boolean isRunning() {
		return this.scheduler != null;
	}

}
