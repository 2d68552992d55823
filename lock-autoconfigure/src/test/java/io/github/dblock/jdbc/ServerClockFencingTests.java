package io.github.dblock.jdbc;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.test.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * PESSIMISTIC with {@link PessimisticLockProvider.Fencing#SERVER_CLOCK} on the real database: tokens strictly
 * increase under contention without a write, the durable write happens when the stored token is ahead of the clock or
 * a minimum hold time is asked for, and the default still writes every token.
 */
class ServerClockFencingTests {

	private static HikariDataSource pool;

	@BeforeAll
	static void pool() {
		pool = TestDatabase.get().newDataSource(24);
		LockNodes.migrateOnce(pool);
	}

	@AfterAll
	static void close() {
		pool.close();
	}

	private static PessimisticLockProvider provider(PessimisticLockProvider.Fencing fencing) {
		PessimisticLockProvider provider = (PessimisticLockProvider) LockNodes.provider(LockMode.PESSIMISTIC, pool);
		provider.setFencing(fencing);
		return provider;
	}

	private static long storedToken(String resource) {
		return new JdbcTemplate(pool).queryForObject(
				"SELECT fencing_token FROM distributed_lock WHERE resource = ?", Long.class, LockRows.bytes(resource));
	}

	private static void setStoredToken(String resource, long token) {
		new JdbcTemplate(pool).update("UPDATE distributed_lock SET fencing_token = ? WHERE resource = ?", token,
				LockRows.bytes(resource));
	}

	@Test
	void theDefaultIsDurableAndWritesEveryToken() {
		PessimisticLockProvider provider = (PessimisticLockProvider) LockNodes.provider(LockMode.PESSIMISTIC, pool);
		assertThat(provider.fencing()).isEqualTo(PessimisticLockProvider.Fencing.DURABLE);
		LockTemplate node = LockNodes.node(provider, "durable");
		String resource = "fencing-durable-" + UUID.randomUUID();
		for (int i = 0; i < 3; i++) {
			long token;
			try (LockHandle lock = node.acquire(resource)) {
				token = lock.fencingToken();
			}
			assertThat(storedToken(resource)).isEqualTo(token);
		}
	}

	@Test
	void severalNodesOnAHotRowGetStrictlyIncreasingTokensWithoutWritingThem() throws Exception {
		String resource = "fencing-clock-hot-" + UUID.randomUUID();
		int nodes = 4;
		int threads = 3;
		int iterations = 40;
		List<LockTemplate> templates = new ArrayList<>();
		for (int n = 0; n < nodes; n++) {
			templates.add(LockNodes.node(provider(PessimisticLockProvider.Fencing.SERVER_CLOCK), "clock-" + n));
		}
		templates.get(0).acquire(resource).close(); // creates the row
		long stored = storedToken(resource);
		// appended while the lock is held, so the list is in the order the holders held the lock
		List<Long> tokens = new ArrayList<>();
		AtomicInteger inside = new AtomicInteger();
		AtomicInteger overlaps = new AtomicInteger();
		ExecutorService executor = Executors.newFixedThreadPool(nodes * threads);
		try {
			List<Future<?>> futures = new ArrayList<>();
			for (LockTemplate template : templates) {
				for (int t = 0; t < threads; t++) {
					futures.add(executor.submit(() -> {
						for (int i = 0; i < iterations; i++) {
							template.executeWithoutResult(resource,
									LockOptions.defaults().withWaitTime(Duration.ofMinutes(1)), (lock) -> {
										if (inside.incrementAndGet() != 1) {
											overlaps.incrementAndGet();
										}
										synchronized (tokens) {
											tokens.add(lock.fencingToken());
										}
										inside.decrementAndGet();
									});
						}
						return null;
					}));
				}
			}
			for (Future<?> future : futures) {
				future.get();
			}
		}
		finally {
			executor.shutdownNow();
		}
		assertThat(overlaps).hasValue(0);
		assertThat(tokens).hasSize(nodes * threads * iterations);
		assertThat(tokens.get(0)).isGreaterThan(stored);
		for (int i = 1; i < tokens.size(); i++) {
			assertThat(tokens.get(i)).as("token #%d in holding order", i).isGreaterThan(tokens.get(i - 1));
		}
		assertThat(storedToken(resource)).as("no acquisition wrote its token").isEqualTo(stored);
	}

	@Test
	void aStoredTokenAheadOfTheClockIsAdvancedAndWritten() {
		LockTemplate node = LockNodes.node(provider(PessimisticLockProvider.Fencing.SERVER_CLOCK), "ahead");
		String resource = "fencing-clock-ahead-" + UUID.randomUUID();
		node.acquire(resource).close();
		long ahead = storedToken(resource) + 3_600_000_000L; // an hour ahead of the server clock
		setStoredToken(resource, ahead);
		try (LockHandle lock = node.acquire(resource)) {
			assertThat(lock.fencingToken()).isEqualTo(ahead + 1);
		}
		assertThat(storedToken(resource)).isEqualTo(ahead + 1);
		// the same inside a caller's transaction
		new TransactionTemplate(new DataSourceTransactionManager(pool)).executeWithoutResult((status) -> {
			try (LockHandle lock = node.acquire(resource)) {
				assertThat(lock.fencingToken()).isEqualTo(ahead + 2);
			}
		});
		assertThat(storedToken(resource)).isEqualTo(ahead + 2);
	}

	@Test
	void afterALeaseBlockTheClockTokenStillExceedsEveryTokenOfTheBlock() {
		String resource = "fencing-clock-after-lease-" + UUID.randomUUID();
		LockTemplate lease = LockNodes.node(LockMode.LEASE, "lease", pool);
		long leaseToken;
		try (LockHandle lock = lease.acquire(resource)) {
			leaseToken = lock.fencingToken();
		}
		long blockEnd = storedToken(resource);
		assertThat(blockEnd).isGreaterThanOrEqualTo(leaseToken);
		LockTemplate node = LockNodes.node(provider(PessimisticLockProvider.Fencing.SERVER_CLOCK), "after-lease");
		try (LockHandle lock = node.acquire(resource)) {
			assertThat(lock.fencingToken()).isGreaterThan(blockEnd);
		}
	}

	@Test
	void aMinimumHoldTimeUsesTheDurableWrite() {
		LockTemplate node = LockNodes.node(provider(PessimisticLockProvider.Fencing.SERVER_CLOCK), "min-hold");
		String resource = "fencing-clock-min-hold-" + UUID.randomUUID();
		node.acquire(resource).close();
		long before = storedToken(resource);
		long token;
		try (LockHandle lock = node.acquire(resource, LockOptions.defaults().withMinHoldTime(Duration.ofMillis(1)))) {
			token = lock.fencingToken();
		}
		assertThat(token).isGreaterThan(before);
		assertThat(storedToken(resource)).isEqualTo(token);
	}

	@Test
	void aServerClockHolderExcludesALeaseTakerAndIsNotTakenWhileALeaseRuns() {
		String resource = "fencing-clock-vs-lease-" + UUID.randomUUID();
		LockTemplate lease = LockNodes.node(LockMode.LEASE, "lease", pool);
		LockTemplate node = LockNodes.node(provider(PessimisticLockProvider.Fencing.SERVER_CLOCK), "clock");
		try (LockHandle held = lease.acquire(resource)) {
			assertThat(node.tryAcquire(resource)).isEmpty();
		}
		try (LockHandle held = node.acquire(resource)) {
			assertThat(lease.tryAcquire(resource)).isEmpty();
		}
	}

}
