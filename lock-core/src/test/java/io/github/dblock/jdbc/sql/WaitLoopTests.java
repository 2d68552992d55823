package io.github.dblock.jdbc.sql;

import java.lang.reflect.Proxy;
import java.net.ConnectException;
import java.sql.SQLRecoverableException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import io.github.dblock.spi.AcquireResult;
import io.github.dblock.wait.Backoff;
import io.github.dblock.wait.WaitLoop;
import org.apache.commons.logging.Log;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.springframework.dao.DataAccessException;
import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.dao.PessimisticLockingFailureException;
import org.springframework.jdbc.CannotGetJdbcConnectionException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@link WaitLoop} without a database: scripted attempts, a deadline the test moves, the warnings counted. */
class WaitLoopTests {

	private final List<String> warnings = new ArrayList<>();

	private final WaitLoop loop = new WaitLoop(new Backoff(Duration.ofMillis(1), Duration.ofMillis(4)), warningLog());

	/** What the scripted wait saw. */
	private final List<String> events = new ArrayList<>();

	private long remaining = TimeUnit.SECONDS.toNanos(5);

	@Test
	void retriesUntilAnAttemptSucceedsThenCleansUpWithTheAnswer() throws InterruptedException {
		String answer = this.loop.run(() -> this.remaining, new Scripted((n) -> (n < 3) ? "busy" : "taken"));
		assertThat(answer).isEqualTo("taken");
		assertThat(this.events).containsExactly("attempt 0", "pause 0", "attempt 1", "pause 1", "attempt 2", "pause 2",
				"attempt 3", "ended taken");
		assertThat(this.warnings).isEmpty();
	}

	@Test
	void answersAtTheDeadlineWithTheLastAttempt() throws InterruptedException {
		String answer = this.loop.run(() -> this.remaining, new Scripted((n) -> {
			if (n == 1) {
				this.remaining = 0;
			}
			return "held by " + n;
		}));
		assertThat(answer).isEqualTo("deadline after held by 1");
		assertThat(this.events).containsExactly("attempt 0", "pause 0", "attempt 1", "ended deadline after held by 1");
	}

	@Test
	void ridesOutAnOutageAndWarnsOncePerWait() throws InterruptedException {
		String answer = this.loop.run(() -> this.remaining, new Scripted((n) -> {
			if (n < 3) {
				throw brokenConnection();
			}
			return "taken";
		}));
		assertThat(answer).isEqualTo("taken");
		assertThat(this.events).containsExactly("attempt 0", "outage", "pause 0", "attempt 1", "outage", "pause 1",
				"attempt 2", "outage", "pause 2", "attempt 3", "ended taken");
		assertThat(this.warnings).singleElement().asString()
				.startsWith("Lost the connection to the lock database while acquiring 'r', or it answered too slowly")
				.contains("connection reset");
	}

	@Test
	void anOutageAtTheDeadlineOfAReachedDatabaseIsATimeoutWithItsCause() throws InterruptedException {
		DataAccessException broken = brokenConnection();
		AcquireResult result = this.loop.run(() -> this.remaining, new LockWait(() -> {
			this.remaining = 0;
			throw broken;
		}));
		assertThat(result.lock()).isNull();
		assertThat(result.cause()).isSameAs(broken);
		assertThat(this.warnings).isEmpty();
	}

	@Test
	void anUnreachableDatabaseAtTheDeadlineIsThrown() {
		DataAccessException refused = new CannotGetJdbcConnectionException("no connection",
				new java.sql.SQLException("refused", "08001", new ConnectException("Connection refused")));
		assertThatThrownBy(() -> this.loop.run(() -> this.remaining, new LockWait(() -> {
			this.remaining = 0;
			throw refused;
		}))).isSameAs(refused);
	}

	@Test
	void aFailureThatIsNoOutageEndsTheWaitAndCleansUp() {
		DataAccessException fault = new DataAccessResourceFailureException("bad SQL",
				new java.sql.SQLSyntaxErrorException("syntax", "42000", 1064));
		assertThatThrownBy(() -> this.loop.run(() -> this.remaining, new Scripted((n) -> {
			throw fault;
		}))).isSameAs(fault);
		assertThat(this.events).containsExactly("attempt 0", "ended null");
	}

	@Test
	void aContendedFailureCountsAsAnUnsuccessfulAttemptWithoutAWarning() throws InterruptedException {
		String answer = this.loop.run(() -> this.remaining, new Scripted((n) -> {
			if (n == 0) {
				throw new PessimisticLockingFailureException("deadlock", new java.sql.SQLException("d", "40001", 1213));
			}
			return "taken";
		}));
		assertThat(answer).isEqualTo("taken");
		assertThat(this.events).containsExactly("attempt 0", "contended", "pause 0", "attempt 1", "ended taken");
		assertThat(this.warnings).isEmpty();
	}

	@Test
	void anInterruptedThreadGetsInterruptedExceptionBetweenAttempts() {
		AtomicInteger attempts = new AtomicInteger();
		assertThatThrownBy(() -> this.loop.run(() -> this.remaining, new Scripted((n) -> {
			attempts.incrementAndGet();
			Thread.currentThread().interrupt();
			return "busy";
		}))).isInstanceOf(InterruptedException.class);
		assertThat(Thread.interrupted()).isFalse();
		assertThat(attempts).hasValue(1);
		assertThat(this.events).containsExactly("attempt 0", "ended null");
	}

	@Test
	void sleepsThePauseTheWaitAsksFor() throws InterruptedException {
		long started = System.nanoTime();
		this.loop.run(() -> this.remaining, new Scripted((n) -> (n < 2) ? "busy" : "taken") {
			@Override
			public long pauseNanos(String outcome, int attempt, long remainingNanos, Backoff backoff) {
				return TimeUnit.MILLISECONDS.toNanos(100);
			}
		});
		assertThat(System.nanoTime() - started).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(200));
	}

	private static DataAccessException brokenConnection() {
		return new DataAccessResourceFailureException("broken",
				new SQLRecoverableException("connection reset", "08S01", 0));
	}

	private Log warningLog() {
		return (Log) Proxy.newProxyInstance(Log.class.getClassLoader(), new Class<?>[] { Log.class },
				(proxy, method, args) -> {
					if (method.getName().equals("warn")) {
						this.warnings.add(String.valueOf(args[0]));
					}
					return method.getReturnType() == boolean.class ? Boolean.FALSE : null;
				});
	}

	/** A wait of strings: "taken" ends it, any other answer is unsuccessful; records its steps in events. */
	private class Scripted implements JdbcWait<String, String> {

		private final Function<Integer, String> attempts;

		Scripted(Function<Integer, String> attempts) {
			this.attempts = attempts;
		}

		@Override
		public String attempt(int attempt) {
			WaitLoopTests.this.events.add("attempt " + attempt);
			return this.attempts.apply(attempt);
		}

		@Override
		public @Nullable String result(String outcome) {
			return outcome.equals("taken") ? outcome : null;
		}

		@Override
		public String atDeadline(String outcome) {
			return "deadline after " + outcome;
		}

		@Override
		public String waitingFor() {
			return "acquiring 'r'";
		}

		@Override
		public @Nullable String contended(DataAccessException ex) {
			if (ex instanceof PessimisticLockingFailureException) {
				WaitLoopTests.this.events.add("contended");
				return "contended";
			}
			return null;
		}

		@Override
		public String afterOutage(DataAccessException ex) {
			WaitLoopTests.this.events.add("outage");
			return "outage";
		}

		@Override
		public String outageAtDeadline(DataAccessException ex) {
			throw ex;
		}

		@Override
		public long pauseNanos(String outcome, int attempt, long remainingNanos, Backoff backoff) {
			WaitLoopTests.this.events.add("pause " + attempt);
			long pause = backoff.pauseNanos(attempt, 0, remainingNanos);
			assertThat(pause).isBetween(0L, TimeUnit.MILLISECONDS.toNanos(4));
			return pause;
		}

		@Override
		public void ended(@Nullable String answer) {
			WaitLoopTests.this.events.add("ended " + answer);
		}

	}

	/** A lock wait whose attempts all fail through the given action; answers as the lock providers do. */
	private static final class LockWait implements JdbcWait<String, AcquireResult> {

		private final Runnable fail;

		LockWait(Runnable fail) {
			this.fail = fail;
		}

		@Override
		public String attempt(int attempt) {
			this.fail.run();
			return "unreachable";
		}

		@Override
		public @Nullable AcquireResult result(String outcome) {
			return null;
		}

		@Override
		public AcquireResult atDeadline(String outcome) {
			return AcquireResult.busy(outcome);
		}

		@Override
		public String waitingFor() {
			return "acquiring 'r'";
		}

		@Override
		public String afterOutage(DataAccessException ex) {
			return "outage";
		}

		@Override
		public AcquireResult outageAtDeadline(DataAccessException ex) {
			return JdbcWait.timedOutUnlessUnreachable(ex);
		}

	}

}
