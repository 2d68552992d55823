package io.github.dblock.testing;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.core.importer.Location;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfiguration;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

/**
 * The architecture of the test kit, with the library's rules (lock-core's CoreArchitectureTests, lock-autoconfigure's
 * LibraryArchitectureTests) carried over: the kit itself works without Spring Boot (only its {@code autoconfigure}
 * package uses it, and only there are auto-configurations), it reaches the library through its public API and SPI,
 * and the library never depends on the kit, which is for tests only.
 */
class TestKitArchitectureTests {

	private static final String KIT = "io.github.dblock.testing";

	private static final String KIT_AUTOCONFIGURE = "io.github.dblock.testing.autoconfigure";

	private static JavaClasses classes;

	@BeforeAll
	static void importClasses() {
		// main classes of the library and the kit; not the test classes, nor lock-core's test-jar
		ImportOption notTheTestJar = (Location location) -> !location.contains("-tests.jar")
				&& !location.contains("/test-classes/");
		classes = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
			.withImportOption((location) -> !location.contains("lock-test-support")) // the tests' servers, test scope
			.withImportOption(notTheTestJar)
			.importPackages("io.github.dblock");
	}

	@Test
	void theKitOutsideItsAutoConfigurationPackageDoesNotNeedSpringBoot() {
		noClasses().that()
			.resideInAPackage(KIT)
			.should()
			.dependOnClassesThat()
			.resideInAnyPackage("org.springframework.boot..", "io.github.dblock.autoconfigure..")
			.because("InMemoryLockTemplate, LockFaults, LockRecorder and LockAssertions serve plain unit tests too")
			.check(classes);
	}

	@Test
	void onlyTheKitsAutoConfigurationPackageHoldsAutoConfigurations() {
		classes().that()
			.areAnnotatedWith(AutoConfiguration.class)
			.and()
			.resideInAPackage(KIT + "..")
			.should()
			.resideInAPackage(KIT_AUTOCONFIGURE)
			.check(classes);
	}

	@Test
	void theKitUsesOnlyTheLockApiItsSpiAndTheLockTable() {
		noClasses().that()
			.resideInAPackage(KIT + "..")
			.should()
			.dependOnClassesThat()
			.resideInAnyPackage("io.github.dblock.interceptor..", "io.github.dblock.actuate..",
					"io.github.dblock.semaphore..", "io.github.dblock.idempotency..")
			.check(classes);
	}

	@Test
	void theLibraryDoesNotDependOnTheTestKit() {
		noClasses().that()
			.resideInAPackage("io.github.dblock..")
			.and()
			.resideOutsideOfPackage(KIT + "..")
			.should()
			.dependOnClassesThat()
			.resideInAPackage(KIT + "..")
			.because("lock-test is for the tests of applications; nothing published for production may need it")
			.check(classes);
	}

	@Test
	void theKitsPackagesFormNoCycles() {
		slices().matching("io.github.dblock.testing.(**)").should().beFreeOfCycles().check(classes);
	}

}
