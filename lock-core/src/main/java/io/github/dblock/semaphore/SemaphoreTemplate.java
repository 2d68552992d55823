package io.github.dblock.semaphore;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;

import io.github.dblock.engine.HolderDescriptions;
import io.github.dblock.LockInterruptedException;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import org.jspecify.annotations.Nullable;

/**
 * Distributed semaphores: at most N concurrent holders of a named pool of permits across all nodes that share the
 * lock database, for example callers of a rate-limited partner API.
 * <p>
 * Each {@code acquire} takes <em>one</em> permit and returns a {@link PermitHandle} for it; closing the handle gives
 * the permit back. Permits are <strong>not reentrant</strong>: like {@link java.util.concurrent.Semaphore}, a
 * thread that acquires twice holds two permits (and with a pool of one, waits for itself until its wait time ends).
 * A permit is a lease on the database server's clock: without a lease time of its own it is renewed every third of
 * the default lease while held (and {@link PermitHandle#onLost} tells when a renewal finds it expired); a holder that
 * crashes gives its permit back when its lease ends. Every acquisition gets a fencing token from the pool, strictly
 * increasing over all acquisitions of that pool by any node.
 * <p>
 * The permit count N lives in the database: {@link #setPermits} changes it for every node at once. The configured
 * count ({@code distributed-lock.semaphores.<name>.permits}) only creates the pool the first time it is needed, so a
 * restarting node never undoes a run-time change. Lowering N revokes nothing: holders above the new N keep their
 * permits until they release them, and new acquisitions wait until fewer than N are held. Raising N lets waiters
 * in at their next attempt.
 * <p>
 * Waiting polls the database with exponential backoff and jitter ({@code distributed-lock.retry.*}), up to the wait
 * time; each attempt is one short transaction that locks the pool's row. Waiting is interruptible.
 * <p>
 * Names follow the rules of lock resource names ({@link LockTemplate#validateResource}: 1 to 255 code points,
 * compared exactly); semaphores and locks have separate namespaces. Thread-safe; one instance serves the whole
 * application.
 */
public class SemaphoreTemplate {

	private static final Observation.Event LOST = Observation.Event.of("lost", "permit lost while held");

	private final SemaphoreProvider provider;

	private final Duration defaultWaitTime;

	private final Duration defaultLeaseTime;

	private final String nodeName;

	private volatile ObservationRegistry observations = ObservationRegistry.NOOP;

	/**
	 * Creates a template.
	 * @param provider the database side
	 * @param defaultWaitTime the wait time used when a call does not give one; zero or positive
	 * @param defaultLeaseTime the lease used, and renewed every third of it, when a call does not give one; at least
	 * {@link LockTemplate#MIN_DEFAULT_LEASE_TIME} (1 s), at most {@link LockOptions#MAX_LEASE_TIME}
	 * @param nodeName describes this JVM in holder descriptions; not blank
	 * @throws IllegalArgumentException if an argument is null or out of range
	 */
	public SemaphoreTemplate(SemaphoreProvider provider, Duration defaultWaitTime, Duration defaultLeaseTime,
			String nodeName) {
		this.provider = Objects.requireNonNull(provider, "provider must not be null");
		SemaphoreOptions.defaults().withWaitTime(defaultWaitTime); // validates
		this.defaultWaitTime = defaultWaitTime;
		if (defaultLeaseTime == null || defaultLeaseTime.compareTo(LockTemplate.MIN_DEFAULT_LEASE_TIME) < 0) {
			throw new IllegalArgumentException("The default lease time must be at least "
					+ LockTemplate.MIN_DEFAULT_LEASE_TIME.toSeconds() + "s (it is renewed every third of it while a permit "
					+ "is held), was " + defaultLeaseTime);
		}
		if (defaultLeaseTime.compareTo(LockOptions.MAX_LEASE_TIME) > 0) {
			throw new IllegalArgumentException("The default lease time must be at most " + LockOptions.MAX_LEASE_TIME.toDays()
					+ " days (about 100 years), was " + defaultLeaseTime + "; for a lock held until released, leave the "
					+ "lease time unset: the default lease is renewed while the lock is held");
		}
		this.defaultLeaseTime = defaultLeaseTime;
		if (nodeName == null || nodeName.isBlank()) {
			throw new IllegalArgumentException("nodeName must not be null or blank, was '" + nodeName + "'");
		}
		this.nodeName = nodeName;
	}

	/**
	 * Observes acquisitions ({@code distributed.semaphore.acquire}, low-cardinality key {@code outcome}:
	 * {@code acquired}, {@code timed_out} or {@code failed}) and holds ({@code distributed.semaphore.held}, with an
	 * event {@code lost}); the semaphore name is a high-cardinality key ({@code name}).
	 */
	public void setObservationRegistry(ObservationRegistry observations) {
		this.observations = Objects.requireNonNull(observations, "observations must not be null");
	}

	/**
	 * Acquires one permit with the configured wait time and a renewed default lease.
	 * @param name the semaphore name
	 * @return the held permit; close it to give it back
	 * @throws PermitNotAcquiredException if every permit stayed held for the whole wait time
	 * @throws LockInterruptedException if the thread was interrupted while waiting
	 * @throws IllegalArgumentException if the name is invalid, or the semaphore has neither a row in the database
	 * nor a configured permit count ({@code distributed-lock.semaphores.<name>.permits})
	 * @throws org.springframework.dao.DataAccessException on a database failure other than a broken connection, or
	 * when the database stayed unreachable until the wait time ended
	 */
	public PermitHandle acquire(String name) {
		return acquire(name, SemaphoreOptions.defaults());
	}

	/**
	 * Acquires one permit, waiting at most the options' wait time.
	 * @param name the semaphore name
	 * @param options wait time and lease time (a lease time switches renewal off)
	 * @return the held permit; close it to give it back
	 * @throws PermitNotAcquiredException if every permit stayed held for the whole wait time
	 * @throws IllegalArgumentException if the name or options are invalid (see {@link #acquire(String)})
	 * @see #acquire(String) for the other exceptions
	 */
	public PermitHandle acquire(String name, SemaphoreOptions options) {
		Request request = request(name, options);
		Attempt attempt = doAcquire(request);
		if (attempt.handle == null) {
			throw new PermitNotAcquiredException(name, request.waitTime, attempt.state, attempt.cause);
		}
		return attempt.handle;
	}

	/**
	 * Makes a single attempt to acquire one permit, with a renewed default lease.
	 * @return the held permit, or empty if every permit is held
	 * @see #acquire(String) for the exceptions
	 */
	public Optional<PermitHandle> tryAcquire(String name) {
		return tryAcquire(name, SemaphoreOptions.defaults().withWaitTime(Duration.ZERO));
	}

	/**
	 * Tries to acquire one permit within the given wait time, with a renewed default lease.
	 * @param waitTime how long to wait; zero for a single attempt
	 * @return the held permit, or empty if every permit stayed held for the whole wait time
	 * @throws IllegalArgumentException also if the wait time is null or negative
	 * @see #acquire(String) for the other exceptions
	 */
	public Optional<PermitHandle> tryAcquire(String name, Duration waitTime) {
		return tryAcquire(name, SemaphoreOptions.defaults().withWaitTime(waitTime));
	}

	/**
	 * Tries to acquire one permit within the options' wait time.
	 * @return the held permit, or empty if every permit stayed held for the whole wait time
	 * @see #acquire(String, SemaphoreOptions) for the exceptions
	 */
	public Optional<PermitHandle> tryAcquire(String name, SemaphoreOptions options) {
		return Optional.ofNullable(doAcquire(request(name, options)).handle);
	}

	/**
	 * Runs the action while holding one permit, with the configured defaults, and gives the permit back afterwards
	 * (also when the action throws).
	 * @return the action's result
	 * @throws PermitNotAcquiredException if no permit could be had within the wait time; the action does not run
	 * @throws LockLostException if the action completed but the permit's lease had expired by the time it was given
	 * back; if the action threw, the loss is added to its exception as suppressed instead
	 * @see #acquire(String) for the other exceptions
	 */
	@Nullable
	public <T> T execute(String name, PermitCallback<T> action) {
		return execute(name, SemaphoreOptions.defaults(), action);
	}

	/**
	 * Runs the action while holding one permit and gives it back afterwards (also when the action throws).
	 * @see #execute(String, PermitCallback)
	 * @see #acquire(String, SemaphoreOptions)
	 */
	@Nullable
	public <T> T execute(String name, SemaphoreOptions options, PermitCallback<T> action) {
		if (action == null) {
			throw new IllegalArgumentException("The action to run with the permit must not be null");
		}
		PermitHandle permit = acquire(name, options);
		T result;
		try {
			result = action.doWithPermit(permit);
		}
		catch (Throwable ex) {
			try {
				permit.close();
			}
			catch (RuntimeException releaseFailure) {
				ex.addSuppressed(releaseFailure);
			}
			throw ex;
		}
		permit.close();
		return result;
	}

	/** Like {@link #execute(String, PermitCallback)}, for an action without a result. */
	public void executeWithoutResult(String name, Consumer<PermitHandle> action) {
		executeWithoutResult(name, SemaphoreOptions.defaults(), action);
	}

	/** Like {@link #execute(String, SemaphoreOptions, PermitCallback)}, for an action without a result. */
	public void executeWithoutResult(String name, SemaphoreOptions options, Consumer<PermitHandle> action) {
		if (action == null) {
			throw new IllegalArgumentException("The action to run with the permit must not be null");
		}
		execute(name, options, (permit) -> {
			action.accept(permit);
			return null;
		});
	}

	/**
	 * Sets the semaphore's permit count in the database (creating the semaphore if it has no row yet), for every
	 * node at once and across restarts. A decrease revokes nothing (holders above the new count keep their permits
	 * until they release them; new acquisitions wait until fewer than {@code permits} are held); an increase admits
	 * waiters at their next attempt.
	 * @param name the semaphore name
	 * @param permits the new count, at least 1
	 * @throws IllegalArgumentException if the name is invalid or {@code permits} is below 1
	 * @throws org.springframework.dao.DataAccessException on a database failure
	 */
	public void setPermits(String name, int permits) {
		validateName(name);
		if (permits < 1) {
			throw new IllegalArgumentException("Semaphore '" + name + "' must have at least 1 permit, was " + permits);
		}
		this.provider.setPermits(name, permits);
	}

	/**
	 * The semaphore's permit count: the database's, or the configured initial count if the semaphore has no row yet.
	 * @throws IllegalArgumentException if the name is invalid or the semaphore is unknown (no row, no configuration)
	 * @throws org.springframework.dao.DataAccessException on a database failure
	 */
	public int getPermits(String name) {
		validateName(name);
		return this.provider.getPermits(name);
	}

	/**
	 * The permits free right now: the permit count minus the holders whose lease has not ended on the server's
	 * clock, and zero (never negative) while more are held than a lowered count allows. Only a snapshot: another node
	 * may take a free permit a moment later.
	 * @throws IllegalArgumentException if the name is invalid or the semaphore is unknown (no row, no configuration)
	 * @throws org.springframework.dao.DataAccessException on a database failure
	 */
	public int availablePermits(String name) {
		validateName(name);
		return this.provider.availablePermits(name);
	}

	private static void validateName(String name) {
		try {
			LockTemplate.validateResource(name);
		}
		catch (IllegalArgumentException ex) {
			throw new IllegalArgumentException("Invalid semaphore name: " + ex.getMessage(), ex);
		}
	}

	private Request request(String name, SemaphoreOptions options) {
		validateName(name);
		if (options == null) {
			throw new IllegalArgumentException("options must not be null for semaphore '" + name
					+ "': use SemaphoreOptions.defaults() for the configured defaults");
		}
		Duration waitTime = (options.getWaitTime() != null) ? options.getWaitTime() : this.defaultWaitTime;
		Duration leaseTime = (options.getLeaseTime() != null) ? options.getLeaseTime() : this.defaultLeaseTime;
		return new Request(name, waitTime, leaseTime, options.getLeaseTime() == null);
	}

	private Attempt doAcquire(Request request) {
		Observation observation = Observation.createNotStarted("distributed.semaphore.acquire", this.observations)
			.highCardinalityKeyValue("name", request.name)
			.start();
		try {
			long deadline = System.nanoTime() + saturatedNanos(request.waitTime);
			AcquireResult result = this.provider.acquire(new LockRequest(request.name, request.leaseTime, request.renew,
					Duration.ZERO, deadline, HolderDescriptions.ofCurrentThread(this.nodeName)));
			HeldLock held = result.lock();
			observation.lowCardinalityKeyValue("outcome", (held != null) ? "acquired" : "timed_out");
			if (held == null) {
				return new Attempt(null, result.holder(), result.cause());
			}
			Observation holding = Observation.createNotStarted("distributed.semaphore.held", this.observations)
				.highCardinalityKeyValue("name", request.name)
				.start();
			held.onLost(() -> holding.event(LOST));
			return new Attempt(new HeldPermit(request.name, held, holding), null, null);
		}
		catch (InterruptedException ex) {
			observation.lowCardinalityKeyValue("outcome", "failed").error(ex);
			Thread.currentThread().interrupt();
			throw new LockInterruptedException(request.name, ex);
		}
		catch (RuntimeException | Error ex) {
			observation.lowCardinalityKeyValue("outcome", "failed").error(ex);
			throw ex;
		}
		finally {
			observation.stop();
		}
	}

	private static long saturatedNanos(Duration duration) {
		try {
			return duration.toNanos();
		}
		catch (ArithmeticException ex) {
			return Long.MAX_VALUE / 2;
		}
	}

	private record Request(String name, Duration waitTime, Duration leaseTime, boolean renew) {
	}

	private record Attempt(@Nullable PermitHandle handle, @Nullable String state, @Nullable Throwable cause) {
	}

}
