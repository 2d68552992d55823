package io.github.dblock.autoconfigure;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.ConfigurationPropertiesScan;
import org.springframework.boot.context.properties.EnableConfigurationProperties;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.methods;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

/**
 * The architecture of the whole library (lock-core, lock-spring and lock-autoconfigure, issue 17): Spring Boot wiring
 * stays in the auto-configuration package, and the core and lock-spring stay free of Spring Boot. Package cycles are checked elsewhere.
 */
class LibraryArchitectureTests {

	private static final String AUTOCONFIGURE = "io.github.dblock.autoconfigure";

	private static final String[] CORE = { "io.github.dblock", "io.github.dblock.engine..", "io.github.dblock.spi..",
			"io.github.dblock.jdbc..",
			"io.github.dblock.semaphore..", "io.github.dblock.idempotency.." };

	/** The packages of lock-spring: annotation interceptors, ShedLock and Spring Integration adapters. */
	private static final String[] SPRING = { "io.github.dblock.interceptor..", "io.github.dblock.shedlock..",
			"io.github.dblock.integration.." };

	private static JavaClasses library;

	@BeforeAll
	static void importLibrary() {
		library = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
			.withImportOption((location) -> !location.contains("lock-test-support")) // the tests' servers, test scope
			.importPackages("io.github.dblock");
	}

	/**
	 * Issue 17: auto-configuration classes are the only users of {@code @ConfigurationProperties}. The bound classes
	 * live in the auto-configuration package and only its classes enable them; an interceptor, endpoint or provider
	 * gets its settings from there (as constructor arguments), never by binding properties itself.
	 */
	@Test
	void onlyAutoConfigurationClassesAreConfigurationProperties() {
		classes().that()
			.areMetaAnnotatedWith(ConfigurationProperties.class)
			.should()
			.resideInAPackage(AUTOCONFIGURE)
			.check(library);
		methods().that()
			.areMetaAnnotatedWith(ConfigurationProperties.class)
			.should()
			.beDeclaredInClassesThat()
			.resideInAPackage(AUTOCONFIGURE)
			.allowEmptyShould(true)
			.check(library);
		classes().that()
			.areMetaAnnotatedWith(EnableConfigurationProperties.class)
			.or()
			.areMetaAnnotatedWith(ConfigurationPropertiesScan.class)
			.should()
			.resideInAPackage(AUTOCONFIGURE)
			.check(library);
	}

	@Test
	void onlyAutoConfigurationClassesAreAutoConfigurations() {
		classes().that()
			.areAnnotatedWith(AutoConfiguration.class)
			.should()
			.resideInAPackage(AUTOCONFIGURE)
			.check(library);
	}

	@Test
	void coreDoesNotDependOnSpringBoot() {
		noClasses().that()
			.resideInAnyPackage(CORE)
			.should()
			.dependOnClassesThat()
			.resideInAPackage("org.springframework.boot..")
			.because("lock-core must work in a plain Spring application")
			.check(library);
	}

	@Test
	void coreDoesNotDependOnTheSpringBootSide() {
		noClasses().that()
			.resideInAnyPackage(CORE)
			.should()
			.dependOnClassesThat()
			.resideInAnyPackage(AUTOCONFIGURE + "..", "io.github.dblock.interceptor..", "io.github.dblock.actuate..",
					"io.github.dblock.integration..", "io.github.dblock.shedlock..")
			.because("lock-autoconfigure builds on lock-core, not the other way round")
			.check(library);
	}

	@Test
	void springModuleDoesNotDependOnSpringBoot() {
		noClasses().that()
			.resideInAnyPackage(SPRING)
			.should()
			.dependOnClassesThat()
			.resideInAnyPackage("org.springframework.boot..", AUTOCONFIGURE + "..", "io.github.dblock.actuate..")
			.because("lock-spring must work in a plain Spring application; lock-autoconfigure builds on it")
			.check(library);
	}

	/**
	 * The lock engine is internal to lock-core: lock-spring and lock-autoconfigure use the API, {@code LockTemplate}
	 * and, for the Actuator endpoint and the gauge, its read-only {@code LockIntrospection}.
	 */
	@Test
	void theEngineIsNotUsedOutsideLockCore() {
		noClasses().that()
			.resideInAnyPackage(AUTOCONFIGURE + "..", "io.github.dblock.actuate..", "io.github.dblock.interceptor..",
					"io.github.dblock.shedlock..", "io.github.dblock.integration..")
			.should()
			.dependOnClassesThat()
			.resideInAPackage("io.github.dblock.engine..")
			.because("the engine is not API and may change in any release")
			.check(library);
	}

	/**
	 * The JDBC engine's machinery is internal to lock-core: outside it, only the entry point, the providers, the
	 * table's administration and the types of the lock table, its dialect and schema are used (with their nested
	 * types); every other class of {@code io.github.dblock.jdbc..} is public only for the mechanisms' sake.
	 */
	@Test
	void internalJdbcClassesAreNotUsedOutsideLockCore() {
		DescribedPredicate<JavaClass> jdbcApi = JavaClass.Predicates.belongToAnyOf(
				io.github.dblock.jdbc.JdbcLockTemplateBuilder.class, io.github.dblock.jdbc.sql.LockTable.class,
				io.github.dblock.jdbc.sql.LockDialect.class, io.github.dblock.jdbc.sql.DatabaseServer.class,
				io.github.dblock.jdbc.sql.LockSchema.class, io.github.dblock.jdbc.lease.LeaseLockProvider.class,
				io.github.dblock.jdbc.lease.JdbcSemaphoreProvider.class, io.github.dblock.jdbc.lease.IdempotencyStore.class,
				io.github.dblock.jdbc.pessimistic.PessimisticLockProvider.class,
				io.github.dblock.jdbc.optimistic.OptimisticLockProvider.class,
				io.github.dblock.jdbc.admin.LockTableAdmin.class, io.github.dblock.jdbc.admin.LockTableCleaner.class,
				io.github.dblock.jdbc.admin.DatabaseTopology.class);
		noClasses().that()
			.resideInAnyPackage(AUTOCONFIGURE + "..", "io.github.dblock.actuate..", "io.github.dblock.interceptor..",
					"io.github.dblock.shedlock..", "io.github.dblock.integration..")
			.should()
			.dependOnClassesThat(JavaClass.Predicates.resideInAPackage("io.github.dblock.jdbc..")
				.and(DescribedPredicate.not(jdbcApi))
				.as("internal classes of io.github.dblock.jdbc.."))
			.because("the JDBC engine's machinery is not API and may change in any release")
			.check(library);
	}

}
