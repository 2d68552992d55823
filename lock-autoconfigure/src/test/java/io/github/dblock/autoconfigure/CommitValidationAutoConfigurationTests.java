package io.github.dblock.autoconfigure;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.CommitValidation;
import io.github.dblock.DistributedLock;
import io.github.dblock.LockHandle;
import io.github.dblock.LockLostException;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.jdbc.sql.DatabaseServer;
import io.github.dblock.jdbc.admin.DatabaseTopology;
import io.github.dblock.jdbc.lease.LeaseLockProvider;
import io.github.dblock.jdbc.sql.LockTable;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
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
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.support.JdbcTransactionManager;
import org.springframework.transaction.annotation.Transactional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * Commit-time validation in a Spring Boot context: the property, the listener on the application's transaction
 * manager, the write variant on a multi-primary cluster, and {@code @DistributedLock} on a {@code @Transactional}
 * method whose lease ends before its commit.
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class CommitValidationAutoConfigurationTests {

	private static HikariDataSource otherNodePool;

	private static LockTemplate otherNode;

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
				DataSourceTransactionManagerAutoConfiguration.class, TransactionAutoConfiguration.class,
				JdbcTemplateAutoConfiguration.class, AopAutoConfiguration.class, DistributedLockAutoConfiguration.class))
		.withPropertyValues(TestDatabase.get().springProperties())
		.withPropertyValues("distributed-lock.node-name=app", "distributed-lock.cleanup.enabled=false");

	@BeforeAll
	static void otherNode() {
		otherNodePool = TestDatabase.get().newDataSource(4);
		LockNodes.migrateOnce(otherNodePool);
		otherNode = LockNodes.node(LockMode.LEASE, "other-node", otherNodePool);
		TestDatabase.get().execute("CREATE TABLE IF NOT EXISTS commit_check_write (id BIGINT AUTO_INCREMENT PRIMARY KEY,"
				+ " resource VARCHAR(100) NOT NULL, writer VARCHAR(32) NOT NULL)");
	}

	@AfterAll
	static void closePool() {
		otherNodePool.close();
	}

	@Test
	void onByDefaultOnTheApplicationsTransactionManager() {
		this.runner.run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(LockTemplate.class).isValidateAtCommit()).isTrue();
			JdbcTransactionManager manager = context.getBean(JdbcTransactionManager.class);
			assertThat(manager.getTransactionExecutionListeners()).filteredOn(CommitValidation.class::isInstance)
				.hasSize(1);
			assertThat(context.getBean(LeaseLockProvider.class).isMultiPrimary()).isFalse();
		});
	}

	@Test
	void theLockedTransactionalMethodWhoseLeaseEndedRollsBackAtCommit() throws Exception {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			Ledger ledger = context.getBean(Ledger.class);
			String id = UUID.randomUUID().toString();
			ExecutorService caller = Executors.newSingleThreadExecutor();
			try {
				Future<?> call = caller.submit(() -> ledger.post(id));
				assertThat(ledger.written().await(10, TimeUnit.SECONDS)).isTrue();
				try (LockHandle taken = otherNode.acquire("ledger:" + id, LockOptions.defaults()
					.withLeaseTime(Duration.ofSeconds(10)).withWaitTime(Duration.ofSeconds(5)))) {
					new JdbcTemplate(otherNodePool).update(
							"INSERT INTO commit_check_write (resource, writer) VALUES (?, 'other-node')", id);
				}
				ledger.resume().countDown();
				assertThatExceptionOfType(java.util.concurrent.ExecutionException.class)
					.isThrownBy(() -> call.get(30, TimeUnit.SECONDS))
					.withCauseInstanceOf(LockLostException.class);
			}
			finally {
				caller.shutdownNow();
			}
			assertThat(writers(id)).containsExactly("other-node");
			// and a call that commits in time commits
			String next = UUID.randomUUID().toString();
			ledger.resume().countDown();
			ledger.post(next);
			assertThat(writers(next)).containsExactly("app");
		});
	}

	@Test
	void offLeavesTransactionsUnchecked() {
		this.runner.withPropertyValues("distributed-lock.validate-at-commit=false").run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(LockTemplate.class).isValidateAtCommit()).isFalse();
			assertThat(context).doesNotHaveBean(CommitValidation.class);
			assertThat(context.getBean(JdbcTransactionManager.class).getTransactionExecutionListeners())
				.noneMatch(CommitValidation.class::isInstance);
		});
	}

	@Test
	void onAMultiPrimaryClusterTheCheckWritesTheLockRow() {
		this.runner.withBean(LockSchemaInitializer.class, CommitValidationAutoConfigurationTests::galeraInitializer)
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context.getBean(LeaseLockProvider.class).isMultiPrimary()).isTrue();
			});
	}

	@Test
	void startUpSaysWhenTheLockTableIsOnASeparateDataSource() {
		ch.qos.logback.classic.Logger log = (ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory
			.getLogger(LockJdbcConfiguration.class);
		ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> appender =
				new ch.qos.logback.core.read.ListAppender<>();
		appender.start();
		ch.qos.logback.classic.Level level = log.getLevel();
		log.setLevel(ch.qos.logback.classic.Level.DEBUG);
		log.addAppender(appender);
		try {
			new ApplicationContextRunner()
				.withConfiguration(AutoConfigurations.of(TransactionAutoConfiguration.class,
						DistributedLockAutoConfiguration.class))
				.withUserConfiguration(TwoPools.class)
				.withPropertyValues("distributed-lock.cleanup.enabled=false",
						"distributed-lock.pessimistic.max-connections=1")
				.run((context) -> assertThat(context).hasNotFailed());
			this.runner.run((context) -> assertThat(context).hasNotFailed());
		}
		finally {
			log.detachAppender(appender);
			log.setLevel(level);
		}
		List<String> messages = appender.list.stream().map(ch.qos.logback.classic.spi.ILoggingEvent::getFormattedMessage)
			.filter((message) -> message.startsWith("Commit-time validation"))
			.toList();
		assertThat(messages).hasSize(2);
		assertThat(messages.get(0)).contains("cannot apply to transactions on the application's data source")
			.contains("the lock table is on a separate data source");
		assertThat(messages.get(1)).contains("applies to transactions on the lock data source");
	}

	@Configuration(proxyBeanMethods = false)
	static class TwoPools {

		@Bean(destroyMethod = "close")
		@org.springframework.context.annotation.Primary
		HikariDataSource applicationPool() {
			return TestDatabase.get().newDataSource(2);
		}

		@Bean(destroyMethod = "close")
		@LockDataSource
		HikariDataSource lockPool() {
			return TestDatabase.get().newDataSource(2);
		}

	}

	private static List<String> writers(String id) {
		return new JdbcTemplate(otherNodePool).queryForList(
				"SELECT writer FROM commit_check_write WHERE resource = ? ORDER BY id", String.class, id);
	}

	/** An initializer that finds the real test database (its lock table exists) but is told it is a Galera node. */
	private static LockSchemaInitializer galeraInitializer() {
		LockSchemaInitializer initializer = new LockSchemaInitializer(otherNodePool, LockTable.of("distributed_lock"),
				true) {

			@Override
			protected DatabaseTopology detectTopology(DataSource ds, DatabaseServer server) {
				DatabaseTopology real = DatabaseTopology.detect(ds, server);
				Map<String, String> variables = new java.util.HashMap<>(real.variables());
				variables.put("wsrep_on", "ON");
				return DatabaseTopology.of(variables, false, null, List.of());
			}

		};
		initializer.setEnforceTopology(true);
		return initializer;
	}

	@Configuration(proxyBeanMethods = false)
	static class Services {

		@Bean
		Ledger ledger(JdbcTemplate jdbc) {
			return new Ledger(jdbc);
		}

	}

	public static class Ledger {

		final JdbcTemplate jdbc;

		final CountDownLatch written = new CountDownLatch(1);

		final CountDownLatch resume = new CountDownLatch(1);

		Ledger(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		public CountDownLatch written() {
			return this.written;
		}

		public CountDownLatch resume() {
			return this.resume;
		}

		/** Writes, then waits (past its 300 ms lease the first time) before its transaction commits. */
		@DistributedLock(resource = "ledger:#{#id}", leaseTime = "300ms")
		@Transactional
		public void post(String id) {
			this.jdbc.update("INSERT INTO commit_check_write (resource, writer) VALUES (?, 'app')", id);
			this.written.countDown();
			try {
				assertThat(this.resume.await(30, TimeUnit.SECONDS)).isTrue();
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		}

	}

}
