package io.github.dblock.autoconfigure;

import java.beans.PropertyDescriptor;
import java.io.InputStream;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.DistributedLock;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockTemplate;
import io.github.dblock.interceptor.DistributedLockAdvisor;
import io.github.dblock.interceptor.LockAttributeSource;
import io.github.dblock.jdbc.lease.LeaseLockProvider;
import io.github.dblock.jdbc.sql.LockTable;
import io.github.dblock.test.Reliability;
import io.github.dblock.test.TestDatabase;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.aop.support.AopUtils;
import org.springframework.beans.BeanUtils;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Primary;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.jdbc.datasource.DelegatingDataSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Tests for {@link DistributedLockAutoConfiguration}, against the real test database ({@link TestDatabase}).
 * Each test that creates a lock table uses its own table name and drops it afterwards.
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class DistributedLockAutoConfigurationTests extends LockTablesTestSupport {

	private static final String MISSING_COLUMNS = "[acquired_at, expires_at, fencing_token, holder, owner_token, waiting_owner, waiting_until]";

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DistributedLockAutoConfiguration.class));

	DistributedLockAutoConfigurationTests() {
		super("lock_t_");
	}

	// ---------------------------------------------------------------- defaults

	@Test
	void defaultsConfigureTheLockBeansAndMigrateTheDefaultTableWithTheLibrarysOwnFlyway() {
		withDataSourceFromProperties().run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context).hasSingleBean(LockTemplate.class);
			assertThat(context).hasSingleBean(LeaseLockProvider.class);
			assertThat(context).hasSingleBean(LockSchemaInitializer.class);
			assertThat(context).hasSingleBean(DistributedLockAdvisor.class);
			assertThat(context).hasSingleBean(DistributedLockProperties.class);
			assertThat(context).hasSingleBean(io.github.dblock.semaphore.SemaphoreTemplate.class);
			assertThat(context).hasSingleBean(io.github.dblock.interceptor.DistributedSemaphoreAdvisor.class);
			LockSchemaInitializer initializer = context.getBean(LockSchemaInitializer.class);
			assertThat(initializer.getTable().name()).isEqualTo("distributed_lock");
			assertThat(initializer.getServer()).isNotNull();
			assertThat(tableExists("distributed_lock")).isTrue();
			assertThat(tableExists("distributed_lock_sem")).isTrue();
			assertThat(tableExists("distributed_lock_sem_hold")).isTrue();
			assertThat(appliedMigrations("distributed_lock")).contains("1", "3");
		});
	}

	@Test
	void aLockCanBeAcquiredAndReleasedThroughTheAutoConfiguredLockTemplate() {
		String table = newTableName();
		withDataSourceFromProperties().withPropertyValues("distributed-lock.table-name=" + table).run((context) -> {
			assertThat(context).hasNotFailed();
			LockTemplate locks = context.getBean(LockTemplate.class);
			String resource = "autoconfig-" + UUID.randomUUID();
			try (LockHandle lock = locks.acquire(resource)) {
				assertThat(lock.isHeld()).isTrue();
				assertThat(lock.mode()).isEqualTo(LockMode.LEASE);
				assertThat(leaseSeconds(table, resource)).as("configured default lease").isEqualTo(30);
				assertThat(lock.fencingToken()).isPositive();
				assertThat(ownerToken(table, resource)).as("owner while held").isNotNull();
				assertThat(tryAcquireOnAnotherThread(locks, resource)).as("another thread while held").isFalse();
			}
			assertThat(ownerToken(table, resource)).as("owner after release").isNull();
			assertThat(tryAcquireOnAnotherThread(locks, resource)).as("another thread after release").isTrue();
		});
	}

	@Test
	void twoApplicationsOnTheSameTableExcludeEachOtherThroughTheDatabase() {
		String table = newTableName();
		String resource = "autoconfig-" + UUID.randomUUID();
		ApplicationContextRunner application = withDataSourceFromProperties()
			.withPropertyValues("distributed-lock.table-name=" + table, "distributed-lock.wait-time=0");
		application.withPropertyValues("distributed-lock.node-name=node-a").run((nodeA) -> {
			assertThat(nodeA).hasNotFailed();
			try (LockHandle lock = nodeA.getBean(LockTemplate.class).acquire(resource)) {
				application.withPropertyValues("distributed-lock.node-name=node-b").run((nodeB) -> {
					assertThat(nodeB).hasNotFailed();
					assertThat(nodeB.getBean(LockTemplate.class).tryAcquire(resource))
						.as("node-b while node-a holds the lock").isEmpty();
				});
				assertThat(holder(table, resource)).contains("node-a");
			}
			application.withPropertyValues("distributed-lock.node-name=node-b").run((nodeB) -> {
				Optional<LockHandle> lock = nodeB.getBean(LockTemplate.class).tryAcquire(resource);
				assertThat(lock).as("node-b after node-a released the lock").isPresent();
				lock.get().close();
			});
		});
	}

	@Test
	void doesNotRegisterAnyFlywayBeanSoThatSpringBootsFlywayAutoConfigurationIsUnaffected() {
		String table = newTableName();
		withDataSourceFromProperties().withPropertyValues("distributed-lock.table-name=" + table).run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(tableExists(table)).as("the library migrated its table").isTrue();
			assertThat(context).doesNotHaveBean(Flyway.class);
			List<String> flywayBeans = new ArrayList<>();
			for (String name : context.getBeanDefinitionNames()) {
				Class<?> type = context.getType(name);
				if (type != null && type.getName().startsWith("org.flywaydb.")) {
					flywayBeans.add(name + " (" + type.getName() + ")");
				}
			}
			assertThat(flywayBeans).isEmpty();
		});
	}

	@Test
	void theLibrarysMigrationsLeaveAUserFlywayBeanAlone() {
		String table = newTableName();
		Flyway userFlyway = Flyway.configure().dataSource(adminPool).load();
		withDataSourceFromProperties().withPropertyValues("distributed-lock.table-name=" + table)
			.withBean(Flyway.class, () -> userFlyway)
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context).getBean(Flyway.class).isSameAs(userFlyway);
				assertThat(tableExists(table)).isTrue();
				assertThat(tableExists(table + "_schema_history")).isTrue();
			});
	}

	// ---------------------------------------------------------------- back-off

	@Test
	void backsOffFromAUserDefinedLockTemplate() {
		String table = newTableName();
		withDataSourceFromProperties().withPropertyValues("distributed-lock.table-name=" + table)
			.withBean("userLockTemplate", LockTemplate.class,
					() -> new LockTemplate(
							List.of(new LeaseLockProvider(adminPool, LockTable.of(table), Duration.ofSeconds(5),
									Duration.ofMillis(10), Duration.ofMillis(100))),
							LockMode.LEASE, Duration.ZERO, Duration.ofSeconds(7), "user-node"))
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context).hasSingleBean(LockTemplate.class);
				assertThat(context).hasBean("userLockTemplate");
				assertThat(context).doesNotHaveBean("lockTemplate");
				LockTemplate locks = context.getBean(LockTemplate.class);
				String resource = "autoconfig-" + UUID.randomUUID();
				try (LockHandle lock = locks.acquire(resource)) {
					assertThat(leaseSeconds(table, resource)).as("the user's template's lease time").isEqualTo(7);
				}
			});
	}

	@Test
	void configuresNothingWhenDisabled() {
		String table = newTableName();
		withDataSourceFromProperties()
			.withPropertyValues("distributed-lock.enabled=false", "distributed-lock.table-name=" + table)
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context).hasSingleBean(DataSource.class);
				assertNoLockBeans(context);
				assertThat(tableExists(table)).isFalse();
			});
	}

	@Test
	void configuresNothingWithoutADataSource() {
		this.runner.run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context).doesNotHaveBean(DataSource.class);
			assertNoLockBeans(context);
		});
	}

	// ---------------------------------------------------------------- table name

	@Test
	void aCustomTableNameIsCreatedWithItsOwnSchemaHistory() {
		String table = newTableName();
		assertThat(tableExists(table)).isFalse();
		withDataSourceFromProperties().withPropertyValues("distributed-lock.table-name=" + table).run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(LockSchemaInitializer.class).getTable().name()).isEqualTo(table);
			assertThat(tableExists(table)).isTrue();
			assertThat(tableExists(table + "_schema_history")).isTrue();
			assertThat(appliedMigrations(table)).contains("1");
			assertThat(columns(table)).contains("resource", "owner_token", "holder", "fencing_token", "acquired_at",
					"expires_at");
			String resource = "autoconfig-" + UUID.randomUUID();
			try (LockHandle lock = context.getBean(LockTemplate.class).acquire(resource)) {
				assertThat(ownerToken(table, resource)).as("the lock row is in the configured table").isNotNull();
			}
		});
	}

	@Test
	void acceptsATableNameOfExactly48Characters() {
		String table = newTableName();
		String longest = table + "_".repeat(LockTable.MAX_LENGTH - table.length());
		dropAfterTest(longest);
		assertThat(longest).hasSize(48);
		withDataSourceFromProperties().withPropertyValues("distributed-lock.table-name=" + longest).run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(tableExists(longest)).isTrue();
			assertThat(tableExists(longest + "_schema_history")).isTrue();
		});
	}

	// ---------------------------------------------------------------- property validation

	@Test
	void rejectsATableNameThatIsNotAPlainIdentifierBeforeRunningAnySql() {
		String canary = newTableName();
		admin.execute("CREATE TABLE `" + canary + "` (id INT PRIMARY KEY)");
		assertStartupFailsNaming("distributed-lock.table-name", "distributed-lock.table-name=locks; DROP TABLE " + canary);
		assertThat(tableExists(canary)).as("the injected DROP did not run").isTrue();
	}

	@Test
	void rejectsATableNameLongerThan48Characters() {
		assertStartupFailsNaming("distributed-lock.table-name", "distributed-lock.table-name=" + "l".repeat(49));
	}

	@Test
	void rejectsATableNameStartingWithADigit() {
		assertStartupFailsNaming("distributed-lock.table-name", "distributed-lock.table-name=1locks");
	}

	@Test
	void rejectsANegativeWaitTime() {
		assertStartupFailsNaming("distributed-lock.wait-time", "distributed-lock.wait-time=-1s");
	}

	@Test
	void rejectsAZeroLeaseTime() {
		assertStartupFailsNaming("distributed-lock.lease-time", "distributed-lock.lease-time=0s");
	}

	@Test
	void rejectsAStatementTimeoutBelowOneSecond() {
		assertStartupFailsNaming("distributed-lock.statement-timeout", "distributed-lock.statement-timeout=999ms");
	}

	@Test
	void rejectsAMaxBackoffBelowTheInitialBackoff() {
		assertStartupFailsNaming("distributed-lock.retry.max-backoff", "distributed-lock.retry.initial-backoff=100ms",
				"distributed-lock.retry.max-backoff=50ms");
	}

	@Test
	void rejectsABlankNodeName() {
		assertStartupFailsNaming("distributed-lock.node-name", "distributed-lock.node-name=   ");
	}

	@Test
	void acceptsTheBoundaryValuesZeroWaitTimeAndOneSecondStatementTimeout() {
		String table = newTableName();
		withDataSourceFromProperties()
			.withPropertyValues("distributed-lock.table-name=" + table, "distributed-lock.wait-time=0",
					"distributed-lock.statement-timeout=1s", "distributed-lock.retry.initial-backoff=50ms",
					"distributed-lock.retry.max-backoff=50ms", "distributed-lock.node-name=node-1")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				DistributedLockProperties properties = context.getBean(DistributedLockProperties.class);
				assertThat(properties.getWaitTime()).isZero();
				assertThat(properties.getStatementTimeout()).isEqualTo(Duration.ofSeconds(1));
				assertThat(properties.getNodeName()).isEqualTo("node-1");
			});
	}

	// ---------------------------------------------------------------- flyway off

	@Test
	void withFlywayDisabledConfiguredSemaphoresWithoutTheirTablesStopStartUpNamingTheScript() {
		String table = newTableName();
		withDataSourceFromProperties().withPropertyValues("distributed-lock.table-name=" + table)
			.run((context) -> assertThat(context).hasNotFailed());
		admin.execute("DROP TABLE `" + table + "_schema_history`, `" + table + "_sem`, `" + table + "_sem_hold`");
		withDataSourceFromProperties()
			.withPropertyValues("distributed-lock.table-name=" + table, "distributed-lock.flyway.enabled=false")
			.run((context) -> assertThat(context).as("no semaphore configured: the tables are not needed").hasNotFailed());
		withDataSourceFromProperties()
			.withPropertyValues("distributed-lock.table-name=" + table, "distributed-lock.flyway.enabled=false",
					"distributed-lock.semaphores.reports.permits=2")
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(context.getStartupFailure()).rootCause().hasMessageContaining("doesn't exist");
				assertThat(messages(context.getStartupFailure())).contains("`" + table + "_sem`")
					.contains("V3__create_semaphore_tables.sql").contains("distributed-lock.flyway.enabled=true");
			});
	}

	private static String messages(Throwable failure) {
		StringBuilder all = new StringBuilder();
		for (Throwable t = failure; t != null; t = t.getCause()) {
			all.append(t.getMessage()).append('\n');
		}
		return all.toString();
	}

	@Test
	void withFlywayDisabledStartsWhenTheTableExistsAndDoesNotMigrate() {
		String table = newTableName();
		withDataSourceFromProperties().withPropertyValues("distributed-lock.table-name=" + table)
			.run((context) -> assertThat(context).hasNotFailed());
		assertThat(tableExists(table)).isTrue();
		admin.execute("DROP TABLE `" + table + "_schema_history`");
		withDataSourceFromProperties()
			.withPropertyValues("distributed-lock.table-name=" + table, "distributed-lock.flyway.enabled=false")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context).hasSingleBean(LockTemplate.class);
				try (LockHandle lock = context.getBean(LockTemplate.class).acquire("autoconfig-" + UUID.randomUUID())) {
					assertThat(lock.isHeld()).isTrue();
				}
			});
		assertThat(tableExists(table + "_schema_history")).as("Flyway did not run").isFalse();
	}

	@Test
	void withFlywayDisabledFailsNamingTheTableAndThePropertyWhenTheTableIsMissing() {
		String table = newTableName();
		withDataSourceFromProperties()
			.withPropertyValues("distributed-lock.table-name=" + table, "distributed-lock.flyway.enabled=false")
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(rootCauseMessage(context)).contains("'" + table + "'")
					.contains("does not exist")
					.contains("distributed-lock.flyway.enabled");
			});
		assertThat(tableExists(table)).isFalse();
		assertThat(tableExists(table + "_schema_history")).isFalse();
	}

	@Test
	void withFlywayDisabledFailsNamingTheMissingColumnsWhenTheTableIsIncomplete() {
		String table = newTableName();
		admin.execute("CREATE TABLE `" + table + "` (resource VARBINARY(1020) NOT NULL PRIMARY KEY)");
		withDataSourceFromProperties()
			.withPropertyValues("distributed-lock.table-name=" + table, "distributed-lock.flyway.enabled=false")
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(rootCauseMessage(context)).contains("'" + table + "'")
					.contains(MISSING_COLUMNS)
					.contains("distributed-lock.flyway.enabled");
			});
		assertThat(columns(table)).containsExactly("resource");
	}

	// ---------------------------------------------------------------- several data sources

	@Test
	void failsWithSeveralDataSourcesWhenNoneIsPrimaryOrQualified() {
		String table = newTableName();
		this.runner.withUserConfiguration(TwoPlainDataSources.class)
			.withPropertyValues("distributed-lock.table-name=" + table)
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(rootCauseMessage(context)).contains("@LockDataSource");
			});
		assertThat(tableExists(table)).isFalse();
	}

	@Test
	void usesTheLockDataSourceQualifiedOneAmongSeveral() {
		String table = newTableName();
		this.runner.withUserConfiguration(QualifiedAmongPlainDataSources.class)
			.withPropertyValues("distributed-lock.table-name=" + table)
			.run((context) -> assertLocksUse(context, table, "lockPool", "appPool"));
	}

	@Test
	void usesTheLockDataSourceQualifiedOneEvenWhenAnotherIsPrimary() {
		String table = newTableName();
		this.runner.withUserConfiguration(QualifiedBesidePrimaryDataSource.class)
			.withPropertyValues("distributed-lock.table-name=" + table)
			.run((context) -> assertLocksUse(context, table, "lockPool", "appPool"));
	}

	@Test
	void usesThePrimaryDataSourceWhenThereAreSeveralAndNoneIsQualified() {
		String table = newTableName();
		this.runner.withUserConfiguration(PrimaryAmongPlainDataSources.class)
			.withPropertyValues("distributed-lock.table-name=" + table)
			.run((context) -> assertLocksUse(context, table, "appPool", "otherPool"));
	}

	@Test
	void usesTheDataSourceNamedByThePropertyAboveQualifierAndPrimary() {
		String table = newTableName();
		this.runner.withUserConfiguration(QualifiedBesidePrimaryDataSource.class)
			.withPropertyValues("distributed-lock.table-name=" + table, "distributed-lock.datasource=appPool")
			.run((context) -> assertLocksUse(context, table, "appPool", "lockPool"));
	}

	@Test
	void aDataSourcePropertyNamingNoDataSourceBeanStopsStartUpListingTheCandidates() {
		String table = newTableName();
		this.runner.withUserConfiguration(TwoPlainDataSources.class)
			.withPropertyValues("distributed-lock.table-name=" + table, "distributed-lock.datasource=missingPool")
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(rootCauseMessage(context)).contains("distributed-lock.datasource")
					.contains("missingPool")
					.contains("appPool")
					.contains("otherPool");
			});
		assertThat(tableExists(table)).isFalse();
		Reliability.count(Reliability.ALL_MODES, "bad inputs tried", 1);
	}

	// ---------------------------------------------------------------- interceptor

	@Test
	void theAdvisorOrderDefaultsToTheDefaultInterceptorOrder() {
		String table = newTableName();
		withDataSourceFromProperties().withPropertyValues("distributed-lock.table-name=" + table).run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(DistributedLockAdvisor.class).getOrder())
				.isEqualTo(DistributedLockProperties.DEFAULT_INTERCEPTOR_ORDER);
		});
	}

	@Test
	void theAdvisorOrderFollowsTheInterceptorOrderProperty() {
		String table = newTableName();
		withDataSourceFromProperties()
			.withPropertyValues("distributed-lock.table-name=" + table, "distributed-lock.interceptor.order=42")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context.getBean(DistributedLockAdvisor.class).getOrder()).isEqualTo(42);
			});
	}

	@Test
	void beansWithDistributedLockMethodsAreProxiedAndLockInTheConfiguredTable() {
		String table = newTableName();
		withDataSourceFromProperties().withPropertyValues("distributed-lock.table-name=" + table)
			.withBean(LockedService.class, () -> new LockedService(table))
			.run((context) -> {
				assertThat(context).hasNotFailed();
				LockedService service = context.getBean(LockedService.class);
				assertThat(AopUtils.isAopProxy(service)).isTrue();
				assertThat(service.ownerTokenWhileRunning()).as("owner token seen inside the method").isNotNull();
				assertThat(ownerToken(table, LockedService.RESOURCE)).as("owner token after the method").isNull();
			});
	}

	// ---------------------------------------------------------------- configuration metadata

	@Test
	void configurationMetadataDescribesEveryPropertyAndTheWaitTimeDefault() throws Exception {
		JsonNode metadata = lockMetadata();
		Map<String, JsonNode> documented = new TreeMap<>();
		for (JsonNode property : metadata.get("properties")) {
			documented.put(property.get("name").asString(), property);
		}
		Set<String> expected = bindableProperties(DistributedLockProperties.PREFIX, DistributedLockProperties.class);
		assertThat(expected).as("sanity check of the reflective walk")
			.contains("distributed-lock.wait-time", "distributed-lock.retry.max-backoff",
					"distributed-lock.flyway.enabled", "distributed-lock.interceptor.order")
			.hasSizeGreaterThanOrEqualTo(11);
		assertThat(documented.keySet()).containsAll(expected);
		for (String name : expected) {
			JsonNode description = documented.get(name).get("description");
			assertThat(description).as("description of " + name).isNotNull();
			assertThat(description.asString()).as("description of " + name).isNotBlank();
		}
		JsonNode waitTime = documented.get("distributed-lock.wait-time");
		assertThat(waitTime.get("type").asString()).isEqualTo("java.time.Duration");
		assertThat(waitTime.get("defaultValue")).as("default of distributed-lock.wait-time").isNotNull();
		assertThat(waitTime.get("defaultValue").asString()).isEqualTo("5s");
	}

	@Test
	void configurationMetadataDescribesTheHealthIndicatorSwitch() throws Exception {
		JsonNode health = null;
		for (JsonNode property : lockMetadata().get("properties")) {
			if (property.get("name").asString().equals("management.health.distributed-lock.enabled")) {
				health = property;
			}
		}
		assertThat(health).as("management.health.distributed-lock.enabled in the metadata").isNotNull();
		assertThat(health.get("type").asString()).isEqualTo("java.lang.Boolean");
		assertThat(health.get("defaultValue").asBoolean()).isTrue();
		assertThat(health.get("description").asString()).isNotBlank();
	}

	// ---------------------------------------------------------------- helpers

	private ApplicationContextRunner withDataSourceFromProperties() {
		return this.runner.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class))
			.withPropertyValues(TestDatabase.get().springProperties());
	}

	private void assertStartupFailsNaming(String property, String... properties) {
		withDataSourceFromProperties().withPropertyValues(properties).run((context) -> {
			assertThat(context).hasFailed();
			Throwable root = NestedExceptionUtils.getMostSpecificCause(context.getStartupFailure());
			assertThat(root).isInstanceOf(InvalidConfigurationPropertyValueException.class)
				.hasMessageContaining(property);
			assertThat(((InvalidConfigurationPropertyValueException) root).getName()).isEqualTo(property);
		});
		Reliability.count(Reliability.ALL_MODES, "bad inputs tried", 1);
	}

	private static String rootCauseMessage(AssertableApplicationContext context) {
		return NestedExceptionUtils.getMostSpecificCause(context.getStartupFailure()).getMessage();
	}

	private static void assertNoLockBeans(AssertableApplicationContext context) {
		assertThat(context).doesNotHaveBean(LockTemplate.class);
		assertThat(context).doesNotHaveBean(LeaseLockProvider.class);
		assertThat(context).doesNotHaveBean(LockSchemaInitializer.class);
		assertThat(context).doesNotHaveBean(DistributedLockAdvisor.class);
		assertThat(context).doesNotHaveBean(LockAttributeSource.class);
		assertThat(context).doesNotHaveBean(DistributedLockProperties.class);
		assertThat(context).doesNotHaveBean(io.github.dblock.semaphore.SemaphoreTemplate.class);
		assertThat(context).doesNotHaveBean(io.github.dblock.interceptor.DistributedSemaphoreAdvisor.class);
	}

	/** The named pool served the lock table (start-up and a lock round trip); the other one was never used. */
	private static void assertLocksUse(AssertableApplicationContext context, String table, String usedPool,
			String unusedPool) {
		assertThat(context).hasNotFailed();
		CountingDataSource used = context.getBean(usedPool, CountingDataSource.class);
		CountingDataSource unused = context.getBean(unusedPool, CountingDataSource.class);
		int afterStartup = used.connections();
		assertThat(afterStartup).as(usedPool + " connections at start-up").isPositive();
		assertThat(tableExists(table)).isTrue();
		try (LockHandle lock = context.getBean(LockTemplate.class).acquire("autoconfig-" + UUID.randomUUID())) {
			assertThat(lock.isHeld()).isTrue();
		}
		assertThat(used.connections()).as(usedPool + " connections after a lock").isGreaterThan(afterStartup);
		assertThat(unused.connections()).as(unusedPool + " connections").isZero();
	}

	private static List<String> columns(String table) {
		return admin.queryForList("SELECT LOWER(COLUMN_NAME) FROM information_schema.COLUMNS "
				+ "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION", String.class, table);
	}

	/** Versions of the library's successful migrations, from its own history table. */
	private static List<String> appliedMigrations(String table) {
		return admin.queryForList("SELECT version FROM `" + table + "_schema_history` WHERE success = 1 "
				+ "AND script LIKE 'V%' ORDER BY installed_rank", String.class);
	}

	/** The lease the row was written with, in whole seconds of the server's clock. */
	private static long leaseSeconds(String table, String resource) {
		return admin.queryForObject("SELECT TIMESTAMPDIFF(SECOND, acquired_at, expires_at) FROM `" + table
				+ "` WHERE resource = ?", Long.class, (Object) resource.getBytes(java.nio.charset.StandardCharsets.UTF_8));
	}

	private static String ownerToken(String table, String resource) {
		List<String> owners = admin.queryForList("SELECT owner_token FROM `" + table + "` WHERE resource = ?",
				String.class, (Object) resource.getBytes(StandardCharsets.UTF_8));
		assertThat(owners).as("lock row of " + resource).hasSize(1);
		return owners.get(0);
	}

	private static String holder(String table, String resource) {
		return admin.queryForObject("SELECT holder FROM `" + table + "` WHERE resource = ?", String.class,
				(Object) resource.getBytes(StandardCharsets.UTF_8));
	}

	private static boolean tryAcquireOnAnotherThread(LockTemplate locks, String resource) throws Exception {
		return CompletableFuture.supplyAsync(() -> {
			Optional<LockHandle> lock = locks.tryAcquire(resource);
			lock.ifPresent(LockHandle::close);
			return lock.isPresent();
		}).get(30, TimeUnit.SECONDS);
	}

	private static JsonNode lockMetadata() throws Exception {
		List<JsonNode> found = new ArrayList<>();
		Enumeration<URL> resources = DistributedLockAutoConfigurationTests.class.getClassLoader()
			.getResources("META-INF/spring-configuration-metadata.json");
		for (URL url : Collections.list(resources)) {
			try (InputStream in = url.openStream()) {
				JsonNode metadata = JsonMapper.shared().readTree(in);
				for (JsonNode group : metadata.path("groups")) {
					if (DistributedLockProperties.class.getName().equals(group.path("type").asString(""))) {
						found.add(metadata);
						break;
					}
				}
			}
		}
		assertThat(found).as("generated metadata declaring the distributed-lock group").hasSize(1);
		return found.get(0);
	}

	/**
	 * The names Spring Boot binds for a properties class: a property with a setter is a leaf; one without a
	 * setter whose type is nested in the properties class is a group.
	 */
	private static Set<String> bindableProperties(String prefix, Class<?> type) {
		Set<String> names = new TreeSet<>();
		for (PropertyDescriptor descriptor : BeanUtils.getPropertyDescriptors(type)) {
			if (descriptor.getReadMethod() == null || descriptor.getName().equals("class")) {
				continue;
			}
			String name = prefix + "." + kebab(descriptor.getName());
			if (descriptor.getWriteMethod() != null) {
				names.add(name);
			}
			else if (descriptor.getPropertyType().getPackage() == DistributedLockProperties.class.getPackage()) { // a group
				names.addAll(bindableProperties(name, descriptor.getPropertyType()));
			}
		}
		return names;
	}

	private static String kebab(String camel) {
		return camel.replaceAll("([a-z0-9])([A-Z])", "$1-$2").toLowerCase(Locale.ROOT);
	}

	/** Counts the connections taken from a pool; closes the pool with the context. */
	static final class CountingDataSource extends DelegatingDataSource implements AutoCloseable {

		private final AtomicInteger connections = new AtomicInteger();

		private final HikariDataSource pool;

		CountingDataSource(HikariDataSource pool) {
			super(pool);
			this.pool = pool;
		}

		static CountingDataSource newPool() {
			return new CountingDataSource(TestDatabase.get().newDataSource(2));
		}

		int connections() {
			return this.connections.get();
		}

		@Override
		public Connection getConnection() throws SQLException {
			this.connections.incrementAndGet();
			return super.getConnection();
		}

		@Override
		public Connection getConnection(String username, String password) throws SQLException {
			this.connections.incrementAndGet();
			return super.getConnection(username, password);
		}

		@Override
		public void close() {
			this.pool.close();
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class TwoPlainDataSources {

		@Bean
		CountingDataSource appPool() {
			return CountingDataSource.newPool();
		}

		@Bean
		CountingDataSource otherPool() {
			return CountingDataSource.newPool();
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class QualifiedAmongPlainDataSources {

		@Bean
		CountingDataSource appPool() {
			return CountingDataSource.newPool();
		}

		@Bean
		@LockDataSource
		CountingDataSource lockPool() {
			return CountingDataSource.newPool();
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class QualifiedBesidePrimaryDataSource {

		@Bean
		@Primary
		CountingDataSource appPool() {
			return CountingDataSource.newPool();
		}

		@Bean
		@LockDataSource
		CountingDataSource lockPool() {
			return CountingDataSource.newPool();
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class PrimaryAmongPlainDataSources {

		@Bean
		@Primary
		CountingDataSource appPool() {
			return CountingDataSource.newPool();
		}

		@Bean
		CountingDataSource otherPool() {
			return CountingDataSource.newPool();
		}

	}

	/** A bean with a {@code @DistributedLock} method that reports the lock row's owner from inside it. */
	static class LockedService {

		static final String RESOURCE = "autoconfig-annotated";

		private final String table;

		LockedService(String table) {
			this.table = table;
		}

		@DistributedLock(RESOURCE)
		public String ownerTokenWhileRunning() {
			return ownerToken(this.table, RESOURCE);
		}

	}

}
