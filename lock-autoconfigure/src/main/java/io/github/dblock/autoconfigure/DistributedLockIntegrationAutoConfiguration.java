package io.github.dblock.autoconfigure;

import io.github.dblock.LockTemplate;
import io.github.dblock.integration.DistributedLockRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * A Spring Integration {@code LockRegistry} and {@code RenewableLockRegistry} on the lock table
 * ({@link DistributedLockRegistry}, leases renewed while held), when {@code spring-integration-core} is on the class
 * path, the lock auto-configuration is active, the application defines no {@code LockRegistry} of its own, and
 * {@code distributed-lock.integration.enabled} is not {@code false}. Without Spring Integration nothing of it loads.
 */
@AutoConfiguration(after = DistributedLockAutoConfiguration.class)
@ConditionalOnClass(name = "org.springframework.integration.support.locks.RenewableLockRegistry")
@ConditionalOnBean(LockTemplate.class)
@ConditionalOnBooleanProperty(name = DistributedLockProperties.PREFIX + ".integration.enabled", matchIfMissing = true)
public final class DistributedLockIntegrationAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean(org.springframework.integration.support.locks.LockRegistry.class)
	DistributedLockRegistry distributedLockRegistry(LockTemplate locks) {
		return new DistributedLockRegistry(locks, null);
	}

}
