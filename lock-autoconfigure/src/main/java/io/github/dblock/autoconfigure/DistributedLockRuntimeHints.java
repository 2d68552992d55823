package io.github.dblock.autoconfigure;

import java.lang.reflect.Method;

import io.github.dblock.DistributedLock;
import io.github.dblock.LockIntrospection;
import io.github.dblock.LockTemplate;
import io.github.dblock.idempotency.Idempotent;
import io.github.dblock.interceptor.LockExpressionRootObject;
import io.github.dblock.jdbc.sql.LockSchema;
import io.github.dblock.jdbc.admin.LockTableAdmin;
import io.github.dblock.semaphore.DistributedSemaphore;
import org.jspecify.annotations.Nullable;
import org.springframework.aot.hint.BindingReflectionHintsRegistrar;
import org.springframework.aot.hint.ExecutableMode;
import org.springframework.aot.hint.MemberCategory;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/**
 * The GraalVM native-image hints of what the starter reads reflectively or as a resource, whatever the application's
 * beans are (those of the annotated methods of its beans come from {@link LockedMethodsAotProcessor}):
 * <ul>
 * <li>the lock tables' Flyway migrations ({@code io/github/dblock/db/migration/*.sql}), which Flyway and the start-up's up-to-date check
 * list and read from the class path;</li>
 * <li>{@link DistributedLock @DistributedLock}, {@link DistributedSemaphore @DistributedSemaphore} and
 * {@link Idempotent @Idempotent}: their attributes, and the JDK proxies Spring synthesizes for them (they use
 * {@code @AliasFor});</li>
 * <li>{@link LockExpressionRootObject}, the root object of the resource and key expressions ({@code #root.method},
 * {@code #root.args}, ...), whose accessors SpEL calls reflectively;</li>
 * <li>the Actuator {@code locks} endpoint's operations and the records it returns as JSON, when Actuator is on the
 * class path;</li>
 * <li>the getters read reflectively from the application's beans: {@code getDataSource()} of a JPA transaction
 * manager (to share its transactions) and the JDBC URL getters of HikariCP, Spring's driver-based, Tomcat and DBCP 2
 * data sources (to name the URL when the database cannot be reached).</li>
 * </ul>
 * The ShedLock {@code LockProvider} and Spring Integration {@code LockRegistry} adapters read nothing reflectively:
 * their beans are created by the generated code like the others. Registered in {@code META-INF/spring/aot.factories};
 * used at build time by Spring AOT. Stateless and thread-safe.
 */
public class DistributedLockRuntimeHints implements RuntimeHintsRegistrar {

	/** The class path pattern of the lock tables' migrations. */
	static final String MIGRATIONS = LockSchema.MIGRATION_LOCATION.substring("classpath:".length()) + "/*.sql";

	private static final String ENDPOINT = "org.springframework.boot.actuate.endpoint.annotation.Endpoint";

	private static final String[][] DATA_SOURCE_URL_GETTERS = { { "com.zaxxer.hikari.HikariDataSource", "getJdbcUrl" },
			{ "org.springframework.jdbc.datasource.AbstractDriverBasedDataSource", "getUrl" },
			{ "org.apache.tomcat.jdbc.pool.DataSourceProxy", "getUrl" },
			{ "org.apache.commons.dbcp2.BasicDataSource", "getUrl" } };

	private static final String JPA_TRANSACTION_MANAGER = "org.springframework.orm.jpa.JpaTransactionManager";

	@Override
	public void registerHints(RuntimeHints hints, @Nullable ClassLoader classLoader) {
		hints.resources().registerPattern(MIGRATIONS);
		for (Class<? extends java.lang.annotation.Annotation> annotation : java.util.List.of(DistributedLock.class,
				DistributedSemaphore.class, Idempotent.class)) {
			hints.reflection().registerType(annotation, MemberCategory.INVOKE_DECLARED_METHODS);
			hints.proxies().registerJdkProxy(annotation);
		}
		hints.reflection()
			.registerType(LockExpressionRootObject.class, MemberCategory.INVOKE_PUBLIC_METHODS,
					MemberCategory.ACCESS_DECLARED_FIELDS);
		if (ClassUtils.isPresent(ENDPOINT, classLoader)) {
			registerEndpoint(hints);
		}
		for (String[] getter : DATA_SOURCE_URL_GETTERS) {
			registerGetter(hints, classLoader, getter[0], getter[1]);
		}
		registerGetter(hints, classLoader, JPA_TRANSACTION_MANAGER, "getDataSource");
	}

	/** The endpoint's operations (Actuator discovers them reflectively) and the records they return. */
	private static void registerEndpoint(RuntimeHints hints) {
		hints.reflection()
			.registerType(io.github.dblock.actuate.LocksEndpoint.class, MemberCategory.INVOKE_PUBLIC_METHODS)
			.registerType(io.github.dblock.actuate.ForceReleasingLocksEndpoint.class,
					MemberCategory.INVOKE_PUBLIC_METHODS);
		new BindingReflectionHintsRegistrar().registerReflectionHints(hints.reflection(),
				io.github.dblock.actuate.LocksEndpoint.LocksDescriptor.class, LockTableAdmin.LockRow.class,
				LockIntrospection.LocalHold.class, LockTableAdmin.ForceRelease.class,
				io.github.dblock.actuate.ForceReleasingLocksEndpoint.Failure.class);
	}

	/** A public no-argument getter, registered on the class that declares it, when that class is present. */
	private static void registerGetter(RuntimeHints hints, @Nullable ClassLoader classLoader, String className,
			String getter) {
		if (!ClassUtils.isPresent(className, classLoader)) {
			return;
		}
		Class<?> type = ClassUtils.resolveClassName(className, classLoader);
		Method method = ReflectionUtils.findMethod(type, getter);
		if (method != null) {
			hints.reflection().registerMethod(method, ExecutableMode.INVOKE);
		}
	}

}
