package io.github.dblock.autoconfigure;

import java.util.UUID;

import io.github.dblock.LockTemplate;
import io.github.dblock.integration.DistributedLockRegistry;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.integration.support.locks.DefaultLockRegistry;
import org.springframework.integration.support.locks.LockRegistry;
import org.springframework.integration.support.locks.RenewableLockRegistry;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link DistributedLockIntegrationAutoConfiguration} on the real test database.
 */
class IntegrationAutoConfigurationTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
				DistributedLockAutoConfiguration.class, DistributedLockIntegrationAutoConfiguration.class))
		.withPropertyValues(TestDatabase.get().springProperties())
		.withPropertyValues("distributed-lock.cleanup.enabled=false");

	@Test
	void withSpringIntegrationARenewableLockRegistryOnTheTemplateIsRegistered() {
		this.runner.run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context).hasSingleBean(LockRegistry.class);
			assertThat(context).hasSingleBean(RenewableLockRegistry.class);
			assertThat(context.getBean(LockRegistry.class)).isInstanceOf(DistributedLockRegistry.class);
			String key = "registry-auto-" + UUID.randomUUID();
			java.util.concurrent.locks.Lock lock = context.getBean(LockRegistry.class).obtain(key);
			lock.lock();
			try {
				// the template's own hold on this thread re-enters: the registry is the template's lock
				assertThat(context.getBean(LockTemplate.class).tryAcquire(key)).isPresent().get()
					.satisfies(io.github.dblock.LockHandle::close);
			}
			finally {
				lock.unlock();
			}
		});
	}

	@Test
	void anApplicationLockRegistryWins() {
		DefaultLockRegistry own = new DefaultLockRegistry();
		this.runner.withBean(LockRegistry.class, () -> own).run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context).hasSingleBean(LockRegistry.class);
			assertThat(context.getBean(LockRegistry.class)).isSameAs(own);
		});
	}

	@Test
	void withoutSpringIntegrationNothingOfItLoads() {
		this.runner.withClassLoader(new FilteredClassLoader("org.springframework.integration")).run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context).hasSingleBean(LockTemplate.class);
			assertThat(context.getBeanNamesForType(DistributedLockIntegrationAutoConfiguration.class)).isEmpty();
			assertThat(context).doesNotHaveBean("distributedLockRegistry");
		});
	}

	@Test
	void thePropertySwitchesItOff() {
		this.runner.withPropertyValues("distributed-lock.integration.enabled=false").run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context).doesNotHaveBean(DistributedLockRegistry.class);
		});
	}

}
