package io.github.dblock.autoconfigure;

import java.util.Set;

import io.github.dblock.LockOperations;
import io.github.dblock.idempotency.IdempotencyTemplate;
import io.github.dblock.jdbc.admin.LockTableAdmin;
import io.github.dblock.semaphore.SemaphoreTemplate;
import io.github.dblock.spi.LockProvider;
import org.springframework.boot.sql.init.dependency.AbstractBeansOfTypeDependsOnDatabaseInitializationDetector;

/**
 * Marks the beans that take locks or read the lock tables ({@link LockOperations}, the providers,
 * {@link SemaphoreTemplate}, {@link IdempotencyTemplate}, {@link LockTableAdmin}) as depending on database
 * initialization, as Boot's Quartz module marks its {@code Scheduler}: Spring Boot creates them after every database
 * initializer, the lock schema ({@link LockSchemaInitializerDetector}) and the application's own scripts and
 * migrations included, so that a bean that takes a lock while the context starts finds the lock tables in place.
 * Registered in {@code META-INF/spring.factories}. Stateless and thread-safe.
 */
public class LockBeansDependOnDatabaseInitializationDetector
		extends AbstractBeansOfTypeDependsOnDatabaseInitializationDetector {

	@Override
	protected Set<Class<?>> getDependsOnDatabaseInitializationBeanTypes() {
		return Set.of(LockOperations.class, LockProvider.class, SemaphoreTemplate.class, IdempotencyTemplate.class,
				LockTableAdmin.class);
	}

}
