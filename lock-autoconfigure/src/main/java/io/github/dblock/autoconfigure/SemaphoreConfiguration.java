package io.github.dblock.autoconfigure;

import io.github.dblock.LockTemplate;
import io.github.dblock.jdbc.lease.JdbcSemaphoreProvider;
import io.github.dblock.jdbc.lease.LeaseLockProvider;
import io.github.dblock.semaphore.DistributedSemaphore;
import io.github.dblock.semaphore.SemaphoreTemplate;
import io.github.dblock.wait.Backoff;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Distributed semaphores: the {@link SemaphoreTemplate} bean (with the lock template's defaults, node name and
 * observation registry) and its JDBC provider (which creates the configured semaphores that have no row yet at
 * start-up). The {@link DistributedSemaphore @DistributedSemaphore} advisor comes from
 * {@link io.github.dblock.interceptor.DistributedLocksConfiguration}.
 */
@Configuration(proxyBeanMethods = false)
class SemaphoreConfiguration {

	@Bean
	@ConditionalOnMissingBean
	JdbcSemaphoreProvider jdbcSemaphoreProvider(DistributedLockProperties properties, LockSchemaInitializer schema,
			LeaseLockProvider leaseLockProvider) {
		JdbcSemaphoreProvider provider = new JdbcSemaphoreProvider(schema.getDataSource(), schema.getTable(),
				properties.getStatementTimeout(), new Backoff(properties.getRetry().getInitialBackoff(),
						properties.getRetry().getMaxBackoff()),
				leaseLockProvider, properties.semaphorePermits());
		provider.createConfiguredPools();
		return provider;
	}

	@Bean
	@ConditionalOnMissingBean
	SemaphoreTemplate semaphoreTemplate(DistributedLockProperties properties, JdbcSemaphoreProvider provider,
			LockTemplate lockTemplate) {
		SemaphoreTemplate template = new SemaphoreTemplate(provider, properties.getWaitTime(),
				lockTemplate.getDefaultLeaseTime(), lockTemplate.getNodeName());
		template.setObservationRegistry(lockTemplate.getObservationRegistry());
		return template;
	}

}
