package io.github.dblock.idempotency;

import java.lang.reflect.Type;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;

import io.github.dblock.engine.HolderDescriptions;
import io.github.dblock.LockInterruptedException;
import io.github.dblock.LockLostException;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.ObjectMapper;

/**
 * Runs work at most once per idempotency key across all nodes (run-once keys), recording its outcome so that
 * duplicate calls get the first call's result instead of running the work again.
 * <p>
 * Per call of {@link #execute(String, IdempotencyOptions, Type, IdempotentCallback)}:
 * <ol>
 * <li>Claim the key in the records table ({@code <lock table>_idem}): a new key, a {@code FAILED} record, a
 * {@code RUNNING} record whose running lease has ended (its runner died) or a {@code SUCCEEDED} record past its
 * retention is claimed by exactly one caller, in one atomic statement; the claim commits at once, on a connection
 * of its own, so that every duplicate sees it.</li>
 * <li>The winner runs the work while its running lease is renewed every third of the lease time. On success the
 * result is written as JSON (Jackson) with status {@code SUCCEEDED} and kept for the retention; on an exception the
 * record becomes {@code FAILED} and the exception is rethrown, so a later call runs the work again.</li>
 * <li>A duplicate that finds the key {@code RUNNING} waits (polling with backoff and jitter) up to its wait time.
 * When the record is {@code SUCCEEDED} it returns the recorded outcome, deserialized to the requested type, or
 * throws {@link AlreadyProcessedException} with {@link OnDuplicate#THROW}; when it is {@code FAILED} the duplicate
 * claims it and runs the work; still {@code RUNNING} at the end of the wait it throws
 * {@link IdempotencyInProgressException}.</li>
 * </ol>
 * <b>Transactions.</b> When a Spring transaction is active on the lock data source at the end of the work (for
 * example the template is called from a {@code @Transactional} method, or {@link Idempotent} sits inside one), the
 * {@code SUCCEEDED} write joins it: the record and the work's writes to that database commit or roll back together,
 * and after a rollback the record is marked {@code FAILED}. So database effects of the work happen exactly once.
 * <p>
 * <b>When the runner crashes mid-way</b> (process killed, machine lost): its record stays {@code RUNNING} until its
 * running lease ends on the database server's clock (renewal stopped with the process); then the next duplicate
 * takes the key over and runs the work again, with a higher fencing token. Writes the crashed run made inside a
 * transaction on the lock data source were rolled back with its connection, so they happen once; side effects
 * outside that database (an e-mail, a call to another service) may have happened and happen again: they are
 * at-least-once. Guard them with the fencing token or make them idempotent themselves. A runner that outlives its
 * lease (a long pause) and is taken over gets {@link LockLostException} when it completes, and its transaction, if
 * any, rolls back.
 * <p>
 * Keys are compared exactly (UTF-8 bytes), 1 to {@value LockTemplate#MAX_RESOURCE_LENGTH} code points, and are
 * independent of lock resource names. Thread-safe; one instance serves the application.
 */
public class IdempotencyTemplate {

	private static final Log logger = LogFactory.getLog(IdempotencyTemplate.class);

	private static final ThreadLocal<Deque<IdempotencyClaim>> current = new ThreadLocal<>();

	private final IdempotencyProvider store;

	private final ObjectMapper json;

	private final Duration defaultRetention;

	private final Duration defaultWaitTime;

	private final Duration defaultLeaseTime;

	private final OnDuplicate defaultOnDuplicate;

	private final String nodeName;

	private volatile ObservationRegistry observations = ObservationRegistry.NOOP;

	/**
	 * Creates a template.
	 * @param store the records
	 * @param json writes and reads outcomes (normally the application's {@code JsonMapper})
	 * @param defaultRetention how long a completed record answers duplicates when a call does not say; positive
	 * @param defaultWaitTime how long a duplicate waits for a running call when a call does not say; zero or positive
	 * @param defaultLeaseTime the running lease when a call does not say; 1 s to {@link LockOptions#MAX_LEASE_TIME}
	 * @param defaultOnDuplicate the duplicate policy when a call does not say
	 * @param nodeName describes this JVM in the records' {@code holder} column; not blank
	 * @throws IllegalArgumentException if an argument is null or out of range
	 */
	public IdempotencyTemplate(IdempotencyProvider store, ObjectMapper json, Duration defaultRetention,
			Duration defaultWaitTime, Duration defaultLeaseTime, OnDuplicate defaultOnDuplicate, String nodeName) {
		if (store == null || json == null || defaultOnDuplicate == null) {
			throw new IllegalArgumentException("store, json and defaultOnDuplicate must not be null");
		}
		IdempotencyOptions.checkRetention("The default idempotency retention", defaultRetention);
		IdempotencyOptions.checkLeaseTime("The default idempotency lease time", defaultLeaseTime);
		IdempotencyOptions.defaults().withWaitTime(defaultWaitTime); // validates
		this.defaultWaitTime = defaultWaitTime;
		if (nodeName == null || nodeName.isBlank()) {
			throw new IllegalArgumentException("nodeName must not be null or blank, was '" + nodeName + "'");
		}
		this.store = store;
		this.json = json;
		this.defaultRetention = defaultRetention;
		this.defaultLeaseTime = defaultLeaseTime;
		this.defaultOnDuplicate = defaultOnDuplicate;
		this.nodeName = nodeName;
	}

	/**
	 * Runs the work at most once for the key, with the configured defaults.
	 * @see #execute(String, IdempotencyOptions, Type, IdempotentCallback)
	 */
	@Nullable
	public <T> T execute(String key, Class<T> resultType, IdempotentCallback<T> work) {
		return execute(key, IdempotencyOptions.defaults(), resultType, work);
	}

	/**
	 * Runs the work at most once for the key (see the class comment for the algorithm and the guarantees).
	 * @param key the idempotency key: 1 to 255 code points, compared exactly
	 * @param options retention, wait time, running lease and duplicate policy; unset ones take the configured
	 * defaults
	 * @param resultType the type duplicates deserialize the recorded outcome to: a {@link Class} or a generic
	 * {@link java.lang.reflect.ParameterizedType} (for example a method's generic return type); {@code void.class}
	 * for none
	 * @param work the work; its exception (checked ones included) marks the record {@code FAILED} and is rethrown
	 * @return the work's result, or for a duplicate the recorded one (possibly {@code null})
	 * @throws AlreadyProcessedException for a duplicate when the work succeeded before and the policy is
	 * {@link OnDuplicate#THROW}, or when its outcome could not be recorded; the work does not run
	 * @throws IdempotencyInProgressException for a duplicate when another call still ran the work (with a valid
	 * running lease) for the whole wait time; the work does not run
	 * @throws LockLostException if the work completed but the claim had been taken over meanwhile (its running lease
	 * ended first): the outcome is not recorded by this call and the work may have run twice
	 * @throws LockInterruptedException if the thread was interrupted while waiting for a running call
	 * @throws IllegalArgumentException before anything is claimed: an invalid key (null, blank, longer than 255 code
	 * points, unpaired surrogate), null options, type or work
	 * @throws IllegalStateException if a recorded outcome cannot be read as {@code resultType}
	 * @throws org.springframework.dao.DataAccessException on a database failure; if it happens while recording the
	 * outcome, the record stays {@code RUNNING} and is taken over when its lease ends
	 */
	@Nullable
	public <T> T execute(String key, IdempotencyOptions options, Type resultType, IdempotentCallback<T> work) {
		validateKey(key);
		if (options == null || resultType == null || work == null) {
			throw new IllegalArgumentException("options, resultType and work must not be null for idempotency key '"
					+ key + "'; use IdempotencyOptions.defaults() and void.class where nothing else applies");
		}
		Observation observation = Observation.createNotStarted("distributed.lock.idempotent", this.observations)
			.highCardinalityKeyValue("key", key)
			.start();
		String[] outcome = { "failed" };
		try {
			return executeObserved(key, options, resultType, work, outcome);
		}
		catch (RuntimeException | Error ex) {
			observation.error(ex);
			throw ex;
		}
		finally {
			observation.lowCardinalityKeyValue("outcome", outcome[0]).stop();
		}
	}

	/** The body of {@link #execute}; sets {@code outcome[0]} to the observation's outcome tag. */
	@Nullable
	private <T> T executeObserved(String key, IdempotencyOptions options, Type resultType, IdempotentCallback<T> work,
			String[] outcome) {
		Duration waitTime = (options.getWaitTime() != null) ? options.getWaitTime() : this.defaultWaitTime;
		Duration retention = (options.getRetention() != null) ? options.getRetention() : this.defaultRetention;
		Duration leaseTime = (options.getLeaseTime() != null) ? options.getLeaseTime() : this.defaultLeaseTime;
		OnDuplicate onDuplicate = (options.getOnDuplicate() != null) ? options.getOnDuplicate() : this.defaultOnDuplicate;
		this.store.requireWritableTransaction(key);
		IdempotencyProvider.Claimed claimed;
		try {
			claimed = this.store.claim(key, HolderDescriptions.ofCurrentThread(this.nodeName), leaseTime, retention,
					System.nanoTime() + saturatedNanos(waitTime));
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new LockInterruptedException(key, ex);
		}
		IdempotencyProvider.HeldClaim claim = claimed.claim();
		if (claim == null) {
			IdempotencyRecord record = claimed.record();
			outcome[0] = (record == null || record.status() != IdempotencyStatus.SUCCEEDED) ? "in_progress"
					: (onDuplicate == OnDuplicate.THROW) ? "already_processed" : "duplicate";
			return duplicate(key, record, waitTime, onDuplicate, resultType);
		}
		T result = run(key, claim, work);
		recordSuccess(key, claim, resultType, result);
		outcome[0] = "ran";
		return result;
	}

	/** Runs the work as the thread's current claim; its exception marks the record failed and is rethrown. */
	@Nullable
	private static <T> T run(String key, IdempotencyProvider.HeldClaim claim, IdempotentCallback<T> work) {
		ClaimHandle handle = new ClaimHandle(key, claim);
		Deque<IdempotencyClaim> claims = current.get();
		if (claims == null) {
			claims = new ArrayDeque<>(2);
			current.set(claims);
		}
		claims.push(handle);
		try {
			return work.doOnce(handle);
		}
		catch (Throwable ex) {
			try {
				if (!claim.failed(ex.getClass().getName() + ": " + ex.getMessage())) {
					logger.warn("Idempotency key '" + key + "' was no longer claimed by this call when its work failed");
				}
			}
			catch (RuntimeException failure) {
				ex.addSuppressed(failure);
			}
			throw ex;
		}
		finally {
			claims.pop();
			if (claims.isEmpty()) {
				current.remove();
			}
		}
	}

	/** Records the work's result as JSON; a result Jackson cannot write is recorded as a note instead. */
	private void recordSuccess(String key, IdempotencyProvider.HeldClaim claim, Type resultType,
			@Nullable Object result) {
		String json = null;
		String note = null;
		if (result != null) {
			try {
				// written as the declared type, the type it is read back as (type ids of polymorphic elements included)
				json = this.json.writerFor(this.json.constructType(resultType)).writeValueAsString(result);
			}
			catch (JacksonException ex) {
				note = "its outcome (" + result.getClass().getName() + ") could not be written as JSON: " + ex.getMessage();
				logger.warn("Idempotency key '" + key + "' succeeded but " + note + "; duplicates get "
						+ "AlreadyProcessedException instead of the outcome", ex);
			}
		}
		claim.succeed(json, (result != null) ? result.getClass().getName() : null, note);
	}

	/**
	 * The claim the current thread's innermost running {@link #execute} call holds (also inside an
	 * {@link Idempotent} method), for code that needs its fencing token without having it passed; empty outside the
	 * work. Per thread: work handed to another thread does not see it.
	 */
	public static Optional<IdempotencyClaim> currentClaim() {
		Deque<IdempotencyClaim> claims = current.get();
		return (claims != null) ? Optional.ofNullable(claims.peek()) : Optional.empty();
	}

	/**
	 * Like {@link #execute(String, IdempotencyOptions, Type, IdempotentCallback)}, for work without a result:
	 * duplicates just return (or throw {@link AlreadyProcessedException} with {@link OnDuplicate#THROW}).
	 */
	public void executeWithoutResult(String key, IdempotencyOptions options, Consumer<IdempotencyClaim> work) {
		if (work == null) {
			throw new IllegalArgumentException("work must not be null for idempotency key '" + key + "'");
		}
		execute(key, options, void.class, (claim) -> {
			work.accept(claim);
			return null;
		});
	}

	/**
	 * The committed record of a key, if there is one (also one past its retention that cleanup has not deleted
	 * yet). One primary-key read.
	 * @throws IllegalArgumentException if the key is invalid
	 * @throws org.springframework.dao.DataAccessException on a database failure
	 */
	public Optional<IdempotencyRecord> find(String key) {
		validateKey(key);
		return this.store.find(key);
	}

	/**
	 * Deletes the record of a key whatever its state, for administration: the next call runs the work again. A call
	 * still running the work then gets {@link LockLostException} when it completes.
	 * @return whether there was a record
	 * @throws IllegalArgumentException if the key is invalid
	 * @throws org.springframework.dao.DataAccessException on a database failure
	 */
	public boolean forget(String key) {
		validateKey(key);
		return this.store.forget(key);
	}

	/**
	 * Observes every call as {@code distributed.lock.idempotent} with the low-cardinality key {@code outcome}:
	 * {@code ran} (this call ran the work and recorded it), {@code duplicate} (answered from the record),
	 * {@code already_processed} (the THROW policy), {@code in_progress} (still running elsewhere at the end of the wait)
	 * or {@code failed} (the work or the database threw); the key is a high-cardinality value. Thread-safe.
	 */
	public void setObservationRegistry(ObservationRegistry observations) {
		this.observations = (observations != null) ? observations : ObservationRegistry.NOOP;
	}

	/** The retention used when a call does not give one ({@code distributed-lock.idempotency.retention}). */
	public Duration getDefaultRetention() {
		return this.defaultRetention;
	}

	@Nullable
	private <T> T duplicate(String key, @Nullable IdempotencyRecord record, Duration waitTime, OnDuplicate onDuplicate,
			Type resultType) {
		if (record == null || record.status() != IdempotencyStatus.SUCCEEDED) {
			throw new IdempotencyInProgressException(key, waitTime, (record != null) ? record.holder()
					+ " (running lease ends at " + record.leaseExpiresAt() + ", fencing token " + record.fencingToken() + ")"
					: null);
		}
		Objects.requireNonNull(record.completedAt(), "completedAt");
		if (onDuplicate == OnDuplicate.THROW) {
			throw new AlreadyProcessedException(key, record.completedAt(), record.holder(), null);
		}
		if (record.error() != null) {
			throw new AlreadyProcessedException(key, record.completedAt(), record.holder(), record.error());
		}
		if (record.outcomeJson() == null || resultType == void.class || resultType == Void.class) {
			return null;
		}
		try {
			return this.json.readValue(record.outcomeJson(), this.json.constructType(resultType));
		}
		catch (JacksonException ex) {
			throw new IllegalStateException("The recorded outcome of idempotency key '" + key + "' (" + record.outcomeType()
					+ ") cannot be read as " + resultType.getTypeName() + ": " + ex.getMessage(), ex);
		}
	}

	/**
	 * Checks an idempotency key: the same rules as a lock resource name (see {@link LockTemplate#validateResource}).
	 * @throws IllegalArgumentException naming the problem
	 */
	public static void validateKey(String key) {
		try {
			LockTemplate.validateResource(key);
		}
		catch (IllegalArgumentException ex) {
			throw new IllegalArgumentException("Invalid idempotency key: " + ex.getMessage(), ex);
		}
	}

	private static long saturatedNanos(Duration duration) {
		try {
			return duration.toNanos();
		}
		catch (ArithmeticException ex) {
			return Long.MAX_VALUE / 4;
		}
	}

	/** The claim as the work sees it. */
	private static final class ClaimHandle implements IdempotencyClaim {

		private final String key;

		private final IdempotencyProvider.HeldClaim claim;

		ClaimHandle(String key, IdempotencyProvider.HeldClaim claim) {
			this.key = key;
			this.claim = claim;
		}

		@Override
		public String key() {
			return this.key;
		}

		@Override
		public long fencingToken() {
			return this.claim.fencingToken();
		}

		@Override
		public boolean isHeld() {
			return !this.claim.isLost() && System.nanoTime() - this.claim.validUntilNanos() < 0;
		}

		@Override
		public void onLost(Consumer<? super IdempotencyClaim> listener) {
			this.claim.onLost(() -> listener.accept(this));
		}

		@Override
		public String toString() {
			return "IdempotencyClaim[key=" + this.key + ", fencingToken=" + fencingToken() + "]";
		}

	}

}
