package io.github.dblock;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.properties.HasType;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.core.domain.JavaClass.Predicates.belongToAnyOf;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

/**
 * The architecture of lock-core (issue 17): usable from plain Spring without Spring Boot, the API apart from the
 * JDBC engine and from the internal lock engine, the SPI apart from its JDBC implementation, the wait machinery
 * below the engine and the JDBC providers, the JDBC mechanisms in packages of their own on a shared SQL foundation,
 * no package cycles.
 */
class CoreArchitectureTests {

	/** The internal engine behind {@link LockTemplate}. */
	private static final String ENGINE = "io.github.dblock.engine";

	/** The wait loop and back-off shared by the engine and the JDBC providers. */
	private static final String WAIT = "io.github.dblock.wait";

	/** The API classes that call into the engine. */
	private static final Class<?>[] FACADE = { LockTemplate.class, CurrentLock.class, CommitValidation.class };

	private static JavaClasses core;

	@BeforeAll
	static void importCore() {
		core = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
			.withImportOption((location) -> !location.contains("lock-test-support")) // the tests' servers, test scope
			.importPackages("io.github.dblock");
	}

	@Test
	void coreDoesNotDependOnSpringBoot() {
		noClasses().should()
			.dependOnClassesThat()
			.resideInAPackage("org.springframework.boot..")
			.because("lock-core must work in a plain Spring application")
			.check(core);
	}

	@Test
	void apiDoesNotDependOnTheJdbcEngine() {
		noClasses().that()
			.resideInAnyPackage("io.github.dblock", "io.github.dblock.semaphore", "io.github.dblock.idempotency")
			.should()
			.dependOnClassesThat()
			.resideInAPackage("io.github.dblock.jdbc..")
			.because("the API is implemented behind the SPI, not bound to the JDBC engine")
			.check(core);
	}

	@Test
	void locksDoNotDependOnSemaphoresOrIdempotency() {
		noClasses().that()
			.resideInAnyPackage("io.github.dblock", "io.github.dblock.spi")
			.should()
			.dependOnClassesThat()
			.resideInAnyPackage("io.github.dblock.semaphore", "io.github.dblock.idempotency")
			.because("semaphores and idempotency keys are features built on the lock API, each in its own package")
			.check(core);
	}

	@Test
	void semaphoresAndIdempotencyDoNotDependOnEachOther() {
		noClasses().that()
			.resideInAPackage("io.github.dblock.semaphore")
			.should()
			.dependOnClassesThat()
			.resideInAPackage("io.github.dblock.idempotency")
			.check(core);
		noClasses().that()
			.resideInAPackage("io.github.dblock.idempotency")
			.should()
			.dependOnClassesThat()
			.resideInAPackage("io.github.dblock.semaphore")
			.check(core);
	}

	@Test
	void spiDoesNotDependOnTheJdbcEngine() {
		noClasses().that()
			.resideInAPackage("io.github.dblock.spi..")
			.should()
			.dependOnClassesThat()
			.resideInAPackage("io.github.dblock.jdbc..")
			.because("the JDBC engine is one implementation of the SPI")
			.check(core);
	}

	/**
	 * The wait loop and back-off are machinery of the engine and the JDBC providers, not contracts: the SPI does not
	 * use them, and they depend on no other package of the library (so they close no cycle).
	 */
	@Test
	void waitMachineryStandsBelowEngineAndJdbc() {
		noClasses().that()
			.resideInAPackage(WAIT)
			.should()
			.dependOnClassesThat()
			.resideInAnyPackage("io.github.dblock", "io.github.dblock.spi..", ENGINE, "io.github.dblock.jdbc..",
					"io.github.dblock.semaphore..", "io.github.dblock.idempotency..")
			.because("the wait loop serves the engine and the providers and knows neither")
			.check(core);
		noClasses().that()
			.resideInAnyPackage("io.github.dblock", "io.github.dblock.spi..")
			.should()
			.dependOnClassesThat()
			.resideInAPackage(WAIT)
			.because("the SPI holds contracts only; waiting is the implementations' machinery")
			.check(core);
	}

	@Test
	void publicTypesCarryNoSpringBootAnnotations() {
		noClasses().that()
			.arePublic()
			.should()
			.beAnnotatedWith(annotatedWithSpringBoot())
			.orShould()
			.beMetaAnnotatedWith(annotatedWithSpringBoot())
			.because("Spring Boot wiring belongs to lock-autoconfigure")
			.check(core);
	}

	private static DescribedPredicate<HasType> annotatedWithSpringBoot() {
		return HasType.Predicates.rawType(resideInAPackage("org.springframework.boot.."))
			.as("a Spring Boot annotation");
	}

	/**
	 * No cycles between the packages of lock-core. Two edges are known and excluded by name. The lock SPI speaks in the
	 * API's value types ({@link LockMode}, {@link LockType}) while the API's templates call the SPI; removing it means
	 * moving those types to a package of their own, a public rename left for later. And the engine implements the
	 * API's handles and throws its exceptions while the API's facade calls into the engine: only
	 * {@link #FACADE the facade's classes} do ({@link #onlyTheFacadeCallsIntoTheEngine()}). The semaphore and
	 * idempotency provider interfaces live in their features' packages, so those need no exclusion.
	 */
	@Test
	void packagesFormNoCycles() {
		com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices()
			.matching("io.github.(**)")
			.should()
			.beFreeOfCycles()
			.ignoreDependency(resideInAPackage("io.github.dblock.spi"),
					belongToAnyOf(LockMode.class, LockType.class))
			.ignoreDependency(belongToAnyOf(FACADE), resideInAPackage(ENGINE))
			.check(core);
	}

	/**
	 * The API package holds the API only: every class in it is public (operations, handles, options, enums,
	 * callbacks, exceptions, the introspection view); the engine's classes live in {@link #ENGINE}.
	 */
	@Test
	void theApiPackageHoldsOnlyPublicTypes() {
		classes().that()
			.resideInAPackage("io.github.dblock")
			.and()
			.areTopLevelClasses()
			.and()
			.doNotHaveSimpleName("package-info")
			.should()
			.bePublic()
			.because("the engine is internal, in " + ENGINE)
			.check(core);
	}

	/**
	 * The API reaches the engine through its facade only: {@link LockTemplate} builds and calls it, and
	 * {@link CurrentLock} and {@link CommitValidation} read the current thread's holds from it.
	 */
	@Test
	void onlyTheFacadeCallsIntoTheEngine() {
		noClasses().that()
			.resideInAPackage("io.github.dblock")
			.and(DescribedPredicate.not(belongToAnyOf(FACADE)))
			.should()
			.dependOnClassesThat()
			.resideInAPackage(ENGINE)
			.check(core);
	}

	/** The JDBC engine's entry point, which wires the mechanisms together. */
	private static final String JDBC = "io.github.dblock.jdbc";

	/** The foundation every JDBC mechanism builds on: the table, dialects, statements, errors, connections. */
	private static final String JDBC_SQL = "io.github.dblock.jdbc.sql..";

	/** The JDBC mechanisms, each in its own package on top of {@link #JDBC_SQL}. */
	private static final String[] JDBC_MECHANISMS = { "io.github.dblock.jdbc.lease..",
			"io.github.dblock.jdbc.pessimistic..", "io.github.dblock.jdbc.optimistic..", "io.github.dblock.jdbc.admin.." };

	/** Only the builder wires the mechanisms: nothing below it depends on it. */
	@Test
	void jdbcSubPackagesDoNotDependOnTheBuilder() {
		noClasses().that()
			.resideInAPackage("io.github.dblock.jdbc.*..")
			.should()
			.dependOnClassesThat()
			.resideInAPackage(JDBC)
			.because(JDBC + " holds the entry point that wires the mechanisms, not machinery they share")
			.check(core);
	}

	/** The shared SQL foundation knows none of the mechanisms built on it. */
	@Test
	void jdbcSqlDependsOnNoMechanism() {
		noClasses().that()
			.resideInAPackage(JDBC_SQL)
			.should()
			.dependOnClassesThat()
			.resideInAnyPackage(JDBC_MECHANISMS)
			.because("what two mechanisms share goes down into " + JDBC_SQL)
			.check(core);
	}

	/** Each mechanism stands on the SQL foundation alone, never on another mechanism. */
	@Test
	void jdbcMechanismsDoNotDependOnEachOther() {
		for (String mechanism : JDBC_MECHANISMS) {
			String[] others = java.util.Arrays.stream(JDBC_MECHANISMS)
				.filter((other) -> !other.equals(mechanism))
				.toArray(String[]::new);
			noClasses().that()
				.resideInAPackage(mechanism)
				.should()
				.dependOnClassesThat()
				.resideInAnyPackage(others)
				.because("what two mechanisms share goes down into " + JDBC_SQL)
				.check(core);
		}
	}

	/**
	 * A mechanism's helpers serve its provider and are called by it, never the other way round: no helper depends
	 * on a provider (the semaphore and idempotency providers, themselves providers, use the lease provider's
	 * renewal scheduler).
	 */
	@Test
	void jdbcHelpersDoNotDependOnTheirProviders() {
		DescribedPredicate<com.tngtech.archunit.core.domain.JavaClass> providers = belongToAnyOf(
				io.github.dblock.jdbc.lease.LeaseLockProvider.class, io.github.dblock.jdbc.lease.JdbcSemaphoreProvider.class,
				io.github.dblock.jdbc.lease.IdempotencyStore.class,
				io.github.dblock.jdbc.pessimistic.PessimisticLockProvider.class,
				io.github.dblock.jdbc.optimistic.OptimisticLockProvider.class,
				io.github.dblock.jdbc.admin.LockTableCleaner.class, io.github.dblock.jdbc.admin.LockTableAdmin.class);
		noClasses().that()
			.resideInAPackage("io.github.dblock.jdbc.*..")
			.and(DescribedPredicate.not(providers))
			.should()
			.dependOnClassesThat(providers.as("a provider"))
			.because("a helper that calls back into its provider hides a cycle inside the package")
			.check(core);
	}

	/** The engine works against the SPI, not its JDBC implementation; the SPI knows nothing of the engine. */
	@Test
	void engineAndSpiStayApart() {
		noClasses().that()
			.resideInAPackage(ENGINE)
			.should()
			.dependOnClassesThat()
			.resideInAnyPackage("io.github.dblock.jdbc..", "io.github.dblock.semaphore..",
					"io.github.dblock.idempotency..")
			.check(core);
		noClasses().that()
			.resideInAnyPackage("io.github.dblock.spi..", "io.github.dblock.jdbc..")
			.should()
			.dependOnClassesThat()
			.resideInAPackage(ENGINE)
			.check(core);
	}

}
