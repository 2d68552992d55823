package io.github.dblock.autoconfigure;

import java.util.UUID;

import io.github.dblock.LockHandle;
import io.github.dblock.LockTemplate;
import io.github.dblock.actuate.ForceReleasingLocksEndpoint;
import io.github.dblock.actuate.LockTableHealthIndicator;
import io.github.dblock.actuate.LocksEndpoint;
import io.github.dblock.jdbc.admin.LockTableAdmin;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Tests for {@link DistributedLockActuatorAutoConfiguration} on the real test database ({@link TestDatabase}); each
 * test uses its own lock table and drops it afterwards.
 */
class DistributedLockActuatorAutoConfigurationTests extends LockTablesTestSupport {

	/** The packages of spring-boot-actuator and spring-boot-actuator-autoconfigure, hidden as if not on the class path. */
	private static final String ACTUATOR = "org.springframework.boot.actuate.";

	/** The packages of spring-boot-health (Boot 4's health module), hidden as if not on the class path. */
	private static final String HEALTH = "org.springframework.boot.health.";

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
				DistributedLockAutoConfiguration.class, DistributedLockActuatorAutoConfiguration.class,
				DistributedLockHealthContributorAutoConfiguration.class))
		.withPropertyValues(TestDatabase.get().springProperties())
		.withPropertyValues("distributed-lock.cleanup.enabled=false",
				"management.endpoints.web.exposure.include=locks,health");

	DistributedLockActuatorAutoConfigurationTests() {
		super("lock_a_");
	}

	@Test
	void withActuatorTheEndpointWithoutForceReleaseAndTheHealthIndicatorAreRegistered() {
		this.runner.withPropertyValues("distributed-lock.table-name=" + newTableName()).run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context).hasSingleBean(LockTableAdmin.class);
			assertThat(context).hasSingleBean(LocksEndpoint.class);
			assertThat(context).doesNotHaveBean(ForceReleasingLocksEndpoint.class);
			assertThat(context).hasSingleBean(LockTableHealthIndicator.class);
			assertThat(context).hasBean("distributedLockHealthIndicator");
		});
	}

	@Test
	void forceReleaseIsRegisteredOnlyWhenEnabled() {
		this.runner
			.withPropertyValues("distributed-lock.table-name=" + newTableName(),
					"distributed-lock.endpoint.force-release.enabled=true")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context).hasSingleBean(LocksEndpoint.class);
				assertThat(context.getBean(LocksEndpoint.class)).isInstanceOf(ForceReleasingLocksEndpoint.class);
			});
		this.runner
			.withPropertyValues("distributed-lock.table-name=" + newTableName(),
					"distributed-lock.endpoint.force-release.enabled=false")
			.run((context) -> {
				assertThat(context).hasSingleBean(LocksEndpoint.class);
				assertThat(context).doesNotHaveBean(ForceReleasingLocksEndpoint.class);
			});
	}

	@Test
	void withoutActuatorOnTheClasspathNothingIsRegistered() {
		this.runner
			.withClassLoader(new FilteredClassLoader(ACTUATOR, HEALTH))
			.withPropertyValues("distributed-lock.table-name=" + newTableName())
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context).hasSingleBean(LockTemplate.class);
				// the read-only table access is part of the lock auto-configuration (isLocked for application code)
				assertThat(context).hasSingleBean(LockTableAdmin.class);
				assertThat(context).doesNotHaveBean(LocksEndpoint.class);
				assertThat(context).doesNotHaveBean(LockTableHealthIndicator.class);
			});
	}

	@Test
	void withTheHealthModuleButWithoutActuatorOnlyTheHealthIndicatorIsRegistered() {
		// Boot 4's spring-boot-health works without Actuator, as Boot's own "db" indicator does
		this.runner.withClassLoader(new FilteredClassLoader(ACTUATOR))
			.withPropertyValues("distributed-lock.table-name=" + newTableName())
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context).doesNotHaveBean(LocksEndpoint.class);
				assertThat(context).hasSingleBean(LockTableHealthIndicator.class);
				assertThat(context.getBean("distributedLockHealthIndicator", HealthIndicator.class).health().getStatus())
					.isEqualTo(Status.UP);
			});
	}

	@Test
	void withoutTheHealthModuleOnlyTheEndpointIsRegistered() {
		this.runner
			.withClassLoader(new FilteredClassLoader(HEALTH))
			.withPropertyValues("distributed-lock.table-name=" + newTableName())
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context).hasSingleBean(LocksEndpoint.class);
				assertThat(context).doesNotHaveBean(LockTableHealthIndicator.class);
			});
	}

	@Test
	void theEndpointIsNotRegisteredWhenNotExposedNorTheIndicatorWhenDisabled() {
		new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
					DistributedLockAutoConfiguration.class, DistributedLockActuatorAutoConfiguration.class,
					DistributedLockHealthContributorAutoConfiguration.class))
			.withPropertyValues(TestDatabase.get().springProperties())
			.withPropertyValues("distributed-lock.cleanup.enabled=false", "distributed-lock.table-name=" + newTableName(),
					"management.health.distributed-lock.enabled=false")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context).doesNotHaveBean(LocksEndpoint.class);
				assertThat(context).doesNotHaveBean(LockTableHealthIndicator.class);
			});
	}

	@Test
	void withoutTheLockAutoConfigurationNothingIsRegistered() {
		this.runner.withPropertyValues("distributed-lock.enabled=false").run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context).doesNotHaveBean(LockTableAdmin.class);
			assertThat(context).doesNotHaveBean(LocksEndpoint.class);
		});
	}

	@Test
	void healthIsUpWithTheTableAndServerAndDownOnceTheTableIsGone() {
		String table = newTableName();
		this.runner.withPropertyValues("distributed-lock.table-name=" + table).run((context) -> {
			assertThat(context).hasNotFailed();
			HealthIndicator indicator = context.getBean("distributedLockHealthIndicator", HealthIndicator.class);
			Health up = indicator.health();
			assertThat(up.getStatus()).isEqualTo(Status.UP);
			assertThat(up.getDetails()).containsEntry("table", table);
			assertThat((String) up.getDetails().get("server")).matches("(MySQL|MariaDB) \\d+\\..*");

			admin.execute("DROP TABLE `" + table + "`");
			Health down = indicator.health();
			assertThat(down.getStatus()).isEqualTo(Status.DOWN);
			assertThat(down.getDetails()).containsEntry("table", table);
			assertThat(String.valueOf(down.getDetails().get("error"))).contains(table);
		});
	}

	@Test
	void theEndpointListsALockHeldThroughTheAutoConfiguredTemplate() {
		String table = newTableName();
		this.runner.withPropertyValues("distributed-lock.table-name=" + table, "distributed-lock.node-name=node-ctx")
			.run((context) -> {
				LocksEndpoint endpoint = context.getBean(LocksEndpoint.class);
				String resource = "actuator-ctx-" + UUID.randomUUID();
				try (LockHandle lock = context.getBean(LockTemplate.class).acquire(resource)) {
					LocksEndpoint.LocksDescriptor locks = endpoint.locks();
					assertThat(locks.table()).isEqualTo(table);
					assertThat(locks.truncated()).isFalse();
					assertThat(locks.locks()).singleElement().satisfies((row) -> {
						assertThat(row.resource()).isEqualTo(resource);
						assertThat(row.holder()).startsWith("node-ctx [");
						assertThat(row.fencingToken()).isBetween(lock.fencingToken(), lock.fencingToken() + 1023);
					});
				}
				assertThat(endpoint.locks().locks()).isEmpty();
			});
	}

}
