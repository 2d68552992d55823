package io.github.dblock.jpa;

import java.sql.Connection;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import io.github.dblock.LockMode;
import io.github.dblock.LockNotAcquiredException;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.autoconfigure.DistributedLockAutoConfiguration;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.hibernate.autoconfigure.HibernateJpaAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * A PESSIMISTIC {@code execute} outside a transaction under {@link JpaTransactionManager}: the transaction manager's
 * wait for a pooled connection, when it begins an attempt's transaction, ends within the call's bound (wait time plus
 * statement timeout plus 2 s), not after HikariCP's {@code connectionTimeout} of 30 s. The pool's one connection is
 * taken by the test for the whole call.
 */
class JpaExecuteBoundTests {

	private static final long STATEMENT_TIMEOUT_MILLIS = 2_000;

	/** The reply margin the library adds to the statement timeout. */
	private static final long MARGIN_MILLIS = 2_000;

	/** Room for a loaded machine. */
	private static final long SLACK_MILLIS = 750;

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, HibernateJpaAutoConfiguration.class,
				TransactionAutoConfiguration.class, DistributedLockAutoConfiguration.class))
		.withPropertyValues(TestDatabase.get().springProperties())
		.withPropertyValues("distributed-lock.node-name=jpa-bound", "distributed-lock.cleanup.enabled=false",
				"distributed-lock.statement-timeout=" + STATEMENT_TIMEOUT_MILLIS + "ms",
				"spring.datasource.hikari.maximum-pool-size=1", "spring.datasource.hikari.connection-timeout=30000",
				"spring.jpa.hibernate.ddl-auto=none", "spring.jpa.open-in-view=false",
				"spring.jpa.database-platform=" + (TestDatabase.get().isMariaDb() ? "org.hibernate.dialect.MariaDBDialect"
						: "org.hibernate.dialect.MySQLDialect"));

	private final ExecutorService caller = Executors.newSingleThreadExecutor();

	@AfterEach
	void stopCaller() {
		this.caller.shutdownNow();
	}

	@Test
	void aPessimisticExecuteWaitsForTheJpaTransactionsConnectionWithinItsBound() {
		this.runner.run((context) -> {
			assertThat(context.getBean(PlatformTransactionManager.class)).isInstanceOf(JpaTransactionManager.class);
			DataSource dataSource = context.getBean(DataSource.class);
			LockNodes.migrateOnce(dataSource);
			LockTemplate locks = context.getBean(LockTemplate.class);
			String resource = "jpa-bound-" + UUID.randomUUID();
			LockOptions options = LockOptions.defaults().withMode(LockMode.PESSIMISTIC).withWaitTime(Duration.ZERO);
			assertThat(this.caller.submit(() -> locks.execute(resource, options, (lock) -> "ran")).get(30,
					TimeUnit.SECONDS))
				.as("the pool's connection is free: the lock is taken")
				.isEqualTo("ran");
			long bound = STATEMENT_TIMEOUT_MILLIS + MARGIN_MILLIS;
			try (Connection held = dataSource.getConnection()) {
				long start = System.nanoTime();
				Future<String> call = this.caller.submit(() -> locks.execute(resource, options, (lock) -> "ran"));
				Throwable failure = catchThrowable(() -> call.get(60, TimeUnit.SECONDS));
				long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
				System.out.printf("JpaExecuteBoundTests: PESSIMISTIC execute, wait 0: %d ms (bound %d ms)%n", millis,
						bound);
				assertThat(held.isValid(1)).as("the test's connection was held throughout").isTrue();
				assertThat(failure).as("not acquired: no pooled connection came").isNotNull();
				assertThat(failure.getCause()).isInstanceOf(LockNotAcquiredException.class)
					.hasMessageContaining(resource);
				assertThat(millis).as("within the wait time + statement timeout + 2 s")
					.isLessThanOrEqualTo(bound + SLACK_MILLIS);
			}
			assertThat(this.caller.submit(() -> locks.execute(resource, options, (lock) -> "ran")).get(30,
					TimeUnit.SECONDS))
				.as("the connection is back: the lock is taken again, the thread not left interrupted")
				.isEqualTo("ran");
		});
	}

}
