package io.github.dblock.interceptor;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.springframework.context.annotation.Import;

/**
 * Turns on {@link io.github.dblock.DistributedLock @DistributedLock},
 * {@link io.github.dblock.semaphore.DistributedSemaphore @DistributedSemaphore} and
 * {@link io.github.dblock.idempotency.Idempotent @Idempotent} in a Spring application without Spring Boot, by
 * importing {@link DistributedLocksConfiguration}: the three advisors, Spring's infrastructure auto-proxy creator
 * when the context has none, and the start-up checks that stop the context when an annotated method cannot be
 * intercepted. Put it on a {@code @Configuration} class.
 * <p>
 * It creates no lock beans itself. The context must define:
 * <ul>
 * <li>a {@link io.github.dblock.LockTemplate} bean, for {@code @DistributedLock} (for example
 * {@code JdbcLockTemplateBuilder.forDataSource(dataSource).build()});</li>
 * <li>a {@link io.github.dblock.semaphore.SemaphoreTemplate} bean, only if a method uses
 * {@code @DistributedSemaphore};</li>
 * <li>an {@link io.github.dblock.idempotency.IdempotencyTemplate} bean, only if a method uses {@code @Idempotent}
 * (which also needs Jackson 3 on the class path).</li>
 * </ul>
 * The templates are looked up on the first annotated call, so an advised bean does not create them early; a call
 * whose template has no bean fails with Spring's {@code NoSuchBeanDefinitionException}. A
 * {@link io.github.dblock.LockFailureHandler} named by an annotation's {@code failureHandler} must be a bean too.
 * <p>
 * Settings read from the {@code Environment}, all optional: {@code distributed-lock.interceptor.order} (the order
 * of the lock and semaphore advisors, default {@link DistributedLocksConfiguration#DEFAULT_INTERCEPTOR_ORDER}, so
 * that they run outside Spring's transaction advisor), {@code distributed-lock.idempotency.order} (default
 * {@link org.springframework.core.Ordered#LOWEST_PRECEDENCE}, inside the transaction advisor) and
 * {@code spring.aop.proxy-target-class} (default {@code true}: class-based proxies). Annotation attributes may use
 * {@code ${...}} placeholders of the same {@code Environment}.
 * <p>
 * With Spring Boot and the lock starter, the auto-configuration applies the same configuration and this annotation
 * is not needed; adding it there changes nothing (the configuration is imported once).
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Import(DistributedLocksConfiguration.class)
public @interface EnableDistributedLocks {

}
