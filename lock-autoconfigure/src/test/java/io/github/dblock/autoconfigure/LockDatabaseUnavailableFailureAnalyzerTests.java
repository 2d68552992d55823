package io.github.dblock.autoconfigure;

import java.util.List;

import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.diagnostics.FailureAnalyzer;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.core.io.support.SpringFactoriesLoader;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A lock database that cannot be reached at start-up fails start-up with a
 * {@link LockDatabaseUnavailableException} naming the URL, which {@link LockDatabaseUnavailableFailureAnalyzer}
 * (registered in {@code META-INF/spring.factories}) reports with the root cause and what to do. Nothing listens
 * on port 1 of the loopback address, so the connection is refused at once.
 */
class LockDatabaseUnavailableFailureAnalyzerTests {

	private static final String URL = "jdbc:mysql://127.0.0.1:1/locks?connectTimeout=2000";

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
				DistributedLockAutoConfiguration.class))
		.withPropertyValues("spring.datasource.url=" + URL, "spring.datasource.username=root",
				"spring.datasource.hikari.connection-timeout=1000");

	@Test
	void anUnreachableDatabaseIsReportedWithItsUrlTheRootCauseAndWhatToDo() {
		this.runner.run((context) -> {
			assertThat(context).hasFailed();
			Throwable failure = context.getStartupFailure();
			FailureAnalysis analysis = new LockDatabaseUnavailableFailureAnalyzer().analyze(failure);
			assertThat(analysis).as("analyzed").isNotNull();
			assertThat(analysis.getDescription()).contains("start-up dependency", "URL:        " + URL,
					"Root cause: java.net.ConnectException: Connection refused");
			assertThat(analysis.getAction()).contains("spring.datasource.url", "distributed-lock.enabled=false");
			assertThat(analysis.getCause()).isInstanceOf(LockDatabaseUnavailableException.class)
				.hasMessageContaining(URL);
		});
	}

	@Test
	void otherFailuresAreNotAnalyzed() {
		assertThat(new LockDatabaseUnavailableFailureAnalyzer().analyze(new IllegalStateException("other"))).isNull();
	}

	@Test
	void theAnalyzerIsRegisteredForSpringBoot() {
		List<FailureAnalyzer> analyzers = SpringFactoriesLoader.forDefaultResourceLocation(getClass().getClassLoader())
			.load(FailureAnalyzer.class, null, SpringFactoriesLoader.FailureHandler.handleMessage((message, ex) -> {
				// Spring Boot's own analyzers that need constructor arguments: not ours
			}));
		assertThat(analyzers).hasAtLeastOneElementOfType(LockDatabaseUnavailableFailureAnalyzer.class);
	}

}
