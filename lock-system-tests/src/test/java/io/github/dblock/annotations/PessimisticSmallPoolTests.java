package io.github.dblock.annotations;

import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import io.github.dblock.DistributedLock;
import io.github.dblock.LockMode;
import io.github.dblock.LockNotAcquiredException;
import io.github.dblock.autoconfigure.DistributedLockAutoConfiguration;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.JdbcTemplateAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Transactional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * PESSIMISTIC through {@code @DistributedLock} + {@code @Transactional} on a pool of 2 connections, as a new user would
 * run it (issue 29, item 7): many concurrent calls of one stock item, the first of them on a resource this JVM has
 * never seen. Local callers queue in the JVM before they take a connection, so the small pool serves them in turn:
 * every call either runs or is refused with {@link LockNotAcquiredException} within its bound, and the stock is never
 * oversold. A pool exhausted by others makes the call fail naming the lock, its mode and the cause.
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class PessimisticSmallPoolTests {

	/** The documented bound of a PESSIMISTIC acquisition: the wait rounded up to seconds + statement timeout + 2 s. */
	private static final Duration STATEMENT_TIMEOUT = Duration.ofSeconds(2);

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
				DataSourceTransactionManagerAutoConfiguration.class, TransactionAutoConfiguration.class,
				JdbcTemplateAutoConfiguration.class, AopAutoConfiguration.class, DistributedLockAutoConfiguration.class))
		.withPropertyValues(TestDatabase.get().springProperties())
		.withPropertyValues("distributed-lock.mode=pessimistic", "spring.datasource.hikari.maximum-pool-size=2",
				"spring.datasource.hikari.connection-timeout=10000",
				"distributed-lock.statement-timeout=" + STATEMENT_TIMEOUT.toSeconds() + "s")
		.withUserConfiguration(ShopConfiguration.class);

	@BeforeAll
	static void tables() {
		TestDatabase.get().execute(
				"CREATE TABLE IF NOT EXISTS lock_test_stock (item VARCHAR(64) PRIMARY KEY, quantity INT NOT NULL)",
				"CREATE TABLE IF NOT EXISTS lock_test_sale (id BIGINT AUTO_INCREMENT PRIMARY KEY, item VARCHAR(64) NOT NULL)");
	}

	@Test
	void aHundredAndTwentyConcurrentCallsOnAPoolOfTwoAreServedInTurnAndNeverOversell() {
		this.runner.run((context) -> {
			Shop shop = context.getBean(Shop.class);
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			String item = stock(jdbc, 50);
			Outcomes outcomes = callConcurrently(120, () -> shop.buy(item));
			assertThat(outcomes.failures).as("calls that neither ran nor were refused").isEmpty();
			assertThat(outcomes.count("refused")).as("a generous wait time: every call is served in turn").isZero();
			assertThat(outcomes.count("sold")).isEqualTo(50);
			assertThat(outcomes.count("sold") + outcomes.count("sold out")).isEqualTo(120);
			assertSoldExactly(jdbc, item, 50, outcomes.count("sold"));
			assertThat(outcomes.slowest).as("every call within its wait time (60 s)").isLessThan(Duration.ofSeconds(60));
		});
	}

	@Test
	void callsWithAShortWaitTimeAreRefusedWithinTheirBoundAndTheOthersRun() {
		this.runner.run((context) -> {
			Shop shop = context.getBean(Shop.class);
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			String item = stock(jdbc, 1_000);
			Outcomes outcomes = callConcurrently(100, () -> shop.buySlowly(item));
			assertThat(outcomes.failures).as("calls that neither ran nor were refused").isEmpty();
			assertThat(outcomes.count("sold") + outcomes.count("refused")).isEqualTo(100);
			assertThat(outcomes.count("sold")).as("the pool served some").isPositive();
			assertThat(outcomes.count("refused")).as("40 ms each, 300 ms wait: most are refused").isPositive();
			assertSoldExactly(jdbc, item, 1_000, outcomes.count("sold"));
			// the wait (300 ms) rounded up to whole seconds, plus the statement timeout, plus 2 s
			assertThat(outcomes.slowest).as("every call within the documented bound")
				.isLessThan(Duration.ofSeconds(1).plus(STATEMENT_TIMEOUT).plusSeconds(2));
		});
	}

	@Test
	void aPoolExhaustedByOthersFailsTheCallNamingTheLockItsModeAndTheCause() {
		this.runner.withPropertyValues("spring.datasource.hikari.connection-timeout=1000").run((context) -> {
			Shop shop = context.getBean(Shop.class);
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			String item = stock(jdbc, 1);
			DataSource pool = context.getBean(DataSource.class);
			try (Connection first = pool.getConnection(); Connection second = pool.getConnection()) {
				long start = System.nanoTime();
				assertThatExceptionOfType(LockNotAcquiredException.class).isThrownBy(() -> shop.buyQuickly(item))
					.satisfies((ex) -> {
						assertThat(ex.getResource()).isEqualTo("stock:" + item);
						assertThat(ex.getMessage()).contains("'stock:" + item + "'", "PESSIMISTIC", "pool",
								"Connection is not available");
						assertThat(NestedExceptionUtils.getMostSpecificCause(ex))
							.isInstanceOf(java.sql.SQLTransientConnectionException.class);
					});
				assertThat(Duration.ofNanos(System.nanoTime() - start)).as("the pool's connection timeout, not more")
					.isLessThan(Duration.ofSeconds(5));
			}
			assertThat(shop.buyQuickly(item)).as("served once the pool has connections again").isEqualTo("sold");
		});
	}

	private static String stock(JdbcTemplate jdbc, int quantity) {
		String item = UUID.randomUUID().toString();
		jdbc.update("INSERT INTO lock_test_stock (item, quantity) VALUES (?, ?)", item, quantity);
		return item;
	}

	private static void assertSoldExactly(JdbcTemplate jdbc, String item, int initial, int sold) {
		Integer left = jdbc.queryForObject("SELECT quantity FROM lock_test_stock WHERE item = ?", Integer.class, item);
		Integer sales = jdbc.queryForObject("SELECT COUNT(*) FROM lock_test_sale WHERE item = ?", Integer.class, item);
		assertThat(left).as("never oversold").isNotNegative().isEqualTo(initial - sold);
		assertThat(sales).as("one sale per unit sold").isEqualTo(sold);
	}

	/** Runs the calls at once, each on a thread of its own, and sorts their outcomes. */
	private static Outcomes callConcurrently(int calls, java.util.concurrent.Callable<String> call) throws Exception {
		Outcomes outcomes = new Outcomes();
		ExecutorService executor = Executors.newFixedThreadPool(calls);
		CountDownLatch start = new CountDownLatch(1);
		List<Future<?>> futures = new ArrayList<>();
		try {
			for (int i = 0; i < calls; i++) {
				futures.add(executor.submit(() -> {
					start.await();
					long began = System.nanoTime();
					String outcome;
					try {
						outcome = call.call();
					}
					catch (LockNotAcquiredException ex) {
						outcome = "refused";
					}
					catch (Exception ex) {
						outcomes.failures.add(ex.toString());
						outcome = "failed";
					}
					outcomes.record(outcome, Duration.ofNanos(System.nanoTime() - began));
					return null;
				}));
			}
			start.countDown();
			for (Future<?> future : futures) {
				future.get(120, TimeUnit.SECONDS);
			}
		}
		finally {
			executor.shutdownNow();
		}
		return outcomes;
	}

	private static final class Outcomes {

		final List<String> failures = java.util.Collections.synchronizedList(new ArrayList<>());

		final Map<String, AtomicInteger> counts = new ConcurrentHashMap<>();

		volatile Duration slowest = Duration.ZERO;

		synchronized void record(String outcome, Duration took) {
			this.counts.computeIfAbsent(outcome, (key) -> new AtomicInteger()).incrementAndGet();
			if (took.compareTo(this.slowest) > 0) {
				this.slowest = took;
			}
		}

		int count(String outcome) {
			AtomicInteger count = this.counts.get(outcome);
			return (count != null) ? count.get() : 0;
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class ShopConfiguration {

		@Bean
		Shop shop(JdbcTemplate jdbc) {
			return new Shop(jdbc);
		}

	}

	/** A stock endpoint as a new user writes it: read the stock, sell one if there is any. */
	public static class Shop {

		private final JdbcTemplate jdbc;

		Shop(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@DistributedLock(resource = "stock:#{#item}", waitTime = "60s")
		@Transactional
		public String buy(String item) {
			return sell(item, 0);
		}

		@DistributedLock(resource = "stock:#{#item}", waitTime = "300ms")
		@Transactional
		public String buySlowly(String item) {
			return sell(item, 40);
		}

		@DistributedLock(resource = "stock:#{#item}", waitTime = "500ms")
		@Transactional
		public String buyQuickly(String item) {
			return sell(item, 0);
		}

		private String sell(String item, long workMillis) {
			Integer left = this.jdbc.queryForObject("SELECT quantity FROM lock_test_stock WHERE item = ?", Integer.class,
					item);
			if (left == null || left <= 0) {
				return "sold out";
			}
			if (workMillis > 0) {
				try {
					Thread.sleep(workMillis);
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
					throw new IllegalStateException(ex);
				}
			}
			this.jdbc.update("UPDATE lock_test_stock SET quantity = ? WHERE item = ?", left - 1, item);
			this.jdbc.update("INSERT INTO lock_test_sale (item) VALUES (?)", item);
			return "sold";
		}

	}

}
