package io.github.dblock.jdbc.optimistic;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockMode;
import io.github.dblock.LockNotAcquiredException;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import io.github.dblock.wait.Backoff;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

/**
 * OPTIMISTIC specifics on the real database: a conflict rolls the work back and runs it again, the attempts are
 * bounded, and misuse is refused.
 */
class OptimisticLockProviderTests {

	private static HikariDataSource pool;

	private static JdbcTemplate jdbc;

	@BeforeAll
	static void pool() {
		pool = TestDatabase.get().newDataSource(8);
		LockNodes.migrateOnce(pool);
		jdbc = new JdbcTemplate(pool);
		jdbc.execute("CREATE TABLE IF NOT EXISTS lock_test_item (id VARCHAR(64) PRIMARY KEY, note VARCHAR(64))");
	}

	@AfterAll
	static void close() {
		pool.close();
	}

	private static LockTemplate node(int maxAttempts) {
		return LockNodes.node(new OptimisticLockProvider(pool, LockNodes.TABLE, new DataSourceTransactionManager(pool),
				Duration.ofSeconds(5), new Backoff(Duration.ofMillis(5), Duration.ofMillis(20)), maxAttempts), "optimistic");
	}

	/** Another node commits work under the resource, so the running attempt's compare-and-set fails. */
	private static void interfere(String resource) {
		LockNodes.node(LockMode.LEASE, "interferer", pool).acquire(resource).close();
	}

	@Test
	void aConflictRollsTheWorkBackAndRunsItAgain() {
		LockTemplate node = node(5);
		String resource = "optimistic-retry-" + UUID.randomUUID();
		AtomicInteger runs = new AtomicInteger();
		String result = node.execute(resource, (lock) -> {
			int run = runs.incrementAndGet();
			jdbc.update("INSERT INTO lock_test_item (id, note) VALUES (?, ?)", resource, "run " + run);
			if (run == 1) {
				interfere(resource);
			}
			return "committed on run " + run;
		});
		assertThat(result).isEqualTo("committed on run 2");
		assertThat(runs).hasValue(2);
		assertThat(jdbc.queryForList("SELECT note FROM lock_test_item WHERE id = ?", String.class, resource))
			.containsExactly("run 2");
	}

	@Test
	void afterTheLastAttemptAConflictIsReportedAndNothingIsWritten() {
		LockTemplate node = node(3);
		String resource = "optimistic-exhausted-" + UUID.randomUUID();
		AtomicInteger runs = new AtomicInteger();
		assertThatExceptionOfType(LockNotAcquiredException.class).isThrownBy(() -> node.execute(resource,
				LockOptions.defaults().withWaitTime(Duration.ofSeconds(5)), (lock) -> {
					runs.incrementAndGet();
					jdbc.update("INSERT INTO lock_test_item (id, note) VALUES (?, 'x')", resource);
					interfere(resource);
					return null;
				}))
			.withMessageContaining(resource)
			.withMessageContaining("3 attempts")
			.withMessageContaining("distributed-lock.optimistic.max-attempts=3");
		assertThat(runs).hasValue(3);
		assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM lock_test_item WHERE id = ?", Integer.class, resource))
			.isZero();
	}

	@Test
	void itRefusesToRunInsideAnExistingTransactionOrToHandOutALock() {
		LockTemplate node = node(3);
		String resource = "optimistic-misuse-" + UUID.randomUUID();
		new TransactionTemplate(new DataSourceTransactionManager(pool)).executeWithoutResult((status) -> {
			jdbc.queryForObject("SELECT 1", Integer.class);
			assertThatIllegalStateException().isThrownBy(() -> node.execute(resource, (lock) -> 1))
				.withMessageContaining("inside an active transaction");
		});
		assertThatIllegalArgumentException().isThrownBy(() -> node.acquire(resource)).withMessageContaining("execute");
		assertThatIllegalArgumentException().isThrownBy(() -> node.tryAcquire(resource)).withMessageContaining("execute");
	}

}
