package io.github.dblock.autoconfigure;

import java.util.Set;

import org.springframework.boot.sql.init.dependency.AbstractBeansOfTypeDatabaseInitializerDetector;
import org.springframework.core.Ordered;

/**
 * Tells Spring Boot's database initialization ordering that the {@link LockSchemaInitializer} bean initializes the
 * database, as Boot's Quartz and Flyway modules do for theirs: beans that depend on database initialization
 * ({@code @DependsOnDatabaseInitialization}, {@code JdbcTemplate}, the JPA {@code EntityManagerFactory}, the lock
 * beans, see {@link LockBeansDependOnDatabaseInitializationDetector}) are created after the lock tables are migrated
 * or checked. Ordered after Boot's script and migration initializers ({@code spring.sql.init}, Flyway, Liquibase),
 * so that a lock table the application creates itself ({@code distributed-lock.flyway.enabled=false}) exists when it
 * is checked. Registered in {@code META-INF/spring.factories}. Stateless and thread-safe.
 */
public class LockSchemaInitializerDetector extends AbstractBeansOfTypeDatabaseInitializerDetector {

	/** After Boot's {@code DataSourceScriptDatabaseInitializerDetector} ({@code LOWEST_PRECEDENCE - 100}). */
	static final int ORDER = Ordered.LOWEST_PRECEDENCE - 50;

	@Override
	protected Set<Class<?>> getDatabaseInitializerBeanTypes() {
		return Set.of(LockSchemaInitializer.class);
	}

	@Override
	public int getOrder() {
		return ORDER;
	}

}
