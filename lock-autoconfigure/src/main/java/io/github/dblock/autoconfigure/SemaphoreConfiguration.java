package io.github.dblock.autoconfigure;

import io.github.dblock.LockTemplate;
import io.github.dblock.interceptor.DistributedLockMethodValidator;
import io.github.dblock.interceptor.DistributedSemaphoreAdvisor;
import io.github.dblock.interceptor.DistributedSemaphoreInterceptor;
import io.github.dblock.interceptor.LockAttributeSource;
import io.github.dblock.interceptor.SemaphoreAttributeSource;
import io.github.dblock.jdbc.JdbcSemaphoreProvider;
import io.github.dblock.jdbc.LeaseLockProvider;
import io.github.dblock.semaphore.DistributedSemaphore;
import io.github.dblock.semaphore.SemaphoreTemplate;
import io.github.dblock.spi.Backoff;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Role;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.core.env.Environment;

/**
 * Distributed semaphores: the {@link SemaphoreTemplate} bean (with the lock template's defaults, node name and
 * observation registry), its JDBC provider (which creates the configured semaphores that have no row yet at start-up),
 * and the {@link DistributedSemaphore @DistributedSemaphore} advisor and start-up validator. The advisor beans are
 * static infrastructure beans that reach the template lazily, like the {@code @DistributedLock} ones.
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

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	@ConditionalOnMissingBean
	static SemaphoreAttributeSource semaphoreAttributeSource(Environment environment) {
		return new SemaphoreAttributeSource(environment);
	}

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static DistributedSemaphoreAdvisor distributedSemaphoreAdvisor(SemaphoreAttributeSource semaphoreAttributeSource,
			ObjectProvider<SemaphoreTemplate> semaphoreTemplate, Environment environment, BeanFactory beanFactory) {
		return new DistributedSemaphoreAdvisor(semaphoreAttributeSource, new DistributedSemaphoreInterceptor(
				semaphoreAttributeSource, semaphoreTemplate::getObject, new BeanFactoryResolver(beanFactory)),
				LockInterceptorConfiguration.interceptorOrder(environment));
	}

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static DistributedLockMethodValidator distributedSemaphoreMethodValidator(
			ObjectProvider<LockAttributeSource> lockAttributeSource) {
		return new DistributedLockMethodValidator(DistributedSemaphore.class, lockAttributeSource::getObject, () -> null);
	}

}
