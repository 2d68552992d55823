package io.github.dblock.autoconfigure;

import io.github.dblock.actuate.LockTableHealthIndicator;
import io.github.dblock.jdbc.admin.LockTableAdmin;

import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The {@code distributedLock} health indicator ({@link LockTableHealthIndicator}) through Spring Boot 4's
 * {@code spring-boot-health} module, with or without Actuator, as Boot's own {@code db} indicator:
 * {@code management.health.distributed-lock.enabled=false} (or {@code management.health.defaults.enabled=false})
 * turns it off. Only with {@code spring-boot-health} on the class path and the lock auto-configuration active.
 */
@AutoConfiguration(after = DistributedLockAutoConfiguration.class)
@ConditionalOnClass(name = "org.springframework.boot.health.contributor.HealthIndicator")
@ConditionalOnBean(LockSchemaInitializer.class)
public final class DistributedLockHealthContributorAutoConfiguration {

	/**
	 * Nested, so that {@code @ConditionalOnEnabledHealthIndicator}, whose condition class is in
	 * {@code spring-boot-health}, is only read once the module is known to be on the class path.
	 */
	@Configuration(proxyBeanMethods = false)
	@ConditionalOnEnabledHealthIndicator("distributed-lock")
	static class LockTableHealthConfiguration {

		@Bean
		@ConditionalOnMissingBean(name = "distributedLockHealthIndicator")
		LockTableHealthIndicator distributedLockHealthIndicator(LockTableAdmin admin, LockSchemaInitializer schema) {
			return new LockTableHealthIndicator(admin, schema.getServer());
		}

	}

}
