package io.github.dblock;

import java.time.Duration;
import java.util.Collection;
import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

import io.github.dblock.engine.Attempt;
import io.github.dblock.engine.LockCall;
import io.github.dblock.engine.LockEngine;
import io.github.dblock.engine.LockSettings;
import io.github.dblock.spi.LockProvider;
import io.github.dblock.spi.ReadWriteLockProvider;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import org.jspecify.annotations.Nullable;

/**
 * The programmatic entry point, the standard {@link LockOperations}: acquire distributed locks on named resources, or
 * run code while holding one.
 * <ul>
 * <li><b>Reentrant per thread</b>, like {@link java.util.concurrent.locks.ReentrantLock}: the holding thread acquires
 * again without a round trip, and the lock is released in the database when its hold count returns to zero. Other
 * threads of this JVM wait in a fair local queue, so at most one thread per JVM asks the database for a resource; a
 * caller only ever gets a hold of the mode and type it asked for ({@link LockModeConflictException} at once for
 * re-entry in another mode, {@link LockUpgradeException} for a write lock asked while holding only the read lock).</li>
 * <li><b>Expiry</b>: a LEASE hold lasts as long as its lease by this JVM's clock (which errs early); once over, it
 * cannot be re-entered, other threads stop waiting for it, and its last {@code close()} throws
 * {@link LockLostException} without touching the next holder's lock.</li>
 * <li><b>Waiting</b>: a wait time of zero makes one attempt, a positive one retries until it has passed; waiting is
 * interruptible. Broken connections are retried within the wait time (LEASE, and PESSIMISTIC outside a
 * transaction); a holder learns of an outage that outlasts its lease through {@link LockHandle#onLost}.</li>
 * <li><b>Commit-time validation</b> (on by default, {@link #setValidateAtCommit(boolean)}): a transaction on the
 * lock's data source that runs while its thread holds a LEASE lock commits only while that lock is held
 * ({@link CommitValidation}).</li>
 * <li><b>Resource names</b> are compared byte for byte in UTF-8 and have 1 to {@value #MAX_RESOURCE_LENGTH} code
 * points.</li>
 * </ul>
 * Modes, read/write locks, time bounds and what each guarantees: docs/reference ({@code lock-modes.md},
 * {@code read-write-locks.md}, {@code limits.md}, {@code reliability.md}, {@code safety.md}). Thread-safe; one
 * instance serves the whole application.
 */
public class LockTemplate implements LockOperations {

	/** The longest resource name, in Unicode code points. */
	public static final int MAX_RESOURCE_LENGTH = 255;

	/**
	 * The shortest default lease time ({@code distributed-lock.lease-time}): 1 s. Locks taken without a lease time
	 * of their own are renewed every third of the default lease, and each renewal must reach the database (a pooled
	 * connection, one statement, the scheduler's own delay) within the remaining two thirds; measured on a loaded
	 * 2-core machine, renewed leases of 100 ms were still lost now and then, and of 10 ms always.
	 */
	public static final Duration MIN_DEFAULT_LEASE_TIME = Duration.ofSeconds(1);

	private final Map<LockMode, LockProvider> providers = new EnumMap<>(LockMode.class);

	private final LockMode defaultMode;

	private final Duration defaultWaitTime;

	private final Duration defaultLeaseTime;

	private final LockSettings settings;

	private final LockEngine engine;

	private final Map<LockMode, String> refusedModes = new ConcurrentHashMap<>();

	/**
	 * Creates a template.
	 * @param providers one provider per supported mode
	 * @param defaultMode the mode used when a call does not choose one; must have a provider
	 * @param defaultWaitTime the wait time used when a call does not give one; zero or positive
	 * @param defaultLeaseTime the lease time used, and renewed every third of it, when a call does not give one; at
	 * least {@link #MIN_DEFAULT_LEASE_TIME} (1 s), at most {@link LockOptions#MAX_LEASE_TIME}
	 * @param nodeName describes this JVM in holder descriptions (for example {@code host/pid}); not blank
	 * @throws IllegalArgumentException if an argument is null or invalid, or two providers serve the same mode
	 */
	public LockTemplate(Collection<? extends LockProvider> providers, LockMode defaultMode, Duration defaultWaitTime,
			Duration defaultLeaseTime, String nodeName) {
		for (LockProvider provider : providers) {
			if (this.providers.put(provider.mode(), provider) != null) {
				throw new IllegalArgumentException("More than one LockProvider for mode " + provider.mode());
			}
		}
		if (!this.providers.containsKey(defaultMode)) {
			throw new IllegalArgumentException("No LockProvider for the default mode " + defaultMode);
		}
		this.defaultMode = defaultMode;
		LockOptions.defaults().withWaitTime(defaultWaitTime); // checks it: not null, not negative
		this.defaultWaitTime = defaultWaitTime;
		if (defaultLeaseTime == null || defaultLeaseTime.compareTo(MIN_DEFAULT_LEASE_TIME) < 0) {
			throw new IllegalArgumentException("The default lease time must be at least "
					+ MIN_DEFAULT_LEASE_TIME.toSeconds() + "s (it is renewed every third of it while a lock is held), was "
					+ defaultLeaseTime);
		}
		LockOptions.checkNotTooLong("The default lease time", defaultLeaseTime);
		this.defaultLeaseTime = defaultLeaseTime;
		if (nodeName == null || nodeName.isBlank()) {
			throw new IllegalArgumentException("nodeName must not be null or blank, was '" + nodeName + "'");
		}
		this.settings = new LockSettings(nodeName);
		this.engine = new LockEngine(this.settings);
	}

	@Override
	public LockHandle acquire(String resource) {
		return acquire(resource, LockOptions.defaults());
	}

	@Override
	public LockHandle acquire(String resource, LockOptions options) {
		LockCall call = request(resource, options);
		Attempt attempt = this.engine.acquire(call);
		LockHandle handle = attempt.handle();
		if (handle == null) {
			throw new LockNotAcquiredException(resource, call.waitTime(), attempt.holder(), attempt.cause());
		}
		return handle;
	}

	@Override
	public Optional<LockHandle> tryAcquire(String resource) {
		return tryAcquire(resource, LockOptions.defaults().withWaitTime(Duration.ZERO));
	}

	@Override
	public Optional<LockHandle> tryAcquire(String resource, Duration waitTime) {
		return tryAcquire(resource, LockOptions.defaults().withWaitTime(waitTime));
	}

	@Override
	public Optional<LockHandle> tryAcquire(String resource, LockOptions options) {
		return Optional.ofNullable(this.engine.acquire(request(resource, options)).handle());
	}

	@Override
	public LockView asLock(String resource) {
		return asLock(resource, LockOptions.defaults());
	}

	@Override
	public LockView asLock(String resource, LockOptions options) {
		return new LockView(this, resource, options);
	}

	@Override
	public <T> @Nullable T execute(String resource, LockCallback<T> action) {
		return execute(resource, LockOptions.defaults(), action);
	}

	@Override
	public <T> @Nullable T execute(String resource, LockOptions options, LockCallback<T> action) {
		requireAction(action);
		return this.engine.execute(request(resource, options), action);
	}

	@Override
	public <T, E extends Exception> @Nullable T executeChecked(String resource, LockOptions options,
			CheckedLockCallback<T, E> action) throws E {
		if (action == null) {
			throw new IllegalArgumentException("action must not be null");
		}
		return this.engine.executeChecked(request(resource, options), action);
	}

	@Override
	public void executeWithoutResult(String resource, Consumer<LockHandle> action) {
		executeWithoutResult(resource, LockOptions.defaults(), action);
	}

	@Override
	public void executeWithoutResult(String resource, LockOptions options, Consumer<LockHandle> action) {
		requireAction(action);
		execute(resource, options, (lock) -> {
			action.accept(lock);
			return null;
		});
	}

	/**
	 * Whether to interrupt the thread that acquired a lock when the lock is found lost while held (see
	 * {@link LockHandle#onLost}), so that interruptible work stops early. Off by default.
	 */
	public void setInterruptOnLoss(boolean interruptOnLoss) {
		this.settings.setInterruptOnLoss(interruptOnLoss);
	}

	/**
	 * Whether a transaction on the lock's data source that runs while its thread holds a LEASE lock commits only while
	 * that lock is held ({@code distributed-lock.validate-at-commit}, on by default): see {@link CommitValidation}.
	 * When on, a LEASE hold whose last handle is closed inside such a transaction is released in the database only
	 * once the transaction has completed. Thread-safe; applies to holds handed out and transactions begun afterwards.
	 */
	public void setValidateAtCommit(boolean validateAtCommit) {
		this.settings.setValidateAtCommit(validateAtCommit);
	}

	/** Whether commit-time validation is on (see {@link #setValidateAtCommit(boolean)}). */
	public boolean isValidateAtCommit() {
		return this.settings.validateAtCommit();
	}

	/**
	 * Observes acquisitions ({@code distributed.lock.acquire}, low-cardinality keys {@code mode} and {@code outcome}:
	 * {@code acquired}, {@code timed_out} or {@code failed}) and holds ({@code distributed.lock.held}, key
	 * {@code mode}, with an event {@code lost} when a held lock is found lost). With Spring Boot's observation
	 * support these become timers and, for tracing users, spans. The resource name is a high-cardinality key
	 * (spans only) unless {@link #setResourceAsTag(boolean)}.
	 */
	public void setObservationRegistry(ObservationRegistry observations) {
		this.settings.setObservations(observations);
	}

	/** The registry given to {@link #setObservationRegistry(ObservationRegistry)}, or the no-op one. */
	public ObservationRegistry getObservationRegistry() {
		return this.settings.observations();
	}

	/**
	 * Whether the resource name becomes a low-cardinality key of the observations (and so a metric tag). Off by
	 * default: resource names are often unbounded (order numbers). Switch it on only for a small, fixed set.
	 */
	public void setResourceAsTag(boolean resourceAsTag) {
		this.settings.setResourceAsTag(resourceAsTag);
	}

	/** Adds the resource to an observation as a tag or, by default, as a high-cardinality key. */
	public Observation withResource(Observation observation, String resource) {
		return this.settings.withResource(observation, resource);
	}

	/**
	 * A read-only view of the locks this JVM holds and waits for through this template, for diagnostics (the
	 * Actuator endpoint, the held-locks gauge); snapshots, no SQL. Thread-safe.
	 */
	public LockIntrospection introspection() {
		return this.engine.introspection();
	}

	/** How this JVM describes itself in holder descriptions ({@code distributed-lock.node-name}). */
	public String getNodeName() {
		return this.settings.nodeName();
	}

	/** The lease time used, and renewed, when a call does not give one ({@code distributed-lock.lease-time}). */
	public Duration getDefaultLeaseTime() {
		return this.defaultLeaseTime;
	}

	/**
	 * Refuses every later request in a mode, for example PESSIMISTIC on a Galera cluster, where row locks are not
	 * cluster-wide. Such requests throw {@link IllegalStateException} with the reason, before any SQL runs and
	 * before anything is held. Called during configuration; thread-safe.
	 * @param mode the mode to refuse
	 * @param reason why, naming what was found (it is the second half of the exception message)
	 * @throws IllegalArgumentException if the mode is the default mode (start-up must fail instead)
	 */
	public void refuseMode(LockMode mode, String reason) {
		Objects.requireNonNull(mode, "mode must not be null");
		Objects.requireNonNull(reason, "reason must not be null");
		if (mode == this.defaultMode) {
			throw new IllegalArgumentException("Cannot refuse the default lock mode " + mode + ": " + reason);
		}
		this.refusedModes.put(mode, reason);
	}

	/** The modes refused by {@link #refuseMode}, with their reasons. */
	public Map<LockMode, String> getRefusedModes() {
		return Map.copyOf(this.refusedModes);
	}

	/** The mode used when a call does not choose one. */
	public LockMode getDefaultMode() {
		return this.defaultMode;
	}

	private static void requireAction(@Nullable Object action) {
		if (action == null) {
			throw new IllegalArgumentException("The action to run under the lock must not be null");
		}
	}

	private LockCall request(String resource, LockOptions options) {
		validateResource(resource);
		if (options == null) {
			throw new IllegalArgumentException("options must not be null for lock '" + resource
					+ "': use LockOptions.defaults() for the configured defaults");
		}
		LockMode mode = (options.getMode() != null) ? options.getMode() : this.defaultMode;
		String refusal = this.refusedModes.get(mode);
		if (refusal != null) {
			throw new IllegalStateException("Lock mode " + mode + " is refused for '" + resource + "': " + refusal);
		}
		LockProvider provider = this.providers.get(mode);
		if (provider == null) {
			throw new IllegalArgumentException("Lock mode " + mode + " is not available; available modes: "
					+ this.providers.keySet());
		}
		LockType type = options.getType();
		if (type != LockType.EXCLUSIVE && !(provider instanceof ReadWriteLockProvider)) {
			throw new IllegalArgumentException(readWriteRefusal(type, mode, resource));
		}
		Duration waitTime = (options.getWaitTime() != null) ? options.getWaitTime() : this.defaultWaitTime;
		Duration leaseTime = (options.getLeaseTime() != null) ? options.getLeaseTime() : this.defaultLeaseTime;
		Duration minHoldTime = (options.getMinHoldTime() != null) ? options.getMinHoldTime() : Duration.ZERO;
		if (minHoldTime.compareTo(leaseTime) > 0) {
			throw new IllegalArgumentException("minHoldTime " + minHoldTime + " exceeds the lease time " + leaseTime
					+ " of lock '" + resource + "'; it must not be longer than the lease"
					+ ((options.getLeaseTime() == null) ? " (distributed-lock.lease-time; give a longer leaseTime)" : ""));
		}
		return new LockCall(resource, provider, mode, type, waitTime, leaseTime, options.getLeaseTime() == null,
				minHoldTime);
	}

	/** Why a READ or WRITE lock cannot be had in a mode. */
	private static String readWriteRefusal(LockType type, LockMode mode, String resource) {
		String why = (mode == LockMode.OPTIMISTIC) ? "OPTIMISTIC has no lock to hold, only a version check at commit"
				: "read/write locks are lease locks";
		return "Lock type " + type + " is not available in mode " + mode + " for '" + resource + "': " + why
				+ ". Use LockMode.LEASE for READ and WRITE locks (LockOptions.withMode(LockMode.LEASE) or "
				+ "@DistributedLock(mode = LockMode.LEASE, type = ...))";
	}

	/**
	 * Checks a resource name: not null, not blank, at most {@value #MAX_RESOURCE_LENGTH} Unicode code points (a
	 * supplementary character such as an emoji counts one, a combining accent counts one of its own), and
	 * well-formed Unicode (no unpaired surrogate), so that it can be stored exactly as UTF-8 (at most 4 bytes per
	 * code point: 1,020 bytes, the size of the lock table's {@code VARBINARY(1020)} key). No SQL runs. Thread-safe.
	 * @throws IllegalArgumentException naming the problem and what is allowed
	 */
	public static void validateResource(String resource) {
		if (resource == null) {
			throw new IllegalArgumentException("Lock resource name must not be null; give 1 to " + MAX_RESOURCE_LENGTH
					+ " characters");
		}
		if (resource.isBlank()) {
			throw new IllegalArgumentException("Lock resource name must not be blank, was '" + resource + "'; give 1 to "
					+ MAX_RESOURCE_LENGTH + " characters, not only white space");
		}
		int length = resource.codePointCount(0, resource.length());
		if (length > MAX_RESOURCE_LENGTH) {
			throw new IllegalArgumentException("Lock resource name is " + length + " characters (code points) long; at most "
					+ MAX_RESOURCE_LENGTH + " are allowed: '" + resource.substring(0, resource.offsetByCodePoints(0, 40))
					+ "...'");
		}
		int unpaired = unpairedSurrogate(resource); // what UTF-8 cannot encode, found without an encoder per call
		if (unpaired >= 0) {
			throw new IllegalArgumentException("Lock resource name is not well-formed Unicode (unpaired surrogate at index "
					+ unpaired + "): '" + resource.replaceAll("\\p{Cs}", "\uFFFD")
					+ "'; only well-formed Unicode can be stored exactly");
		}
	}

	private static int unpairedSurrogate(String resource) {
		for (int i = 0; i < resource.length(); i++) {
			char c = resource.charAt(i);
			if (Character.isHighSurrogate(c) && i + 1 < resource.length() && Character.isLowSurrogate(resource.charAt(i + 1))) {
				i++;
			}
			else if (Character.isSurrogate(c)) {
				return i;
			}
		}
		return -1;
	}

}
