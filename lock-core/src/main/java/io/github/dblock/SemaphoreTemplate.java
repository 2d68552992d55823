package io.github.dblock;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.spi.SemaphoreProvider;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import org.jspecify.annotations.Nullable;

/**
 * Distributed semaphores: at most N concurrent holders of a named pool of permits across all nodes that share the
 * lock database, for example callers of a rate-limited partner API.
 * <p>
 * Each {@code acquire} takes <em>one</em> permit and returns a {@link LockHandle} for it; closing the handle gives
 * the permit back. Permits are <strong>not reentrant</strong>: like {@link java.util.concurrent.Semaphore}, a
 * thread that acquires twice holds two permits (and with a pool of one, waits for itself until its wait time ends).
 * A permit is a lease on the database server's clock: without a lease time of its own it is renewed every third of
 * the default lease while held (and {@link LockHandle#onLost} tells when a renewal finds it expired); a holder that
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
		LockOptions.defaults().withWaitTime(defaultWaitTime); // validates
		this.defaultWaitTime = defaultWaitTime;
		if (defaultLeaseTime == null || defaultLeaseTime.compareTo(LockTemplate.MIN_DEFAULT_LEASE_TIME) < 0) {
			throw new IllegalArgumentException("The default lease time must be at least "
					+ LockTemplate.MIN_DEFAULT_LEASE_TIME.toSeconds() + "s (it is renewed every third of it while a permit "
					+ "is held), was " + defaultLeaseTime);
		}
		LockOptions.checkNotTooLong("The default lease time", defaultLeaseTime);
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
	public LockHandle acquire(String name) {
		return acquire(name, LockOptions.defaults());
	}

	/**
	 * Acquires one permit, waiting at most the options' wait time.
	 * @param name the semaphore name
	 * @param options wait time and lease time (a lease time switches renewal off); the mode must be unset or
	 * {@link LockMode#LEASE}, and there is no minimum hold time
	 * @return the held permit; close it to give it back
	 * @throws PermitNotAcquiredException if every permit stayed held for the whole wait time
	 * @throws IllegalArgumentException if the name or options are invalid (see {@link #acquire(String)})
	 * @see #acquire(String) for the other exceptions
	 */
	public LockHandle acquire(String name, LockOptions options) {
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
	public Optional<LockHandle> tryAcquire(String name) {
		return tryAcquire(name, LockOptions.defaults().withWaitTime(Duration.ZERO));
	}

	/**
	 * Tries to acquire one permit within the given wait time, with a renewed default lease.
	 * @param waitTime how long to wait; zero for a single attempt
	 * @return the held permit, or empty if every permit stayed held for the whole wait time
	 * @throws IllegalArgumentException also if the wait time is null or negative
	 * @see #acquire(String) for the other exceptions
	 */
	public Optional<LockHandle> tryAcquire(String name, Duration waitTime) {
		return tryAcquire(name, LockOptions.defaults().withWaitTime(waitTime));
	}

	/**
	 * Tries to acquire one permit within the options' wait time.
	 * @return the held permit, or empty if every permit stayed held for the whole wait time
	 * @see #acquire(String, LockOptions) for the exceptions
	 */
	public Optional<LockHandle> tryAcquire(String name, LockOptions options) {
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
	public <T> T execute(String name, LockCallback<T> action) {
		return execute(name, LockOptions.defaults(), action);
	}

	/**
	 * Runs the action while holding one permit and gives it back afterwards (also when the action throws).
	 * @see #execute(String, LockCallback)
	 * @see #acquire(String, LockOptions)
	 */
	@Nullable
	public <T> T execute(String name, LockOptions options, LockCallback<T> action) {
		if (action == null) {
			throw new IllegalArgumentException("The action to run with the permit must not be null");
		}
		LockHandle permit = acquire(name, options);
		T result;
		try {
			result = action.doWithLock(permit);
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

	/** Like {@link #execute(String, LockCallback)}, for an action without a result. */
	public void executeWithoutResult(String name, Consumer<LockHandle> action) {
		executeWithoutResult(name, LockOptions.defaults(), action);
	}

	/** Like {@link #execute(String, LockOptions, LockCallback)}, for an action without a result. */
	public void executeWithoutResult(String name, LockOptions options, Consumer<LockHandle> action) {
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

	private Request request(String name, LockOptions options) {
		validateName(name);
		if (options == null) {
			throw new IllegalArgumentException("options must not be null for semaphore '" + name
					+ "': use LockOptions.defaults() for the configured defaults");
		}
		if (options.getMode() != null && options.getMode() != LockMode.LEASE) {
			throw new IllegalArgumentException("Semaphore permits are leases: mode " + options.getMode()
					+ " is not available for semaphore '" + name + "'; leave the mode unset or use LEASE");
		}
		if (options.getMinHoldTime() != null) {
			throw new IllegalArgumentException("Semaphore permits have no minimum hold time (semaphore '" + name
					+ "'); leave minHoldTime unset");
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
					Duration.ZERO, deadline, LockTemplate.holderDescription(this.nodeName)));
			HeldLock held = result.lock();
			observation.lowCardinalityKeyValue("outcome", (held != null) ? "acquired" : "timed_out");
			if (held == null) {
				return new Attempt(null, result.holder(), result.cause());
			}
			Observation holding = Observation.createNotStarted("distributed.semaphore.held", this.observations)
				.highCardinalityKeyValue("name", request.name)
				.start();
			held.onLost(() -> holding.event(LOST));
			return new Attempt(new PermitHandle(request.name, held, holding), null, null);
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

	private record Attempt(@Nullable LockHandle handle, @Nullable String state, @Nullable Throwable cause) {
	}

	/**
	 * One held permit. Unlike a lock's handle it may be closed by any thread (a permit belongs to no thread, as with
	 * {@link java.util.concurrent.Semaphore}); closing it again does nothing.
	 */
	private static final class PermitHandle implements LockHandle {

		private final String name;

		private final HeldLock held;

		private final Observation holding;

		private final AtomicBoolean closed = new AtomicBoolean();

		PermitHandle(String name, HeldLock held, Observation holding) {
			this.name = name;
			this.held = held;
			this.holding = holding;
		}

		@Override
		public String resource() {
			return this.name;
		}

		@Override
		public LockMode mode() {
			return LockMode.LEASE;
		}

		@Override
		public long fencingToken() {
			return this.held.fencingToken();
		}

		@Override
		public boolean isHeld() {
			return !this.closed.get() && !this.held.isLost() && System.nanoTime() - this.held.validUntilNanos() < 0;
		}

		@Override
		public void onLost(Consumer<? super LockHandle> listener) {
			this.held.onLost(() -> listener.accept(this));
		}

		/**
		 * Gives the permit back with an owner-checked delete.
		 * @throws LockLostException if the permit's lease had expired (its row is gone or expired); nothing changed.
		 * Also when the delete failed and the permit's row is then found gone or expired, its lease having ended before
		 * the release began: the failure is the exception's cause
		 * @throws org.springframework.dao.DataAccessException if the delete failed while the permit's row still runs
		 * (it then ends with its lease) or the row could not be read; a delete that failed after the lease was let go
		 * in time, and whose row is gone or expired, counts as released
		 */
		@Override
		public void close() {
			if (!this.closed.compareAndSet(false, true)) {
				return;
			}
			boolean released;
			try {
				released = this.held.release();
			}
			finally {
				this.holding.stop();
			}
			if (!released) {
				throw new LockLostException(this.name, this.held.fencingToken(), "Permit of semaphore '" + this.name
						+ "' (fencing token " + this.held.fencingToken() + ") was no longer held at release: its lease "
						+ "had expired, and another owner may have been admitted in its place");
			}
		}

		@Override
		public String toString() {
			return "LockHandle[semaphore=" + this.name + ", fencingToken=" + fencingToken() + ", held=" + isHeld() + "]";
		}

	}

}
