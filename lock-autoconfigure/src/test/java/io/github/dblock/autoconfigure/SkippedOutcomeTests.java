package io.github.dblock.autoconfigure;

import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.DistributedLock;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockNotAcquiredException;
import io.github.dblock.LockTemplate;
import io.github.dblock.OnLockFailure;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * A deliberate skip ({@code onFailure = SKIP}) of a busy lock is observed as {@code outcome=skipped}, so that it
 * does not count as a time-out; a busy lock under {@code onFailure = THROW} still counts as {@code timed_out}.
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class SkippedOutcomeTests {

	private static HikariDataSource pool;

	private static LockTemplate other;

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
				DistributedLockAutoConfiguration.class))
		.withPropertyValues(TestDatabase.get().springProperties())
		.withPropertyValues("distributed-lock.cleanup.enabled=false")
		.withUserConfiguration(Jobs.class);

	@BeforeAll
	static void otherNode() {
		pool = TestDatabase.get().newDataSource(4);
		LockNodes.migrateOnce(pool);
		other = LockNodes.node(LockMode.LEASE, "other", pool);
	}

	@AfterAll
	static void close() {
		pool.close();
	}

	@Test
	void aSkipIsCountedAsSkippedAndAThrowAsTimedOut() {
		this.runner.run((context) -> {
			assertThat(context).hasNotFailed();
			MeterRegistry meters = context.getBean(MeterRegistry.class);
			Job job = context.getBean(Job.class);
			String id = UUID.randomUUID().toString();
			try (LockHandle busy = other.acquire("job:" + id)) {
				assertThat(job.runOrSkip(id)).isNull();
				assertThatExceptionOfType(LockNotAcquiredException.class).isThrownBy(() -> job.runOrThrow(id));
			}
			assertThat(job.runOrSkip(id)).isEqualTo("ran");
			assertThat(count(meters, "skipped")).isEqualTo(1);
			assertThat(count(meters, "timed_out")).isEqualTo(1);
			assertThat(count(meters, "acquired")).isEqualTo(1);
		});
	}

	@Test
	void aSkipInPessimisticModeIsCountedAsSkipped() {
		this.runner.withPropertyValues("distributed-lock.mode=PESSIMISTIC").run((context) -> {
			assertThat(context).hasNotFailed();
			MeterRegistry meters = context.getBean(MeterRegistry.class);
			String id = UUID.randomUUID().toString();
			LockTemplate rows = LockNodes.node(LockMode.PESSIMISTIC, "other-rows", pool);
			try (LockHandle busy = rows.acquire("job:" + id)) {
				assertThat(context.getBean(Job.class).runOrSkip(id)).isNull();
			}
			assertThat(count(meters, "skipped")).isEqualTo(1);
			assertThat(count(meters, "timed_out")).isZero();
		});
	}

	private static long count(MeterRegistry meters, String outcome) {
		var timer = meters.find("distributed.lock.acquire").tag("outcome", outcome).timer();
		return (timer != null) ? timer.count() : 0;
	}

	@Configuration(proxyBeanMethods = false)
	static class Jobs {

		@Bean
		MeterRegistry meterRegistry() {
			return new SimpleMeterRegistry();
		}

		@Bean
		ObservationRegistry observationRegistry(MeterRegistry meters) {
			ObservationRegistry observations = ObservationRegistry.create();
			observations.observationConfig().observationHandler(new DefaultMeterObservationHandler(meters));
			return observations;
		}

		@Bean
		Job job() {
			return new Job();
		}

	}

	static class Job {

		@DistributedLock(resource = "job:#{#id}", waitTime = "0", onFailure = OnLockFailure.SKIP)
		public String runOrSkip(String id) {
			return "ran";
		}

		@DistributedLock(resource = "job:#{#id}", waitTime = "0")
		public String runOrThrow(String id) {
			return "ran";
		}

	}

}
