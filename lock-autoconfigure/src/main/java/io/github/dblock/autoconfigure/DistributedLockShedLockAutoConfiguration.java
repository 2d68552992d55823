package io.github.dblock.autoconfigure;

import io.github.dblock.LockTemplate;
import io.github.dblock.jdbc.lease.LeaseLockProvider;
import io.github.dblock.shedlock.DistributedLockShedLockProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * A ShedLock {@code LockProvider} on the lock table ({@link DistributedLockShedLockProvider}), when
 * {@code shedlock-spring} is on the class path, the lock auto-configuration is active, the application defines no
 * ShedLock {@code LockProvider} of its own, and {@code distributed-lock.shedlock.enabled} is not {@code false}. The
 * application still enables ShedLock itself ({@code @EnableSchedulerLock(defaultLockAtMostFor = ...)}). Without
 * ShedLock on the class path nothing of it loads.
 */
@AutoConfiguration(after = DistributedLockAutoConfiguration.class)
@ConditionalOnClass(name = { "net.javacrumbs.shedlock.core.ExtensibleLockProvider",
		"net.javacrumbs.shedlock.spring.annotation.EnableSchedulerLock" })
@ConditionalOnBean({ LeaseLockProvider.class, LockTemplate.class })
@ConditionalOnBooleanProperty(name = DistributedLockProperties.PREFIX + ".shedlock.enabled", matchIfMissing = true)
public final class DistributedLockShedLockAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean(net.javacrumbs.shedlock.core.LockProvider.class)
	DistributedLockShedLockProvider distributedLockShedLockProvider(LeaseLockProvider leases, LockTemplate locks) {
		return new DistributedLockShedLockProvider(leases, locks.getNodeName());
	}

}
