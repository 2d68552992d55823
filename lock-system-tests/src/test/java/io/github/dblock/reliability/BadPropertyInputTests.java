package io.github.dblock.reliability;

import java.util.List;
import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockTemplate;
import io.github.dblock.autoconfigure.DistributedLockAutoConfiguration;
import io.github.dblock.test.Reliability;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatException;

/**
 * Bad {@code distributed-lock.*} properties stop start-up with an error that names the property and what is
 * allowed, before any lock SQL runs. Counted in the reliability report.
 * <p>
 * Proven in {@code DistributedLockAutoConfigurationTests} and counted there: a table name with SQL in it (the
 * injected {@code DROP} does not run), longer than 48 characters or starting with a digit; a negative wait time, a
 * zero lease time, a statement timeout below 1s, a max backoff below the initial one, a blank node name, an unknown
 * {@code datasource} bean.
 */
@ExtendWith(OutputCaptureExtension.class)
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class BadPropertyInputTests {

	private static HikariDataSource adminPool;

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, DistributedLockAutoConfiguration.class))
		.withPropertyValues(TestDatabase.get().springProperties())
		.withPropertyValues("distributed-lock.cleanup.enabled=false");

	@BeforeAll
	static void openAdminPool() {
		adminPool = TestDatabase.get().newDataSource(2);
	}

	@AfterAll
	static void closeAdminPool() {
		adminPool.close();
	}

	private static void tried() {
		Reliability.count(Reliability.ALL_MODES, "bad inputs tried", 1);
	}

	@Test
	void tableNamesWithQuotesBackticksSqlOrNonAsciiLettersAreRefusedNamingTheRule() {
		String canary = "lock_canary_" + UUID.randomUUID().toString().substring(0, 8);
		new JdbcTemplate(adminPool).execute("CREATE TABLE `" + canary + "` (id INT PRIMARY KEY)");
		try {
			for (String name : List.of("locks`; DROP TABLE `" + canary, "locks'; DROP TABLE " + canary + "; --",
					"locks\"", "lock table", "sperre_größe", "locks.x", "`locks`")) {
				assertRefused("table-name", "distributed-lock.table-name=" + name,
						"is not a plain SQL identifier (letters, digits and '_', not starting with a digit)");
			}
			assertRefused("table-name", "distributed-lock.table-name=   ", "lock table name must not be blank");
			assertThat(new JdbcTemplate(adminPool).queryForObject("SELECT COUNT(*) FROM information_schema.TABLES "
					+ "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", Integer.class, canary))
				.as("the canary table survived").isEqualTo(1);
		}
		finally {
			new JdbcTemplate(adminPool).execute("DROP TABLE IF EXISTS `" + canary + "`");
		}
	}

	@Test
	void aReservedWordIsAValidTableNameBecauseTheNameIsAlwaysQuoted() {
		try {
			this.runner.withPropertyValues("distributed-lock.table-name=order").run((context) -> {
				assertThat(context).hasNotFailed();
				LockTemplate locks = context.getBean(LockTemplate.class);
				String resource = "reserved-" + UUID.randomUUID();
				try (LockHandle lock = locks.acquire(resource)) {
					assertThat(new JdbcTemplate(adminPool).queryForObject(
							"SELECT COUNT(*) FROM `order` WHERE owner_token IS NOT NULL AND resource = ?", Integer.class,
							(Object) resource.getBytes(java.nio.charset.StandardCharsets.UTF_8))).isEqualTo(1);
				}
			});
			tried();
		}
		finally {
			new JdbcTemplate(adminPool).execute("DROP TABLE IF EXISTS `order`, `order_schema_history`, `order_sem`, `order_sem_hold`");
		}
	}

	@Test
	void numericAndDurationLimitsNameThePropertyAndTheAllowedRange() {
		assertRefused("lease-time", "distributed-lock.lease-time=999ms", "must be at least 1s");
		assertRefused("lease-time", "distributed-lock.lease-time=-30s", "must be at least 1s");
		assertRefused("lease-time", "distributed-lock.lease-time=36501d", "must be at most 36500d");
		assertRefused("wait-time", "distributed-lock.wait-time=-1ms", "must be zero (a single attempt) or positive");
		assertRefused("retry.initial-backoff", "distributed-lock.retry.initial-backoff=0", "must be positive");
		assertRefused("pessimistic.max-connections", "distributed-lock.pessimistic.max-connections=0", "at least 1");
		assertRefused("optimistic.max-attempts", "distributed-lock.optimistic.max-attempts=-1", "at least 1");
		assertRefused("cleanup.retention", "distributed-lock.cleanup.retention=59m", "at least 1h");
		assertRefused("cleanup.interval", "distributed-lock.cleanup.interval=9s", "at least 10s");
		assertRefused("cleanup.batch-size", "distributed-lock.cleanup.batch-size=0", "between 1 and 10000");
		assertRefused("cleanup.batch-size", "distributed-lock.cleanup.batch-size=10001", "between 1 and 10000");
	}

	@Test
	void valuesThatDoNotConvertAreReportedByTheBinderNamingThePropertyAndTheValue() {
		for (String property : List.of("mode=foo", "lease-time=abc", "wait-time=5 parsecs", "dialect=oracle",
				"pessimistic.max-connections=many")) {
			String name = "distributed-lock." + property.substring(0, property.indexOf('='));
			String value = property.substring(property.indexOf('=') + 1);
			this.runner.withPropertyValues("distributed-lock." + property).run((context) -> {
				assertThat(context).hasFailed();
				assertThat(NestedExceptionUtils.getMostSpecificCause(context.getStartupFailure())).isNotNull();
				assertThat(messages(context.getStartupFailure())).anySatisfy((message) -> assertThat(message)
					.contains("Failed to bind properties under '" + name + "'"));
				assertThat(messages(context.getStartupFailure())).anySatisfy((message) -> assertThat(message)
					.contains(value));
			});
			tried();
		}
	}

	@Test
	void anUnknownModeStopsStartUpAndSpringBootsFailureReportListsTheModes(CapturedOutput output) {
		assertThatException().isThrownBy(() -> new SpringApplicationBuilder(Minimal.class)
			.web(WebApplicationType.NONE)
			.properties(TestDatabase.get().springProperties())
			.properties("distributed-lock.mode=foo", "distributed-lock.cleanup.enabled=false",
					"spring.main.banner-mode=off")
			.run());
		assertThat(output).contains("APPLICATION FAILED TO START")
			.contains("distributed-lock.mode")
			.contains("foo")
			.contains("The following values are valid:")
			.contains("LEASE")
			.contains("OPTIMISTIC")
			.contains("PESSIMISTIC");
		tried();
	}

	@Test
	void modesBindCaseInsensitively() {
		this.runner.withPropertyValues("distributed-lock.mode=Pessimistic").run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(LockTemplate.class).getDefaultMode()).isEqualTo(LockMode.PESSIMISTIC);
		});
		tried();
	}

	@Test
	void semaphorePermitCountsBelowOneAndInvalidSemaphoreNamesAreRefusedNamingTheProperty() {
		assertRefused("semaphores.reports.permits", "distributed-lock.semaphores.reports.permits=0", "must be at least 1");
		assertRefused("semaphores.reports.permits", "distributed-lock.semaphores.reports.permits=-2", "must be at least 1");
		String tooLong = "s".repeat(256);
		assertRefused("semaphores." + tooLong, "distributed-lock.semaphores." + tooLong + ".permits=1",
				"is not a valid semaphore name");
		this.runner.withPropertyValues("distributed-lock.semaphores.reports.permits=many").run((context) -> {
			assertThat(context).hasFailed();
			assertThat(messages(context.getStartupFailure())).anyMatch(
					(message) -> message.contains("distributed-lock.semaphores.reports.permits"));
		});
		tried();
	}

	private void assertRefused(String property, String setting, String reason) {
		this.runner.withPropertyValues(setting).run((context) -> {
			assertThat(context).hasFailed();
			Throwable root = NestedExceptionUtils.getMostSpecificCause(context.getStartupFailure());
			assertThat(root).isInstanceOf(InvalidConfigurationPropertyValueException.class)
				.hasMessageContaining("distributed-lock." + property)
				.hasMessageContaining(reason);
			assertThat(((InvalidConfigurationPropertyValueException) root).getName())
				.isEqualTo("distributed-lock." + property);
		});
		tried();
	}

	private static List<String> messages(Throwable failure) {
		List<String> messages = new java.util.ArrayList<>();
		for (Throwable t = failure; t != null; t = t.getCause()) {
			messages.add(String.valueOf(t.getMessage()));
		}
		return messages;
	}

	@Configuration(proxyBeanMethods = false)
	@ImportAutoConfiguration({ DataSourceAutoConfiguration.class, DistributedLockAutoConfiguration.class })
	static class Minimal {

	}

}
