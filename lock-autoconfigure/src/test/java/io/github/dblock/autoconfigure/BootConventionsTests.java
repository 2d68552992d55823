package io.github.dblock.autoconfigure;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.stream.Stream;

import javax.sql.DataSource;

import io.github.dblock.DistributedLock;
import io.github.dblock.LockTemplate;
import io.github.dblock.autoconfigure.unproxied.NotABean;
import io.github.dblock.autoconfigure.unproxied.SelfInvokingWorker;
import io.github.dblock.interceptor.IneffectiveAnnotationException;
import io.github.dblock.jdbc.sql.LockSchema;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.AutoConfigurationPackages;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceInitializationAutoConfiguration;
import org.springframework.boot.sql.init.dependency.DependsOnDatabaseInitialization;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.io.Resource;
import org.springframework.core.io.support.PathMatchingResourcePatternResolver;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * Spring Boot 4 conventions of the starter, on the real test database ({@link TestDatabase}): start-up refusals as
 * failure reports (Description / Action), the order of database initialization (Boot's
 * {@code DatabaseInitializerDetector} / {@code DependsOnDatabaseInitializationDetector}), and the start-up warning
 * about calls that bypass the proxy. Each test uses lock tables of its own.
 */
@ExtendWith(OutputCaptureExtension.class)
class BootConventionsTests extends LockTablesTestSupport {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
				DistributedLockAutoConfiguration.class))
		.withPropertyValues(TestDatabase.get().springProperties())
		.withPropertyValues("distributed-lock.cleanup.enabled=false");

	BootConventionsTests() {
		super("lock_boot_");
	}

	// ------------------------------------------------------------------ failure reports

	@Test
	void anAnnotationOnAPrivateMethodStopsStartUpWithAFailureReportNotAStackTrace(CapturedOutput output) {
		SpringApplication application = new SpringApplication(PrivateMethodApplication.class);
		application.setWebApplicationType(WebApplicationType.NONE);
		List<String> arguments = new ArrayList<>();
		for (String property : TestDatabase.get().springProperties()) {
			arguments.add("--" + property);
		}
		arguments.add("--distributed-lock.table-name=" + newTableName());
		arguments.add("--distributed-lock.cleanup.enabled=false");
		arguments.add("--spring.main.banner-mode=off");

		assertThatExceptionOfType(RuntimeException.class)
			.isThrownBy(() -> application.run(arguments.toArray(String[]::new)).close())
			.withRootCauseInstanceOf(IneffectiveAnnotationException.class);

		String worker = PrivateMethodApplication.Worker.class.getName();
		assertThat(output.getOut() + output.getErr()).contains("APPLICATION FAILED TO START")
			.contains("Description:\n\n@DistributedLock on " + worker + ".work() cannot take effect: the method is "
					+ "private, and Spring AOP proxies never intercept private methods.\n\nThe method would run without "
					+ "its lock, so the application does not start.")
			.contains("Action:\n\nMake it public (or protected or package-private) and call it on the bean from another "
					+ "bean.");
	}

	@Test
	void theFailureAnalysisOfAnIneffectiveAnnotationSplitsTheReasonFromTheAction() throws Exception {
		IneffectiveAnnotationException failure = new IneffectiveAnnotationException(DistributedLock.class,
				PrivateMethodApplication.Worker.class.getDeclaredMethod("work"), "the method is final",
				"Remove 'final'");
		assertThat(failure).hasMessage("@DistributedLock on " + PrivateMethodApplication.Worker.class.getName()
				+ ".work() cannot take effect: the method is final. Remove 'final'.");
		FailureAnalysis analysis = new IneffectiveAnnotationFailureAnalyzer()
			.analyze(new IllegalStateException("wrapped", failure));
		assertThat(analysis).isNotNull();
		assertThat(analysis.getDescription()).isEqualTo("@DistributedLock on "
				+ PrivateMethodApplication.Worker.class.getName() + ".work() cannot take effect: the method is final.\n\n"
				+ "The method would run without its lock, so the application does not start.");
		assertThat(analysis.getAction()).isEqualTo("Remove 'final'.");
	}

	// ------------------------------------------------------------------ start-up log

	@Test
	void startUpNamesTheRealServerWhenItMigratesAndInItsSummary(CapturedOutput output) {
		String table = newTableName();
		this.runner.withPropertyValues("distributed-lock.table-name=" + table).run((context) -> {
			assertThat(context).hasNotFailed();
			String server = context.getBean(LockSchemaInitializer.class).getServer().toString();
			assertThat(server).matches("(MySQL|MariaDB) \\d+\\.\\d+.*");
			List<String> migrating = output.getAll()
				.lines()
				.filter((line) -> line.contains("Migrating lock table '" + table + "'"))
				.toList();
			assertThat(migrating).singleElement()
				.satisfies((line) -> assertThat(line).contains("INFO")
					.contains("Migrating lock table '" + table + "' to v" + LockSchemaInitializer.LATEST_VERSION + " on "
							+ server));
			if (server.startsWith("MariaDB")) {
				assertThat(migrating.get(0)).endsWith("(Flyway's own log line names the server as the JDBC driver "
						+ "reports it: 'MySQL 5.5' is this MariaDB through MySQL Connector/J)");
			}
			assertThat(output.getAll().lines().filter((line) -> line.contains("Distributed locks: mode LEASE, table '"
					+ table + "'") && line.endsWith(", server " + server))).hasSize(1);
		});
	}

	// ------------------------------------------------------------------ database initialization order

	@Test
	void aBeanThatDependsOnDatabaseInitializationIsCreatedAfterTheLockTablesAreMigrated() {
		String table = newTableName();
		this.runner.withUserConfiguration(ReadsTheLockTableAtStartUp.class)
			.withPropertyValues("distributed-lock.table-name=" + table)
			.run((context) -> {
				assertThat(context).hasNotFailed();
				// registered before the auto-configuration, so created first unless it waits for the lock schema
				assertThat(context.getBean(LockTableReader.class).rows).isZero();
				assertThat(context.getBean(LockTemplate.class)).isNotNull();
			});
	}

	@Test
	void aLockTableTheApplicationsOwnScriptCreatesIsCheckedAfterTheScriptRan() throws IOException {
		String table = newTableName();
		Path script = Files.createTempFile("lock-table-", ".sql");
		try {
			Files.writeString(script, lockTableScript(table));
			this.runner
				.withConfiguration(AutoConfigurations.of(DataSourceInitializationAutoConfiguration.class))
				.withPropertyValues("distributed-lock.table-name=" + table, "distributed-lock.flyway.enabled=false",
						"spring.sql.init.mode=always", "spring.sql.init.schema-locations=" + script.toUri())
				.run((context) -> {
					assertThat(context).hasNotFailed();
					assertThat(context.getBean(LockSchemaInitializer.class).getSchemaStatus())
						.isEqualTo("schema checked, migrations off");
					try (var lock = context.getBean(LockTemplate.class).acquire("app-created-" + UUID.randomUUID())) {
						assertThat(lock.fencingToken()).isPositive();
					}
				});
		}
		finally {
			Files.deleteIfExists(script);
		}
	}

	/** The library's migrations for {@code table}, as an application would copy them into a script of its own. */
	private static String lockTableScript(String table) throws IOException {
		Resource[] scripts = new PathMatchingResourcePatternResolver()
			.getResources(LockSchema.MIGRATION_LOCATION + "/V*__*.sql");
		List<Resource> ordered = Stream.of(scripts)
			.sorted((a, b) -> Integer.compare(version(a), version(b)))
			.toList();
		StringBuilder sql = new StringBuilder();
		for (Resource resource : ordered) {
			try (InputStream in = resource.getInputStream()) {
				sql.append(new String(in.readAllBytes(), StandardCharsets.UTF_8).replace("${lock_table}", table))
					.append('\n');
			}
		}
		return sql.toString();
	}

	private static int version(Resource script) {
		String name = String.valueOf(script.getFilename());
		return Integer.parseInt(name.substring(1, name.indexOf("__")));
	}

	// ------------------------------------------------------------------ calls that bypass the proxy

	@Test
	void selfInvocationAndAnnotatedClassesThatAreNoBeansAreNamedInOneWarning(CapturedOutput output) {
		this.runner.withUserConfiguration(SelfInvokingConfiguration.class)
			.withInitializer((context) -> AutoConfigurationPackages.register(
					(BeanDefinitionRegistry) context.getBeanFactory(), NotABean.class.getPackageName()))
			.withPropertyValues("distributed-lock.table-name=" + newTableName())
			.run((context) -> {
				assertThat(context).hasNotFailed();
				String worker = SelfInvokingWorker.class.getName();
				List<String> warnings = output.getAll()
					.lines()
					.filter((line) -> line.contains("bypass the Spring proxy"))
					.toList();
				assertThat(warnings).singleElement().satisfies((warning) -> {
					assertThat(warning).contains("WARN")
						.contains("4 call(s) or class(es) bypass the Spring proxy")
						.contains(worker + ".refill() calls its own @DistributedLock method buy() on itself")
						.contains(worker + ".refillLater() calls its own @DistributedLock method buy() on itself")
						.contains(worker + ".buy() calls its own @DistributedLock method buy() on itself")
						.contains(NotABean.class.getName() + " is no bean's class, so its instances are never proxied "
								+ "(@DistributedLock on work())")
						.doesNotContain(worker + ".other()");
				});
			});
	}

	@Test
	void nothingIsSaidWhenEveryAnnotatedCallGoesThroughTheProxy(CapturedOutput output) {
		this.runner.withUserConfiguration(ReadsTheLockTableAtStartUp.class)
			.withPropertyValues("distributed-lock.table-name=" + newTableName())
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(output.getAll()).doesNotContain("bypass the Spring proxy");
			});
	}

	// ------------------------------------------------------------------ fixtures

	@Configuration(proxyBeanMethods = false)
	@ImportAutoConfiguration({ DataSourceAutoConfiguration.class, DistributedLockAutoConfiguration.class })
	static class PrivateMethodApplication {

		@Bean
		Worker worker() {
			return new Worker();
		}

		static class Worker {

			@DistributedLock("private-work")
			private void work() {
			}

		}

	}

	/** Reads the lock table in its constructor, as a bean that takes locks while the context starts would. */
	static class LockTableReader {

		final int rows;

		LockTableReader(DataSource dataSource, String table) {
			this.rows = new JdbcTemplate(dataSource).queryForObject("SELECT COUNT(*) FROM `" + table + "`",
					Integer.class);
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class ReadsTheLockTableAtStartUp {

		@Bean
		@DependsOnDatabaseInitialization
		LockTableReader lockTableReader(DataSource dataSource,
				org.springframework.core.env.Environment environment) {
			return new LockTableReader(dataSource, environment.getRequiredProperty("distributed-lock.table-name"));
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class SelfInvokingConfiguration {

		@Bean
		SelfInvokingWorker selfInvokingWorker() {
			return new SelfInvokingWorker();
		}

	}

}
