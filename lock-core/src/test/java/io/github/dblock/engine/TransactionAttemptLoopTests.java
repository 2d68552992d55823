package io.github.dblock.engine;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

import io.github.dblock.LockMode;
import io.github.dblock.LockNotAcquiredException;
import io.github.dblock.LockTemplate;
import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.spi.TransactionalLockProvider;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The engine's PESSIMISTIC {@code execute} outside a transaction, where every attempt is a transaction of its own
 * ({@link TransactionAttemptLoop}), against a scripted in-memory {@link TransactionalLockProvider}: each
 * attempt's outcome is given in advance and everything the engine asks of the provider is counted exactly. The same
 * loop runs against MariaDB/MySQL in PessimisticLockProviderTests and lock-system-tests' DatabaseOutageTests.
 */
class TransactionAttemptLoopTests {

	private final Scripted provider = new Scripted();

	private LockTemplate template(Duration waitTime) {
		return new LockTemplate(List.of(this.provider), LockMode.PESSIMISTIC, waitTime, Duration.ofSeconds(30), "node-1");
	}

	@Test
	void refusedAttemptsEndTheirTransactionAndAnnounceTheNextAttemptAndTheActionRunsOnceInTheGrantedOne() {
		this.provider.script(Step.BUSY, Step.BUSY, Step.GRANT);
		AtomicInteger runs = new AtomicInteger();
		String result = template(Duration.ofSeconds(10)).execute("r", (lock) -> {
			runs.incrementAndGet();
			assertThat(this.provider.inTransaction.get()).as("the action runs in the attempt's transaction").isTrue();
			return "done " + lock.fencingToken();
		});
		assertThat(result).isEqualTo("done 3");
		assertThat(runs.get()).isEqualTo(1);
		assertThat(this.provider.transactions.get()).isEqualTo(3);
		assertThat(this.provider.acquisitions.get()).isEqualTo(3);
		assertThat(this.provider.announcements).as("announced outside any transaction, once per refusal")
			.containsExactly("r outside", "r outside");
		assertThat(this.provider.releases.get()).isEqualTo(1);
	}

	@Test
	void aRetryableFailureBeforeTheActionIsRetriedInANewTransactionWithoutAnAnnouncement() {
		this.provider.script(Step.DROP, Step.GRANT);
		AtomicInteger runs = new AtomicInteger();
		template(Duration.ofSeconds(10)).executeWithoutResult("r", (lock) -> runs.incrementAndGet());
		assertThat(runs.get()).isEqualTo(1);
		assertThat(this.provider.transactions.get()).isEqualTo(2);
		assertThat(this.provider.announcements).isEmpty();
		assertThat(this.provider.releases.get()).isEqualTo(1);
	}

	@Test
	void aFailureTheProviderDoesNotCallRetryableEndsTheCallAtOnce() {
		this.provider.script(Step.FAIL, Step.GRANT);
		AtomicInteger runs = new AtomicInteger();
		assertThatIllegalStateException()
			.isThrownBy(() -> template(Duration.ofSeconds(10)).executeWithoutResult("r", (lock) -> runs.incrementAndGet()))
			.withMessage("scripted failure");
		assertThat(runs.get()).isZero();
		assertThat(this.provider.transactions.get()).isEqualTo(1);
	}

	@Test
	void aRetryableFailureThrownByTheActionIsNotRetriedSoTheActionNeverRunsTwice() {
		this.provider.script(Step.GRANT, Step.GRANT);
		AtomicInteger runs = new AtomicInteger();
		assertThatThrownBy(() -> template(Duration.ofSeconds(10)).executeWithoutResult("r", (lock) -> {
			runs.incrementAndGet();
			throw new Dropped();
		})).isInstanceOf(Dropped.class);
		assertThat(runs.get()).isEqualTo(1);
		assertThat(this.provider.transactions.get()).isEqualTo(1);
		assertThat(this.provider.releases.get()).isEqualTo(1);
	}

	@Test
	void aLockNotAcquiredExceptionFromTheActionItselfIsNotRetried() {
		this.provider.script(Step.GRANT, Step.GRANT);
		AtomicInteger runs = new AtomicInteger();
		LockNotAcquiredException own = new LockNotAcquiredException("other", Duration.ZERO, null);
		assertThatThrownBy(() -> template(Duration.ofSeconds(10)).executeWithoutResult("r", (lock) -> {
			runs.incrementAndGet();
			throw own;
		})).isSameAs(own);
		assertThat(runs.get()).isEqualTo(1);
		assertThat(this.provider.transactions.get()).isEqualTo(1);
		assertThat(this.provider.announcements).isEmpty();
	}

	@Test
	void attemptsThatAreRefusedUntilTheWaitTimeEndInLockNotAcquiredWithoutRunningTheAction() {
		this.provider.otherwise = Step.BUSY;
		AtomicInteger runs = new AtomicInteger();
		long started = System.nanoTime();
		assertThatThrownBy(() -> template(Duration.ofMillis(300)).executeWithoutResult("r", (lock) -> runs.incrementAndGet()))
			.isInstanceOf(LockNotAcquiredException.class)
			.hasMessageContaining("held by scripted holder");
		long elapsedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
		assertThat(runs.get()).isZero();
		assertThat(elapsedMillis).as("waited out the wait time").isGreaterThanOrEqualTo(300);
		assertThat(this.provider.transactions.get()).as("more than one attempt").isGreaterThan(1);
		// one announcement per pause between two attempts, except a pause cut short by the deadline (the attempt
		// after it is the last one, made at the deadline, so no LEASE holder needs to hold back for it)
		int pauses = this.provider.transactions.get() - 1;
		assertThat(this.provider.announcements.size()).as("announcements for %d pauses", pauses)
			.isBetween(pauses - 1, pauses);
		assertThat(this.provider.announcements).containsOnly("r outside");
		assertThat(this.provider.releases.get()).isZero();
	}

	/** What one attempt's acquisition does. */
	private enum Step {

		/** Busy at once, as the provider reports a row held under a lease inside a transaction. */
		BUSY,
		/** A lost connection: retryable before the action started. */
		DROP,
		/** A failure the provider does not call retryable. */
		FAIL,
		/** Granted, with the attempt's number as its fencing token. */
		GRANT

	}

	/** The failure {@link Scripted#isRetryableAttemptFailure} accepts. */
	private static final class Dropped extends RuntimeException {

		Dropped() {
			super("scripted lost connection");
		}

	}

	/** A transactional provider whose attempts follow a script; counts what it was asked. Thread-safe enough for one caller. */
	private static final class Scripted implements TransactionalLockProvider {

		private final Queue<Step> script = new ArrayDeque<>();

		volatile Step otherwise = Step.FAIL;

		final ThreadLocal<Boolean> inTransaction = ThreadLocal.withInitial(() -> false);

		final AtomicInteger transactions = new AtomicInteger();

		final AtomicInteger acquisitions = new AtomicInteger();

		final AtomicInteger releases = new AtomicInteger();

		final List<String> announcements = Collections.synchronizedList(new ArrayList<>());

		void script(Step... steps) {
			Collections.addAll(this.script, steps);
		}

		@Override
		public LockMode mode() {
			return LockMode.PESSIMISTIC;
		}

		@Override
		public AcquireResult acquire(LockRequest request) {
			int attempt = this.acquisitions.incrementAndGet();
			Step step = this.script.isEmpty() ? this.otherwise : this.script.remove();
			return switch (step) {
				case BUSY -> AcquireResult.busy("scripted holder");
				case DROP -> throw new Dropped();
				case FAIL -> throw new IllegalStateException("scripted failure");
				case GRANT -> AcquireResult.acquired(new Held(request.resource(), attempt));
			};
		}

		@Override
		public boolean canWaitInDatabase() {
			return true;
		}

		@Override
		public void announceNextAttempt(String resource, Duration nextAttemptWithin) {
			// recorded, not asserted here: the engine logs what an announcement throws and goes on
			this.announcements.add(resource + (this.inTransaction.get() ? " inside" : " outside")
					+ (nextAttemptWithin.isNegative() || nextAttemptWithin.isZero() ? " not positive" : ""));
		}

		@Override
		public boolean isRetryableAttemptFailure(RuntimeException failure) {
			return failure instanceof Dropped;
		}

		@Override
		public <T> T inTransaction(LockRequest request, Supplier<T> work) {
			this.transactions.incrementAndGet();
			this.inTransaction.set(true);
			try {
				return work.get();
			}
			finally {
				this.inTransaction.set(false);
			}
		}

		private final class Held implements HeldLock {

			private final String resource;

			private final long token;

			Held(String resource, long token) {
				this.resource = resource;
				this.token = token;
			}

			@Override
			public long fencingToken() {
				return this.token;
			}

			@Override
			public String ownerToken() {
				return this.resource + "-" + this.token;
			}

			@Override
			public long validUntilNanos() {
				return System.nanoTime() + TimeUnit.HOURS.toNanos(1);
			}

			@Override
			public boolean release() {
				Scripted.this.releases.incrementAndGet();
				return true;
			}

		}

	}

}
