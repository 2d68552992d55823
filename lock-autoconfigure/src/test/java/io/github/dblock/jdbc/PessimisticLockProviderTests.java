package io.github.dblock.jdbc;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockHandle;
import io.github.dblock.LockLimitExceededException;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.test.CountingDataSource;
import io.github.dblock.test.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * PESSIMISTIC specifics on the real database: the server-side wait bound, the connection cap, round trips, and
 * exclusion against LEASE holders of the same resource.
 */
class PessimisticLockProviderTests {

	private static HikariDataSource pool;

	@BeforeAll
	static void pool() {
		pool = TestDatabase.get().newDataSource(12);
		LockNodes.migrateOnce(pool);
	}

	@AfterAll
	static void close() {
		pool.close();
	}

	private static PessimisticLockProvider provider(javax.sql.DataSource dataSource, int maxConnections) {
		return new PessimisticLockProvider(dataSource, LockNodes.TABLE, LockNodes.dialect(pool),
				new DataSourceTransactionManager(dataSource), Duration.ofSeconds(5),
				new Backoff(Duration.ofMillis(5), Duration.ofMillis(50)), maxConnections);
	}

	@Test
	void aWaitIsBoundedByTheServerInWholeSecondsAndAZeroWaitFailsAtOnce() {
		LockTemplate a = LockNodes.node(provider(pool, 4), "a");
		LockTemplate b = LockNodes.node(provider(pool, 4), "b");
		String resource = "pessimistic-wait-" + UUID.randomUUID();
		try (LockHandle held = a.acquire(resource)) {
			long start = System.nanoTime();
			assertThat(b.tryAcquire(resource, Duration.ofMillis(1_500))).isEmpty();
			long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
			assertThat(waited).as("1.5 s rounds up to the server's 2 s").isBetween(1_900L, 5_000L);
			start = System.nanoTime();
			assertThat(b.tryAcquire(resource)).isEmpty();
			assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(1_500L);
		}
		assertThat(b.tryAcquire(resource).map((lock) -> {
			lock.close();
			return true;
		})).contains(true);
	}

	@Test
	void locksOnTheirOwnConnectionsAreCappedPerJvmWithAClearError() {
		PessimisticLockProvider provider = provider(pool, 2);
		LockTemplate node = LockNodes.node(provider, "capped");
		String prefix = "pessimistic-cap-" + UUID.randomUUID();
		try (LockHandle first = node.acquire(prefix + "-1"); LockHandle second = node.acquire(prefix + "-2")) {
			assertThat(provider.connectionsInUse()).isEqualTo(2);
			assertThatExceptionOfType(LockLimitExceededException.class).isThrownBy(() -> node.acquire(prefix + "-3"))
				.withMessageContaining("distributed-lock.pessimistic.max-connections=2")
				.satisfies((ex) -> assertThat(ex.getLimit()).isEqualTo(2));
			assertThat(node.localResourceCount()).isEqualTo(2);
		}
		assertThat(provider.connectionsInUse()).isZero();
		try (LockHandle third = node.acquire(prefix + "-3")) {
			assertThat(third.isHeld()).isTrue();
		}
		// locks that join a caller's transaction use its connection and do not count
		TransactionTemplate transaction = new TransactionTemplate(new DataSourceTransactionManager(pool));
		transaction.executeWithoutResult((status) -> {
			try (LockHandle a = node.acquire(prefix + "-4"); LockHandle b = node.acquire(prefix + "-5");
					LockHandle c = node.acquire(prefix + "-6")) {
				assertThat(provider.connectionsInUse()).isZero();
			}
		});
		assertThat(node.localResourceCount()).isZero();
	}

	@Test
	void aStandaloneLockCostsThreeStatementsAndOneInsideATransactionCostsOne() {
		CountingDataSource counting = new CountingDataSource(pool);
		LockTemplate node = LockNodes.node(provider(counting, 4), "counted");
		String resource = "pessimistic-budget-" + UUID.randomUUID();
		node.acquire(resource).close(); // creates the row
		counting.reset();
		node.acquire(resource).close();
		List<String> standalone = counting.executed();
		if (LockNodes.dialect(pool) == LockDialect.MARIADB) {
			assertThat(standalone).extracting((sql) -> sql.split(" ")[0]).containsExactly("START", "SET", "COMMIT");
			assertThat(standalone.get(1)).startsWith("SET STATEMENT innodb_lock_wait_timeout=0 FOR UPDATE");
		}
		counting.reset();
		new TransactionTemplate(new DataSourceTransactionManager(counting)).executeWithoutResult((status) -> {
			try (LockHandle lock = node.acquire(resource)) {
				assertThat(lock.isHeld()).isTrue();
			}
		});
		assertThat(counting.executed()).filteredOn((sql) -> sql.contains("distributed_lock")).hasSize(1);
		assertThat(counting.warnings()).isEmpty();
	}

	@Test
	void pessimisticAndLeaseHoldersOfTheSameResourceExcludeEachOther() {
		LockTemplate pessimistic = LockNodes.node(provider(pool, 4), "pessimistic");
		LockTemplate lease = LockNodes.node(LockMode.LEASE, "lease", pool);
		String resource = "mixed-" + UUID.randomUUID();
		try (LockHandle held = lease.acquire(resource)) {
			Optional<LockHandle> attempt = pessimistic.tryAcquire(resource, Duration.ofMillis(300));
			assertThat(attempt).isEmpty();
		}
		try (LockHandle held = pessimistic.acquire(resource)) {
			assertThat(lease.tryAcquire(resource)).isEmpty();
		}
		try (LockHandle afterBoth = lease.acquire(resource, LockOptions.defaults().withWaitTime(Duration.ofSeconds(5)))) {
			assertThat(afterBoth.isHeld()).isTrue();
		}
	}

}
