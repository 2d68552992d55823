package io.github.dblock.autoconfigure;

import java.util.Map;

import io.github.dblock.LockFailureHandler;
import io.github.dblock.LockMode;
import io.github.dblock.LockTemplate;
import io.github.dblock.interceptor.DistributedLockAdvisor;
import io.github.dblock.interceptor.DistributedLockInterceptor;
import io.github.dblock.interceptor.DistributedLockMethodValidator;
import io.github.dblock.interceptor.LockAttribute;
import io.github.dblock.interceptor.LockAttributeSource;
import org.springframework.aop.config.AopConfigUtils;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.ImportBeanDefinitionRegistrar;
import org.springframework.context.annotation.Role;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotationMetadata;

/**
 * The {@code @DistributedLock} advisor, registered as an infrastructure bean so that Spring's auto-proxy
 * creator applies it, plus that auto-proxy creator when the application has none yet, and the validator that
 * stops start-up when an annotated method cannot be intercepted. Its beans are static and
 * reach the {@link LockTemplate} lazily, so creating the advisor does not create the data source early.
 */
@Configuration(proxyBeanMethods = false)
@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
@Import(LockInterceptorConfiguration.AutoProxyRegistrar.class)
class LockInterceptorConfiguration {

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	@ConditionalOnMissingBean
	static LockAttributeSource lockAttributeSource(Environment environment) {
		return new LockAttributeSource(environment);
	}

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static DistributedLockAdvisor distributedLockAdvisor(LockAttributeSource lockAttributeSource,
			ObjectProvider<LockTemplate> lockTemplate, Environment environment, BeanFactory beanFactory) {
		int order = interceptorOrder(environment);
		DistributedLockInterceptor interceptor = new DistributedLockInterceptor(lockAttributeSource,
				lockTemplate::getObject, new BeanFactoryResolver(beanFactory), (name) -> {
					try {
						return beanFactory.getBean(name, LockFailureHandler.class);
					}
					catch (org.springframework.beans.BeansException ex) {
						throw new IllegalStateException("@DistributedLock(failureHandler = \"" + name
								+ "\") names no LockFailureHandler bean", ex);
					}
				});
		return new DistributedLockAdvisor(lockAttributeSource, interceptor, order);
	}

	/**
	 * {@code distributed-lock.interceptor.order}, read from the environment because the advisors are created before
	 * the properties bean.
	 */
	static int interceptorOrder(Environment environment) {
		return Binder.get(environment)
			.bind(DistributedLockProperties.PREFIX + ".interceptor.order", Integer.class)
			.orElse(DistributedLockProperties.DEFAULT_INTERCEPTOR_ORDER);
	}

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static DistributedLockMethodValidator distributedLockMethodValidator(
			ObjectProvider<LockAttributeSource> lockAttributeSource, ObjectProvider<LockTemplate> lockTemplate) {
		return new DistributedLockMethodValidator(lockAttributeSource::getObject, lockTemplate::getIfAvailable);
	}

	/**
	 * Checks {@code @Idempotent} methods as {@link #distributedLockMethodValidator} checks locked ones; registered
	 * whether or not Jackson is present, so that a missing Jackson fails start-up instead of disabling the annotation.
	 */
	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static DistributedLockMethodValidator idempotentMethodValidator(
			ObjectProvider<LockAttributeSource> lockAttributeSource) {
		return new DistributedLockMethodValidator(io.github.dblock.idempotency.Idempotent.class, lockAttributeSource::getObject,
				() -> null);
	}

	/**
	 * Once every singleton exists (and so every annotated method of a proxied bean has been parsed), fails start-up
	 * if an annotation asks for a mode the database refuses, such as {@code mode = PESSIMISTIC} on Galera, naming
	 * the method; such a call would otherwise fail only when first made.
	 */
	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static SmartInitializingSingleton distributedLockRefusedModeCheck(LockAttributeSource lockAttributeSource,
			ObjectProvider<LockTemplate> lockTemplate) {
		return () -> {
			LockTemplate template = lockTemplate.getIfAvailable();
			Map<LockMode, String> refused = (template != null) ? template.getRefusedModes() : Map.of();
			if (refused.isEmpty()) {
				return;
			}
			for (LockAttribute attribute : lockAttributeSource.getParsedAttributes()) {
				LockMode mode = attribute.getOptions().getMode();
				if (mode != null && refused.containsKey(mode)) {
					throw new IllegalStateException("@DistributedLock(mode = " + mode + ") on "
							+ attribute.describe() + " is refused: " + refused.get(mode));
				}
			}
		};
	}

	/**
	 * Says once at start-up which calls of annotated methods bypass the proxy (self-invocation) and which annotated
	 * classes are no bean's class, so that such methods never run unlocked without a word.
	 */
	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static UnproxiedCallsWarning distributedLockUnproxiedCallsWarning(
			org.springframework.beans.factory.ListableBeanFactory beanFactory) {
		ClassLoader classLoader = (beanFactory instanceof org.springframework.beans.factory.config.ConfigurableBeanFactory configurable)
				? configurable.getBeanClassLoader() : null;
		return new UnproxiedCallsWarning(beanFactory, classLoader);
	}

	/**
	 * Registers Spring's infrastructure auto-proxy creator if no (stronger) one is registered yet, using class
	 * proxies unless {@code spring.aop.proxy-target-class=false}, as Spring Boot does.
	 */
	static class AutoProxyRegistrar implements ImportBeanDefinitionRegistrar {

		private final Environment environment;

		/** Spring passes the environment to the constructor of an {@link ImportBeanDefinitionRegistrar}. */
		AutoProxyRegistrar(Environment environment) {
			this.environment = environment;
		}

		@Override
		public void registerBeanDefinitions(AnnotationMetadata metadata, BeanDefinitionRegistry registry) {
			AopConfigUtils.registerAutoProxyCreatorIfNecessary(registry);
			if (this.environment.getProperty("spring.aop.proxy-target-class", Boolean.class, true)) {
				AopConfigUtils.forceAutoProxyCreatorToUseClassProxying(registry);
			}
		}

	}

}
