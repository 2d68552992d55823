package io.github.dblock.sample;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import io.github.dblock.test.TestDatabase;
import org.springframework.test.context.DynamicPropertyRegistry;

/**
 * Points the sample at the shared test database ({@link TestDatabase}: {@code -Dlock.test.jdbc-url}, else
 * Testcontainers, else an embedded MariaDB started once per test JVM), so that the application's own embedded
 * database is not started.
 */
final class SampleTestSupport {

	private SampleTestSupport() {
	}

	/** Registers {@link TestDatabase#springProperties()} as dynamic properties. */
	static void registerTestDatabase(DynamicPropertyRegistry registry) {
		for (String property : TestDatabase.get().springProperties()) {
			int separator = property.indexOf('=');
			String value = property.substring(separator + 1);
			registry.add(property.substring(0, separator), () -> value);
		}
	}

	/**
	 * The test database's properties as command-line arguments, followed by the given arguments, for
	 * {@code SpringApplication.run(...)}. (Command-line arguments override {@code application.yml}; the
	 * builder's {@code properties(...)} would not, they are defaults.)
	 */
	static String[] testDatabaseArguments(String... arguments) {
		List<String> all = new ArrayList<>();
		for (String property : TestDatabase.get().springProperties()) {
			all.add("--" + property);
		}
		all.addAll(Arrays.asList(arguments));
		return all.toArray(String[]::new);
	}

}
