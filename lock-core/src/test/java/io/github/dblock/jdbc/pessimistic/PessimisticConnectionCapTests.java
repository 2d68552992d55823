package io.github.dblock.jdbc.pessimistic;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockHandle;
import io.github.dblock.LockLimitExceededException;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import io.github.dblock.wait.Backoff;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * The PESSIMISTIC connection cap ({@code distributed-lock.pessimistic.max-connections}): a caller with a wait time
 * waits for a slot within it; the default is derived from the lock pool's size.
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class PessimisticConnectionCapTests {

	private static HikariDataSource pool;

	@BeforeAll
	static void pool() {
		pool = TestDatabase.get().newDataSource(6);
		LockNodes.migrateOnce(pool);
	}

	@AfterAll
	static void close() {
		pool.close();
	}

	private static PessimisticLockProvider provider(int maxConnections) {
		return new PessimisticLockProvider(pool, LockNodes.TABLE, LockNodes.dialect(pool),
				new DataSourceTransactionManager(pool), Duration.ofSeconds(5),
				new Backoff(Duration.ofMillis(5), Duration.ofMillis(50)), maxConnections);
	}

	@Test
	void aCallerWithAWaitTimeGetsTheNextFreeSlotWithinIt() throws Exception {
		PessimisticLockProvider provider = provider(1);
		LockTemplate node = LockNodes.node(provider, "cap-wait");
		String prefix = "cap-wait-" + UUID.randomUUID();
		LockHandle first = node.acquire(prefix + "-1");
		CompletableFuture<Long> second = CompletableFuture.supplyAsync(() -> {
			try (LockHandle lock = node.acquire(prefix + "-2", LockOptions.defaults().withWaitTime(Duration.ofSeconds(10)))) {
				return lock.fencingToken();
			}
		});
		Thread.sleep(300);
		assertThat(second).as("waits for a slot instead of failing").isNotDone();
		assertThat(provider.connectionsInUse()).isEqualTo(1);
		first.close();
		assertThat(second.get(10, TimeUnit.SECONDS)).isPositive();
		assertThat(provider.connectionsInUse()).isZero();
	}

	@Test
	void aWaitThatEndsWithoutASlotThrowsLockLimitExceededExceptionAtItsEnd() {
		PessimisticLockProvider provider = provider(1);
		LockTemplate node = LockNodes.node(provider, "cap-timeout");
		String prefix = "cap-timeout-" + UUID.randomUUID();
		try (LockHandle first = node.acquire(prefix + "-1")) {
			long start = System.nanoTime();
			assertThatExceptionOfType(LockLimitExceededException.class)
				.isThrownBy(() -> node.acquire(prefix + "-2", LockOptions.defaults().withWaitTime(Duration.ofMillis(300))))
				.satisfies((ex) -> assertThat(ex.getLimit()).isEqualTo(1));
			long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
			assertThat(waitedMillis).isBetween(300L, 3_000L);
			start = System.nanoTime();
			assertThatExceptionOfType(LockLimitExceededException.class).isThrownBy(() -> node.acquire(prefix + "-3"));
			assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).as("a zero wait fails at once")
				.isLessThan(300L);
		}
		assertThat(provider.connectionsInUse()).isZero();
	}

	/**
	 * The report, scaled down: 16 request threads over 1,000 rows with the cap derived from a pool of 6 (4)
	 * produced tens of thousands of LockLimitExceededExceptions in seconds when the cap failed at once; with a wait
	 * time each caller waits for a slot, and none fails.
	 */
	@Test
	void sixteenThreadsOverAThousandRowsWithAWaitTimeNeverHitTheCap() throws Exception {
		PessimisticLockProvider provider = provider(4); // the cap the auto-configuration derives from a pool of 6
		assertThat(provider.getMaxConnections()).isEqualTo(4);
		LockTemplate node = LockNodes.node(provider, "cap-load");
		String prefix = "cap-load-" + UUID.randomUUID() + "-";
		LockOptions wait = LockOptions.defaults().withWaitTime(Duration.ofSeconds(10));
		java.util.concurrent.atomic.AtomicInteger completed = new java.util.concurrent.atomic.AtomicInteger();
		java.util.concurrent.atomic.AtomicInteger limited = new java.util.concurrent.atomic.AtomicInteger();
		long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
		java.util.concurrent.ExecutorService threads = java.util.concurrent.Executors.newFixedThreadPool(16);
		try {
			java.util.List<java.util.concurrent.Future<?>> futures = new java.util.ArrayList<>();
			for (int t = 0; t < 16; t++) {
				futures.add(threads.submit(() -> {
					java.util.concurrent.ThreadLocalRandom random = java.util.concurrent.ThreadLocalRandom.current();
					while (System.nanoTime() - end < 0) {
						try (LockHandle lock = node.acquire(prefix + random.nextInt(1000), wait)) {
							completed.incrementAndGet();
						}
						catch (LockLimitExceededException ex) {
							limited.incrementAndGet();
						}
					}
				}));
			}
			for (java.util.concurrent.Future<?> future : futures) {
				future.get(60, TimeUnit.SECONDS);
			}
		}
		finally {
			threads.shutdownNow();
		}
		assertThat(limited.get()).as("LockLimitExceededExceptions").isZero();
		assertThat(completed.get()).isPositive();
		assertThat(provider.connectionsInUse()).isZero();
	}

}
