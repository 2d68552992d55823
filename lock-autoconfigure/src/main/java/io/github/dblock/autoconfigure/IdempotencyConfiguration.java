package io.github.dblock.autoconfigure;

import io.github.dblock.LockTemplate;
import io.github.dblock.idempotency.IdempotencyTemplate;
import io.github.dblock.interceptor.IdempotentAdvisor;
import io.github.dblock.interceptor.IdempotentAttributeSource;
import io.github.dblock.interceptor.IdempotentInterceptor;
import io.github.dblock.jdbc.IdempotencyStore;
import io.github.dblock.jdbc.LeaseLockProvider;
import io.github.dblock.spi.Backoff;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Role;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.core.Ordered;
import org.springframework.core.env.Environment;
import tools.jackson.databind.json.JsonMapper;

/**
 * Idempotency keys: the {@link IdempotencyTemplate} on the lock data source's {@code <table>_idem} records, and the
 * {@code @Idempotent} advisor (a static infrastructure bean reaching the template lazily, ordered inside the
 * transaction advisor). Needs Jackson 3 ({@code tools.jackson.databind}) to record outcomes; uses the application's
 * {@link JsonMapper} bean if there is one.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnClass(JsonMapper.class)
class IdempotencyConfiguration {

	@Bean
	@ConditionalOnMissingBean
	IdempotencyStore idempotencyStore(DistributedLockProperties properties, LockSchemaInitializer schema,
			LeaseLockProvider leaseLockProvider) {
		return new IdempotencyStore(schema.getDataSource(), schema.getTable(), properties.getStatementTimeout(),
				new Backoff(properties.getRetry().getInitialBackoff(), properties.getRetry().getMaxBackoff()),
				leaseLockProvider);
	}

	@Bean
	@ConditionalOnMissingBean
	IdempotencyTemplate idempotencyTemplate(DistributedLockProperties properties, IdempotencyStore store,
			ObjectProvider<JsonMapper> jsonMapper, LockTemplate lockTemplate) {
		DistributedLockIdempotencyProperties idempotency = properties.getIdempotency();
		IdempotencyTemplate template = new IdempotencyTemplate(store, jsonMapper.getIfAvailable(JsonMapper::shared),
				idempotency.getRetention(), properties.getWaitTime(),
				(idempotency.getLeaseTime() != null) ? idempotency.getLeaseTime() : properties.getLeaseTime(),
				idempotency.getOnDuplicate(), lockTemplate.getNodeName());
		template.setObservationRegistry(lockTemplate.getObservationRegistry());
		return template;
	}

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	@ConditionalOnMissingBean
	static IdempotentAttributeSource idempotentAttributeSource(Environment environment) {
		return new IdempotentAttributeSource(environment);
	}

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static IdempotentAdvisor idempotentAdvisor(IdempotentAttributeSource idempotentAttributeSource,
			ObjectProvider<IdempotencyTemplate> idempotencyTemplate, Environment environment, BeanFactory beanFactory) {
		int order = Binder.get(environment)
			.bind(DistributedLockProperties.PREFIX + ".idempotency.order", Integer.class)
			.orElse(Ordered.LOWEST_PRECEDENCE);
		return new IdempotentAdvisor(idempotentAttributeSource, new IdempotentInterceptor(idempotentAttributeSource,
				idempotencyTemplate::getObject, new BeanFactoryResolver(beanFactory)), order);
	}

}
