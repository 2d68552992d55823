package io.github.dblock.autoconfigure;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;

import io.github.dblock.LockTemplate;
import io.github.dblock.jdbc.admin.LockTableAdmin;
import io.github.dblock.shedlock.DistributedLockShedLockProvider;
import io.github.dblock.test.TestDatabase;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.core.LockAssert;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.spring.annotation.EnableSchedulerLock;
import net.javacrumbs.shedlock.spring.annotation.SchedulerLock;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link DistributedLockShedLockAutoConfiguration} on the real test database, and the {@code @SchedulerLock}
 * mappings end to end: lockAtMostFor is the lease on the server's clock, lockAtLeastFor the minimum hold.
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class ShedLockAutoConfigurationTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
				DistributedLockAutoConfiguration.class, DistributedLockShedLockAutoConfiguration.class))
		.withPropertyValues(TestDatabase.get().springProperties())
		.withPropertyValues("distributed-lock.cleanup.enabled=false");

	@Test
	void withShedLockOnTheClassPathAnExtensibleLockProviderOnTheLockTableIsRegistered() {
		this.runner.run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context).hasSingleBean(LockProvider.class);
			assertThat(context.getBean(LockProvider.class)).isInstanceOf(ExtensibleLockProvider.class)
				.isInstanceOf(DistributedLockShedLockProvider.class);
			String name = "shedlock-auto-" + UUID.randomUUID();
			LockProvider provider = context.getBean(LockProvider.class);
			SimpleLock lock = provider.lock(new LockConfiguration(java.time.Instant.now(), name, Duration.ofSeconds(30),
					Duration.ZERO)).orElseThrow();
			// the same lock as the template's: the template's holder on this thread is another owner
			assertThat(context.getBean(LockTemplate.class).tryAcquire(name)).isEmpty();
			assertThat(context.getBean(LockTableAdmin.class).find(name).orElseThrow().holder()).endsWith("(ShedLock)");
			lock.unlock();
			assertThat(context.getBean(LockTableAdmin.class).isLocked(name)).isFalse();
			// and the template's reentrancy does not leak into ShedLock: this thread's hold is another owner to it
			try (io.github.dblock.LockHandle held = context.getBean(LockTemplate.class).acquire(name)) {
				assertThat(provider.lock(new LockConfiguration(java.time.Instant.now(), name, Duration.ofSeconds(30),
						Duration.ZERO))).isEmpty();
			}
			SimpleLock again = provider.lock(new LockConfiguration(java.time.Instant.now(), name,
					Duration.ofDays(365_000), Duration.ZERO)).orElseThrow(); // beyond the longest lease: capped
			again.unlock();
		});
	}

	@Test
	void anApplicationLockProviderWins() {
		LockProvider own = (configuration) -> Optional.empty();
		this.runner.withBean("ownLockProvider", LockProvider.class, () -> own).run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context).hasSingleBean(LockProvider.class);
			assertThat(context.getBean(LockProvider.class)).isSameAs(own);
		});
	}

	@Test
	void withoutShedLockOnTheClassPathNothingOfItLoads() {
		this.runner.withClassLoader(new FilteredClassLoader("net.javacrumbs.shedlock")).run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context).hasSingleBean(LockTemplate.class);
			assertThat(context).doesNotHaveBean(DistributedLockShedLockProvider.class);
			assertThat(context.getBeanNamesForType(DistributedLockShedLockAutoConfiguration.class)).isEmpty();
		});
	}

	@Test
	void withShedLockCoreButNotShedLockSpringNothingLoads() {
		this.runner.withClassLoader(new FilteredClassLoader("net.javacrumbs.shedlock.spring")).run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context).doesNotHaveBean(DistributedLockShedLockProvider.class);
		});
	}

	@Test
	void thePropertySwitchesItOff() {
		this.runner.withPropertyValues("distributed-lock.shedlock.enabled=false").run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context).doesNotHaveBean(DistributedLockShedLockProvider.class);
		});
	}

	@Test
	void withoutTheLockAutoConfigurationNothingLoads() {
		this.runner.withPropertyValues("distributed-lock.enabled=false").run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context).doesNotHaveBean(DistributedLockShedLockProvider.class);
		});
	}

	@Test
	void schedulerLockMapsLockAtMostForToTheLeaseAndLockAtLeastForToTheMinimumHold() {
		this.runner.withUserConfiguration(ScheduledJobsConfiguration.class).run((context) -> {
			assertThat(context).hasNotFailed();
			ScheduledJobs jobs = context.getBean(ScheduledJobs.class);
			LockTableAdmin admin = context.getBean(LockTableAdmin.class);
			jobs.report();
			// inside the task: locked, with a lease of lockAtMostFor (30 s) on the server's clock
			assertThat(jobs.lockedInside()).isTrue(); // read through the proxy: its target ran the task
			assertThat(jobs.secondsLeftInside()).isBetween(29.0, 30.0);
			// after it: still taken for lockAtLeastFor (1 s) from the acquisition, then free
			assertThat(admin.isLocked(ScheduledJobs.NAME)).isTrue();
			assertThat(context.getBean(LockProvider.class)
				.lock(new LockConfiguration(java.time.Instant.now(), ScheduledJobs.NAME, Duration.ofSeconds(5), Duration.ZERO)))
				.isEmpty();
			Thread.sleep(1200);
			assertThat(admin.isLocked(ScheduledJobs.NAME)).isFalse();
		});
	}

	@Configuration(proxyBeanMethods = false)
	@EnableSchedulerLock(defaultLockAtMostFor = "PT1M", interceptMode = EnableSchedulerLock.InterceptMode.PROXY_METHOD)
	static class ScheduledJobsConfiguration {

		@Bean
		ScheduledJobs scheduledJobs(LockTableAdmin admin, javax.sql.DataSource dataSource) {
			return new ScheduledJobs(admin, dataSource);
		}

	}

	static class ScheduledJobs {

		static final String NAME = "shedlock-report-job";

		private final LockTableAdmin admin;

		private final javax.sql.DataSource dataSource;

		volatile boolean lockedInside;

		volatile double secondsLeftInside;

		ScheduledJobs(LockTableAdmin admin, javax.sql.DataSource dataSource) {
			this.admin = admin;
			this.dataSource = dataSource;
		}

		public boolean lockedInside() {
			return this.lockedInside;
		}

		public double secondsLeftInside() {
			return this.secondsLeftInside;
		}

		@SchedulerLock(name = NAME, lockAtMostFor = "PT30S", lockAtLeastFor = "PT1S")
		public void report() {
			LockAssert.assertLocked();
			this.lockedInside = this.admin.isLocked(NAME);
			this.secondsLeftInside = new JdbcTemplate(this.dataSource).queryForObject(
					"SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) / 1e6 FROM distributed_lock"
							+ " WHERE resource = ?", Double.class, NAME.getBytes(StandardCharsets.UTF_8));
		}

	}

}
