package io.github.dblock.autoconfigure;

import io.github.dblock.jdbc.pessimistic.PessimisticLockProvider;
import javax.sql.DataSource;

import io.github.dblock.DistributedLock;
import io.github.dblock.LockMode;
import io.github.dblock.semaphore.DistributedSemaphore;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.jdbc.datasource.SimpleDriverDataSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Start-up checks that keep a misconfiguration from passing silently: locking switched off while methods are
 * annotated ({@link UnlockedMethodsAutoConfiguration}), and a lock pool that cannot serve the lock settings
 * ({@link LockPoolChecks}). Against the real test database ({@link TestDatabase}) where a lock table is needed.
 */
@ExtendWith(OutputCaptureExtension.class)
class StartupChecksTests {

	private static final String UNLOCKED = "WITHOUT a distributed lock";

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DistributedLockAutoConfiguration.class,
				UnlockedMethodsAutoConfiguration.class));

	private ApplicationContextRunner withDatabase() {
		return this.runner.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class))
			.withPropertyValues(TestDatabase.get().springProperties());
	}

	// ------------------------------------------------------------ distributed-lock.enabled=false

	@Test
	void lockingSwitchedOffLogsOneWarningNamingEveryAnnotatedMethod(CapturedOutput output) {
		withDatabase().withPropertyValues("distributed-lock.enabled=false")
			.withUserConfiguration(BookingConfiguration.class)
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context).doesNotHaveBean(io.github.dblock.LockTemplate.class);
				context.getBean(Booking.class).book(1); // runs unlocked, as the warning says
			});
		String log = output.getOut() + output.getErr();
		assertThat(log.split(UNLOCKED, -1)).as("exactly one warning").hasSize(2);
		assertThat(log).contains("WARN", "because distributed-lock.enabled=false",
				Booking.class.getName() + ".book(long) @DistributedLock",
				Booking.class.getName() + ".callPartner() @DistributedSemaphore");
	}

	@Test
	void withoutADataSourceTheWarningSaysLocksAreNotConfigured(CapturedOutput output) {
		this.runner.withUserConfiguration(BookingConfiguration.class)
			.run((context) -> assertThat(context).hasNotFailed());
		assertThat(output.getOut() + output.getErr()).contains(UNLOCKED, "distributed locks are not configured",
				Booking.class.getName() + ".book(long) @DistributedLock");
	}

	@Test
	void withLockingOnNothingIsLoggedAboutUnlockedMethods(CapturedOutput output) {
		withDatabase().withUserConfiguration(BookingConfiguration.class)
			.run((context) -> assertThat(context).hasNotFailed());
		assertThat(output.getOut() + output.getErr()).doesNotContain(UNLOCKED);
	}

	// ------------------------------------------------------------ the lock pool

	@Test
	void pessimisticModeWithACapAboveThePoolSizeFailsNamingTheProperty() {
		withDatabase()
			.withPropertyValues("distributed-lock.mode=PESSIMISTIC", "distributed-lock.pessimistic.max-connections=5",
					"spring.datasource.hikari.maximum-pool-size=2")
			.run((context) -> {
				assertThat(context).hasFailed();
				Throwable root = NestedExceptionUtils.getMostSpecificCause(context.getStartupFailure());
				assertThat(root).isInstanceOf(InvalidConfigurationPropertyValueException.class);
				assertThat(((InvalidConfigurationPropertyValueException) root).getName())
					.isEqualTo("distributed-lock.pessimistic.max-connections");
				assertThat(root.getMessage()).contains("distributed-lock.mode=PESSIMISTIC", "maximumPoolSize=2",
						"below 2", "spring.datasource.hikari.maximum-pool-size");
			});
	}

	@Test
	void aPessimisticAnnotationWithACapAboveThePoolSizeFailsNamingTheMethod() {
		withDatabase().withPropertyValues("spring.datasource.hikari.maximum-pool-size=3",
				"distributed-lock.pessimistic.max-connections=5")
			.withUserConfiguration(PessimisticBookingConfiguration.class)
			.run((context) -> {
				assertThat(context).hasFailed();
				Throwable root = NestedExceptionUtils.getMostSpecificCause(context.getStartupFailure());
				assertThat(root.getMessage()).contains("distributed-lock.pessimistic.max-connections",
						PessimisticBooking.class.getName() + ".book()", "maximumPoolSize=3");
			});
	}

	@Test
	void anUnsetCapIsDerivedFromThePoolSoASmallPoolStarts(CapturedOutput output) {
		withDatabase()
			.withPropertyValues("distributed-lock.mode=PESSIMISTIC", "spring.datasource.hikari.maximum-pool-size=3")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context.getBean(io.github.dblock.jdbc.pessimistic.PessimisticLockProvider.class).getMaxConnections())
					.isEqualTo(1);
			});
		assertThat(output.getOut()).doesNotContain("pessimistic.max-connections");
		withDatabase().withPropertyValues("spring.datasource.hikari.maximum-pool-size=12")
			.run((context) -> assertThat(context.getBean(io.github.dblock.jdbc.pessimistic.PessimisticLockProvider.class)
				.getMaxConnections()).isEqualTo(9));
	}

	@Test
	void aCapEqualToThePoolSizeIsAWarning(CapturedOutput output) {
		withDatabase()
			.withPropertyValues("distributed-lock.mode=PESSIMISTIC", "distributed-lock.pessimistic.max-connections=4",
					"spring.datasource.hikari.maximum-pool-size=4")
			.run((context) -> assertThat(context).hasNotFailed());
		assertThat(output.getOut()).contains("WARN", "distributed-lock.pessimistic.max-connections (4) equals the "
				+ "maximumPoolSize");
	}

	/**
	 * A pool of 2 with PESSIMISTIC in use (issue 29, item 7): the derived cap is 1, which leaves one connection for the
	 * transactions the locks run in (a holder and the next local caller, waiting in the server) and the application's
	 * own. It starts, with a warning that says how large the pool should be.
	 */
	@Test
	void aPoolThatCannotServeTheCapAndTheTransactionsIsAWarning(CapturedOutput output) {
		withDatabase()
			.withPropertyValues("distributed-lock.mode=PESSIMISTIC", "spring.datasource.hikari.maximum-pool-size=2")
			.run((context) -> assertThat(context).hasNotFailed());
		assertThat(output.getOut()).contains("WARN", "distributed-lock.mode=PESSIMISTIC", "maximumPoolSize=2",
				"distributed-lock.pessimistic.max-connections (1)", "at least 3", "spring.datasource.hikari.maximum-pool-size");
	}

	@Test
	void leaseModeDoesNotCompareTheCapWithThePool(CapturedOutput output) {
		withDatabase().withPropertyValues("spring.datasource.hikari.maximum-pool-size=2")
			.run((context) -> assertThat(context).hasNotFailed());
		assertThat(output.getOut()).doesNotContain("pessimistic.max-connections");
	}

	@Test
	void aValidationTimeoutAboveTheStatementTimeoutIsAWarning(CapturedOutput output) {
		withDatabase()
			.withPropertyValues("distributed-lock.statement-timeout=2s", "spring.datasource.hikari.validation-timeout=3000")
			.run((context) -> assertThat(context).hasNotFailed());
		assertThat(output.getOut()).contains("WARN", "validationTimeout", "(PT3S) exceeds distributed-lock.statement-timeout (PT2S)",
				"spring.datasource.hikari.validation-timeout");
	}

	@Test
	void aLockDataSourceThatIsNotHikariIsAWarning(CapturedOutput output) {
		this.runner.withUserConfiguration(PlainDataSourceConfiguration.class)
			.run((context) -> assertThat(context).hasNotFailed());
		assertThat(output.getOut()).contains("WARN", SimpleDriverDataSource.class.getName() + ") is not a HikariCP pool");
	}

	@Test
	void aHikariPoolWithinTheBoundsLogsNoPoolWarning(CapturedOutput output) {
		withDatabase().run((context) -> assertThat(context).hasNotFailed());
		assertThat(output.getOut()).doesNotContain("HikariCP pool", "validationTimeout", "pessimistic.max-connections");
	}

	// ------------------------------------------------------------ SpEL naming a parameter that does not exist

	@Test
	void aResourceNamingAParameterThatDoesNotExistStopsStartUpListingTheValidNames() {
		withDatabase().withUserConfiguration(UnknownParameterConfiguration.class).run((context) -> {
			assertThat(context).hasFailed();
			Throwable root = NestedExceptionUtils.getMostSpecificCause(context.getStartupFailure());
			assertThat(root).isInstanceOf(IllegalStateException.class);
			assertThat(root.getMessage()).contains(UnknownParameter.class.getName() + ".book()",
					"resource expression #{#orderId} refers to #orderId, which is not a parameter of the method",
					"Valid parameter references: #id (or #p0), #seats (or #p1).");
		});
	}

	@Test
	void aSemaphoreNameNamingAParameterThatDoesNotExistStopsStartUp() {
		withDatabase().withUserConfiguration(UnknownSemaphoreParameterConfiguration.class).run((context) -> {
			assertThat(context).hasFailed();
			Throwable root = NestedExceptionUtils.getMostSpecificCause(context.getStartupFailure());
			assertThat(root.getMessage()).contains("@DistributedSemaphore", "refers to #tenant",
					"The method has no parameters.");
		});
	}

	@Test
	void parameterNamesIndexesRootAndBeanReferencesAreAccepted() {
		withDatabase().withUserConfiguration(KnownParametersConfiguration.class).run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(KnownParameters.class).book(7, 2)).isEqualTo("seat:7:2:7:7:book");
		});
	}

	// ------------------------------------------------------------ start-up cost and log

	@Test
	void aSchemaAlreadyAtTheLatestVersionSkipsFlywayAndOneLineSummarizesTheStartUp(CapturedOutput output) {
		String table = "lock_up_" + java.util.UUID.randomUUID().toString().replace("-", "").substring(0, 10);
		try {
			withDatabase().withPropertyValues("distributed-lock.table-name=" + table, "distributed-lock.node-name=n1")
				.run((context) -> assertThat(context).hasNotFailed());
			assertThat(output.getOut()).contains("Distributed locks: mode LEASE, table '" + table
					+ "' (schema migrated to v" + LockSchemaInitializer.LATEST_VERSION + "), node 'n1', dialect ");
			int before = output.getOut().length();
			withDatabase().withPropertyValues("distributed-lock.table-name=" + table, "distributed-lock.node-name=n1")
				.run((context) -> assertThat(context).hasNotFailed());
			String second = output.getOut().substring(before);
			assertThat(second).contains("Distributed locks: mode LEASE, table '" + table + "' (schema v"
					+ LockSchemaInitializer.LATEST_VERSION + ", up to date), node 'n1', dialect ",
					", server ");
			assertThat(second).as("Flyway did not run").doesNotContain("org.flywaydb");
		}
		finally {
			TestDatabase.get().execute("DROP TABLE IF EXISTS `" + table + "`, `" + table + "_schema_history`, `" + table
					+ "_sem`, `" + table + "_sem_hold`, `" + table + "_rw`, `" + table + "_rw_hold`, `" + table + "_idem`");
		}
	}

	@Test
	void theLatestVersionIsTheHighestMigrationScript() {
		assertThat(LockSchemaInitializer.LATEST_VERSION).isEqualTo(6);
	}

	@Configuration(proxyBeanMethods = false)
	static class BookingConfiguration {

		@Bean
		Booking booking() {
			return new Booking();
		}

	}

	static class Booking {

		@DistributedLock(resource = "seat:#{#id}")
		public void book(long id) {
		}

		@DistributedSemaphore(name = "partner")
		public void callPartner() {
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class PessimisticBookingConfiguration {

		@Bean
		PessimisticBooking pessimisticBooking() {
			return new PessimisticBooking();
		}

	}

	static class PessimisticBooking {

		@DistributedLock(resource = "seat", mode = LockMode.PESSIMISTIC)
		public void book() {
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class PlainDataSourceConfiguration {

		@Bean
		DataSource dataSource() throws Exception {
			TestDatabase database = TestDatabase.get();
			SimpleDriverDataSource dataSource = new SimpleDriverDataSource();
			dataSource.setDriverClass(com.mysql.cj.jdbc.Driver.class);
			dataSource.setUrl(database.jdbcUrl());
			dataSource.setUsername(database.username());
			dataSource.setPassword(database.password());
			return dataSource;
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class UnknownParameterConfiguration {

		@Bean
		UnknownParameter unknownParameter() {
			return new UnknownParameter();
		}

	}

	static class UnknownParameter {

		@DistributedLock(resource = "order:#{#orderId}")
		public void book(long id, int seats) {
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class UnknownSemaphoreParameterConfiguration {

		@Bean
		UnknownSemaphoreParameter unknownSemaphoreParameter() {
			return new UnknownSemaphoreParameter();
		}

	}

	static class UnknownSemaphoreParameter {

		@DistributedSemaphore(name = "partner-#{#tenant}")
		public void call() {
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class KnownParametersConfiguration {

		@Bean
		KnownParameters knownParameters() {
			return new KnownParameters();
		}

	}

	static class KnownParameters {

		@DistributedLock(resource = "seat:#{#id}:#{#seats}:#{#p0}:#{#a0}:#{#root.method.name}")
		public String book(long id, int seats) {
			return io.github.dblock.CurrentLock.get().map(io.github.dblock.LockHandle::resource).orElse("none");
		}

	}

}
