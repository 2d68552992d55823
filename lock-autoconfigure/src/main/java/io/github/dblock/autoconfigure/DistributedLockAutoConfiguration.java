package io.github.dblock.autoconfigure;

import javax.sql.DataSource;

import io.github.dblock.LockTemplate;
import org.flywaydb.core.Flyway;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.sql.init.dependency.DatabaseInitializationDependencyConfigurer;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;

/**
 * Auto-configuration of distributed locks on the application's MySQL or MariaDB {@link DataSource}: the lock
 * table (through the library's own Flyway migrations), the {@link LockTemplate} bean and the
 * {@link io.github.dblock.DistributedLock @DistributedLock} advisor, distributed semaphores (the
 * {@link io.github.dblock.semaphore.SemaphoreTemplate} bean and the
 * {@link io.github.dblock.semaphore.DistributedSemaphore @DistributedSemaphore} advisor), and idempotency keys
 * ({@link io.github.dblock.idempotency.IdempotencyTemplate},
 * {@link io.github.dblock.idempotency.Idempotent @Idempotent}).
 */
@AutoConfiguration(afterName = { "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
		"org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration" })
@ConditionalOnClass({ DataSource.class, Flyway.class })
@ConditionalOnBean(DataSource.class)
@ConditionalOnBooleanProperty(name = DistributedLockProperties.PREFIX + ".enabled", matchIfMissing = true)
@EnableConfigurationProperties(DistributedLockProperties.class)
@Import({ LockJdbcConfiguration.class, LockInterceptorConfiguration.class, LockMetricsConfiguration.class,
		SemaphoreConfiguration.class, IdempotencyConfiguration.class,
		DistributedLockAutoConfiguration.DatabaseInitializationOrdering.class })
public final class DistributedLockAutoConfiguration {

	/**
	 * Spring Boot's ordering of database initialization ({@link LockSchemaInitializerDetector},
	 * {@link LockBeansDependOnDatabaseInitializationDetector}), applied also when no other auto-configuration of the
	 * application imports it (Boot's JDBC, Flyway, Liquibase and JPA ones do).
	 */
	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(name = "org.springframework.boot.sql.init.dependency.DatabaseInitializationDependencyConfigurer")
	@Import(DatabaseInitializationDependencyConfigurer.class)
	static class DatabaseInitializationOrdering {

	}

}
