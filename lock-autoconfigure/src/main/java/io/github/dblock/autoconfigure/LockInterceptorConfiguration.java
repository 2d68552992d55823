package io.github.dblock.autoconfigure;

import io.github.dblock.interceptor.DistributedLocksConfiguration;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.ConfigurableBeanFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.Role;

/**
 * The {@code @DistributedLock}, {@code @DistributedSemaphore} and {@code @Idempotent} advisors and their start-up
 * checks, from lock-spring's {@link DistributedLocksConfiguration} (the configuration behind
 * {@code @EnableDistributedLocks}; Spring imports a configuration class once, so an application that also has
 * {@code @EnableDistributedLocks} gets one set of advisors), plus the Spring Boot-only warning about calls that
 * bypass the proxy.
 */
@Configuration(proxyBeanMethods = false)
@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
@Import(DistributedLocksConfiguration.class)
class LockInterceptorConfiguration {

	/**
	 * Says once at start-up which calls of annotated methods bypass the proxy (self-invocation) and which annotated
	 * classes are no bean's class, so that such methods never run unlocked without a word.
	 */
	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static UnproxiedCallsWarning distributedLockUnproxiedCallsWarning(ListableBeanFactory beanFactory) {
		ClassLoader classLoader = (beanFactory instanceof ConfigurableBeanFactory configurable)
				? configurable.getBeanClassLoader() : null;
		return new UnproxiedCallsWarning(beanFactory, classLoader);
	}

}
