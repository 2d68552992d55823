package io.github.dblock.autoconfigure;

import io.github.dblock.LockTemplate;
import io.github.dblock.idempotency.IdempotencyTemplate;
import io.github.dblock.jdbc.lease.IdempotencyStore;
import io.github.dblock.jdbc.lease.LeaseLockProvider;
import io.github.dblock.wait.Backoff;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import tools.jackson.databind.json.JsonMapper;

/**
 * Idempotency keys: the {@link IdempotencyTemplate} on the lock data source's {@code <table>_idem} records, which the
 * {@code @Idempotent} advisor of {@link io.github.dblock.interceptor.DistributedLocksConfiguration} reaches lazily.
 * Needs Jackson 3 ({@code tools.jackson.databind}) to record outcomes; uses the application's {@link JsonMapper} bean
 * if there is one.
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

}
