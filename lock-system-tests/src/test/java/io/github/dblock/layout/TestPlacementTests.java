package io.github.dblock.layout;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Tests live beside the code they test (docs/DESIGN.md, "Where the tests are"): a test in a package of a module's
 * main code is in that module, so that no test reaches package-private code through a split package; and
 * lock-autoconfigure's tests are about auto-configuration. Read from the source tree of the checkout (Surefire runs
 * the tests in the module's directory).
 */
class TestPlacementTests {

	private static final Path ROOT = Path.of("").toAbsolutePath().getParent();

	/** Package name to the modules whose main code has classes in it. */
	private static final Map<String, Set<String>> mainPackages = new TreeMap<>();

	/** Package name to the modules whose tests have classes in it. */
	private static final Map<String, Set<String>> testPackages = new TreeMap<>();

	@BeforeAll
	static void readSourceTree() throws IOException {
		try (Stream<Path> modules = Files.list(ROOT)) {
			for (Path module : modules.filter((m) -> Files.isRegularFile(m.resolve("pom.xml"))).toList()) {
				collect(module, "src/main/java", mainPackages);
				collect(module, "src/test/java", testPackages);
			}
		}
		assertThat(mainPackages).as("main packages under %s", ROOT).containsKeys("io.github.dblock", "io.github.dblock.jdbc.lease");
		assertThat(testPackages).as("test packages under %s", ROOT).containsKey("io.github.dblock.jdbc.lease");
	}

	private static void collect(Path module, String sources, Map<String, Set<String>> packages) throws IOException {
		Path root = module.resolve(sources);
		if (!Files.isDirectory(root)) {
			return;
		}
		try (Stream<Path> files = Files.walk(root)) {
			files.filter((f) -> f.toString().endsWith(".java") && !f.endsWith("package-info.java"))
				.map((f) -> root.relativize(f.getParent()).toString().replace('/', '.'))
				.forEach((pkg) -> packages.computeIfAbsent(pkg, (p) -> new TreeSet<>())
					.add(module.getFileName().toString()));
		}
	}

	@Test
	void everyTestInAPackageOfMainCodeIsInTheModuleOfThatCode() {
		List<String> misplaced = new ArrayList<>();
		testPackages.forEach((pkg, testModules) -> {
			Set<String> owners = mainPackages.get(pkg);
			if (owners != null) {
				testModules.stream()
					.filter((module) -> !owners.contains(module))
					.forEach((module) -> misplaced.add(pkg + " tested in " + module + ", main code in " + owners));
			}
		});
		assertThat(misplaced).as("split packages between a module's tests and another module's code").isEmpty();
	}

	@Test
	void noPackageOfMainCodeIsSplitAcrossModules() {
		assertThat(mainPackages).allSatisfy((pkg, modules) -> assertThat(modules).as(pkg).hasSize(1));
	}

	@Test
	void lockAutoconfigureTestsAreAboutAutoConfiguration() {
		Set<String> packages = new TreeSet<>();
		testPackages.forEach((pkg, modules) -> {
			if (modules.contains("lock-autoconfigure")) {
				packages.add(pkg);
			}
		});
		Set<String> own = mainPackagesOf("lock-autoconfigure");
		assertThat(packages).isNotEmpty()
			.allSatisfy((pkg) -> assertThat(own.contains(pkg) || pkg.startsWith("io.github.dblock.autoconfigure."))
				.as("%s: a package of lock-autoconfigure's main code %s or below its auto-configuration", pkg, own)
				.isTrue());
	}

	private static Set<String> mainPackagesOf(String module) {
		Set<String> packages = new TreeSet<>();
		mainPackages.forEach((pkg, modules) -> {
			if (modules.contains(module)) {
				packages.add(pkg);
			}
		});
		return packages;
	}

}
