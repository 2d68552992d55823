package io.github.dblock.autoconfigure;

import io.github.dblock.LockIntrospection;
import io.github.dblock.LockTemplate;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.binder.MeterBinder;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The gauge {@code distributed.lock.held.local}: how many resources this JVM holds now. Timers for acquisition and
 * holding come from the {@link LockTemplate}'s observations. Only with Micrometer on the classpath.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnClass(MeterBinder.class)
class LockMetricsConfiguration {

	@Bean
	@ConditionalOnBean(LockTemplate.class)
	MeterBinder distributedLockMeterBinder(LockTemplate lockTemplate) {
		return (registry) -> Gauge.builder("distributed.lock.held.local", lockTemplate.introspection(),
				LockIntrospection::localHeldCount)
			.description("Resources this JVM holds a distributed lock on")
			.register(registry);
	}

}
