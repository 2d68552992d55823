package io.github.dblock.autoconfigure;

import io.github.dblock.actuate.ForceReleasingLocksEndpoint;
import io.github.dblock.actuate.LocksEndpoint;
import io.github.dblock.jdbc.admin.LockTableAdmin;

import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Actuator support for distributed locks: the {@code locks} endpoint ({@link LocksEndpoint}, or
 * {@link ForceReleasingLocksEndpoint} when {@code distributed-lock.endpoint.force-release.enabled=true}). Only with
 * Actuator on the classpath and the lock auto-configuration active. The health indicator needs only
 * {@code spring-boot-health} ({@link DistributedLockHealthContributorAutoConfiguration}).
 */
@AutoConfiguration(after = DistributedLockAutoConfiguration.class)
@ConditionalOnClass(Endpoint.class)
@ConditionalOnBean(LockSchemaInitializer.class)
@EnableConfigurationProperties(DistributedLockEndpointProperties.class)
public final class DistributedLockActuatorAutoConfiguration {

	private static final String FORCE_RELEASE_ENABLED = DistributedLockEndpointProperties.PREFIX
			+ ".force-release.enabled";

	@Bean
	@ConditionalOnMissingBean
	LockTableAdmin distributedLockTableAdmin(LockSchemaInitializer schema, DistributedLockProperties properties) {
		return new LockTableAdmin(schema.getDataSource(), schema.getTable(), properties.getStatementTimeout());
	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnAvailableEndpoint(LocksEndpoint.class)
	static class LocksEndpointConfiguration {

		@Bean
		@ConditionalOnMissingBean(LocksEndpoint.class)
		@ConditionalOnBooleanProperty(name = FORCE_RELEASE_ENABLED, havingValue = false, matchIfMissing = true)
		LocksEndpoint locksEndpoint(LockTableAdmin admin, org.springframework.beans.factory.ObjectProvider<io.github.dblock.LockTemplate> locks) {
			return new LocksEndpoint(admin, introspection(locks));
		}

		@Bean
		@ConditionalOnMissingBean(LocksEndpoint.class)
		@ConditionalOnBooleanProperty(name = FORCE_RELEASE_ENABLED)
		ForceReleasingLocksEndpoint forceReleasingLocksEndpoint(LockTableAdmin admin,
				org.springframework.beans.factory.ObjectProvider<io.github.dblock.LockTemplate> locks) {
			return new ForceReleasingLocksEndpoint(admin, introspection(locks));
		}

		private static io.github.dblock.@org.jspecify.annotations.Nullable LockIntrospection introspection(
				org.springframework.beans.factory.ObjectProvider<io.github.dblock.LockTemplate> locks) {
			io.github.dblock.LockTemplate template = locks.getIfAvailable();
			return (template != null) ? template.introspection() : null;
		}

	}

}
