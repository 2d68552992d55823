package io.github.dblock.interceptor;

import java.util.Map;

import io.github.dblock.LockFailureHandler;
import io.github.dblock.LockMode;
import io.github.dblock.LockTemplate;
import io.github.dblock.idempotency.IdempotencyTemplate;
import io.github.dblock.idempotency.Idempotent;
import io.github.dblock.semaphore.DistributedSemaphore;
import io.github.dblock.semaphore.SemaphoreTemplate;
import org.springframework.aop.config.AopConfigUtils;
import org.springframework.beans.BeansException;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.ImportBeanDefinitionRegistrar;
import org.springframework.context.annotation.Role;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.core.Ordered;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotationMetadata;

/**
 * The beans behind {@link EnableDistributedLocks}, also imported by the Spring Boot auto-configuration: the
 * {@code @DistributedLock}, {@code @DistributedSemaphore} and {@code @Idempotent} advisors with their attribute
 * sources, the validators that stop start-up when an annotated method cannot be intercepted, the check of annotated
 * modes the database refuses, and Spring's infrastructure auto-proxy creator if the context has none yet. Every bean
 * is a static infrastructure bean that reaches its template ({@link LockTemplate}, {@link SemaphoreTemplate},
 * {@link IdempotencyTemplate}) lazily, on the first call, so creating the advisors does not create the data source
 * early. See {@link EnableDistributedLocks} for the beans it expects and the properties it reads.
 */
@Configuration(proxyBeanMethods = false)
@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
@Import(DistributedLocksConfiguration.AutoProxyRegistrar.class)
public class DistributedLocksConfiguration {

	/**
	 * The default order of the lock and semaphore advisors: just before {@link Ordered#LOWEST_PRECEDENCE}, so that
	 * they run outside Spring's transaction advisor (whose default order is the lowest precedence).
	 */
	public static final int DEFAULT_INTERCEPTOR_ORDER = Ordered.LOWEST_PRECEDENCE - 100;

	/** The property naming the order of the lock and semaphore advisors. */
	public static final String INTERCEPTOR_ORDER_PROPERTY = "distributed-lock.interceptor.order";

	/** The property naming the order of the {@code @Idempotent} advisor. */
	public static final String IDEMPOTENCY_ORDER_PROPERTY = "distributed-lock.idempotency.order";

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static LockAttributeSource lockAttributeSource(Environment environment) {
		return new LockAttributeSource(environment);
	}

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static DistributedLockAdvisor distributedLockAdvisor(LockAttributeSource lockAttributeSource,
			ObjectProvider<LockTemplate> lockTemplate, Environment environment, BeanFactory beanFactory) {
		DistributedLockInterceptor interceptor = new DistributedLockInterceptor(lockAttributeSource,
				lockTemplate::getObject, new BeanFactoryResolver(beanFactory), (name) -> {
					try {
						return beanFactory.getBean(name, LockFailureHandler.class);
					}
					catch (BeansException ex) {
						throw new IllegalStateException("@DistributedLock(failureHandler = \"" + name
								+ "\") names no LockFailureHandler bean", ex);
					}
				});
		return new DistributedLockAdvisor(lockAttributeSource, interceptor, interceptorOrder(environment));
	}

	/**
	 * The order of the lock and semaphore advisors: {@value #INTERCEPTOR_ORDER_PROPERTY}, else
	 * {@link #DEFAULT_INTERCEPTOR_ORDER}. Read from the environment because the advisors are created before any
	 * properties bean. Spring Boot's environment resolves the property's relaxed forms (environment variables) too.
	 * @param environment the application's environment
	 * @return the order
	 */
	public static int interceptorOrder(Environment environment) {
		return environment.getProperty(INTERCEPTOR_ORDER_PROPERTY, Integer.class, DEFAULT_INTERCEPTOR_ORDER);
	}

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static DistributedLockMethodValidator distributedLockMethodValidator(
			ObjectProvider<LockAttributeSource> lockAttributeSource, ObjectProvider<LockTemplate> lockTemplate) {
		return new DistributedLockMethodValidator(lockAttributeSource::getObject, lockTemplate::getIfAvailable);
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

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static SemaphoreAttributeSource semaphoreAttributeSource(Environment environment) {
		return new SemaphoreAttributeSource(environment);
	}

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static DistributedSemaphoreAdvisor distributedSemaphoreAdvisor(SemaphoreAttributeSource semaphoreAttributeSource,
			ObjectProvider<SemaphoreTemplate> semaphoreTemplate, Environment environment, BeanFactory beanFactory) {
		return new DistributedSemaphoreAdvisor(semaphoreAttributeSource, new DistributedSemaphoreInterceptor(
				semaphoreAttributeSource, semaphoreTemplate::getObject, new BeanFactoryResolver(beanFactory)),
				interceptorOrder(environment));
	}

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static DistributedLockMethodValidator distributedSemaphoreMethodValidator(
			ObjectProvider<LockAttributeSource> lockAttributeSource) {
		return new DistributedLockMethodValidator(DistributedSemaphore.class, lockAttributeSource::getObject, () -> null);
	}

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static IdempotentAttributeSource idempotentAttributeSource(Environment environment) {
		return new IdempotentAttributeSource(environment);
	}

	/**
	 * The {@code @Idempotent} advisor, ordered by {@value #IDEMPOTENCY_ORDER_PROPERTY} (default
	 * {@link Ordered#LOWEST_PRECEDENCE}: inside the transaction advisor, so that the outcome is recorded in the
	 * method's transaction).
	 */
	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static IdempotentAdvisor idempotentAdvisor(IdempotentAttributeSource idempotentAttributeSource,
			ObjectProvider<IdempotencyTemplate> idempotencyTemplate, Environment environment, BeanFactory beanFactory) {
		int order = environment.getProperty(IDEMPOTENCY_ORDER_PROPERTY, Integer.class, Ordered.LOWEST_PRECEDENCE);
		return new IdempotentAdvisor(idempotentAttributeSource, new IdempotentInterceptor(idempotentAttributeSource,
				idempotencyTemplate::getObject, new BeanFactoryResolver(beanFactory)), order);
	}

	/**
	 * Checks {@code @Idempotent} methods as {@link #distributedLockMethodValidator} checks locked ones, and fails
	 * start-up when Jackson 3 is missing instead of leaving the annotation without effect.
	 */
	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static DistributedLockMethodValidator idempotentMethodValidator(
			ObjectProvider<LockAttributeSource> lockAttributeSource) {
		return new DistributedLockMethodValidator(Idempotent.class, lockAttributeSource::getObject, () -> null);
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
