package io.github.dblock.interceptor;

import java.util.Map;

import io.github.dblock.DistributedLock;
import org.junit.jupiter.api.Test;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.BeanCreationException;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import org.springframework.core.env.MapPropertySource;
import org.springframework.util.ClassUtils;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * {@link EnableDistributedLocks} with only lock-spring's own dependencies on the class path (no Spring Boot): the
 * advisors, their orders and the start-up validation. No annotated method is called, so no lock is taken and no
 * {@code LockTemplate} is needed (the advisors look it up on the first call); the locking itself is tested on the
 * real database by lock-system-tests' {@code EnableDistributedLocksTests}.
 */
class EnableDistributedLocksWithoutBootTests {

	@Test
	void springBootIsNotOnTheClassPath() {
		assertThat(ClassUtils.isPresent("org.springframework.boot.SpringApplication", getClass().getClassLoader()))
			.isFalse();
	}

	@Test
	void theAdvisorsAreRegisteredOnceWithTheirDefaultOrdersAndAnnotatedBeansAreClassProxies() {
		try (AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext(Locked.class)) {
			assertThat(context.getBeansOfType(DistributedLockAdvisor.class)).hasSize(1);
			assertThat(context.getBean(DistributedLockAdvisor.class).getOrder())
				.isEqualTo(DistributedLocksConfiguration.DEFAULT_INTERCEPTOR_ORDER)
				.isEqualTo(Ordered.LOWEST_PRECEDENCE - 100);
			assertThat(context.getBean(DistributedSemaphoreAdvisor.class).getOrder())
				.isEqualTo(DistributedLocksConfiguration.DEFAULT_INTERCEPTOR_ORDER);
			assertThat(context.getBean(IdempotentAdvisor.class).getOrder()).isEqualTo(Ordered.LOWEST_PRECEDENCE);
			assertThat(AopUtils.isCglibProxy(context.getBean(Worker.class))).isTrue();
		}
	}

	@Test
	void theOrdersAndTheProxyTypeComeFromTheEnvironment() {
		try (AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext()) {
			context.getEnvironment()
				.getPropertySources()
				.addFirst(new MapPropertySource("test", Map.of("distributed-lock.interceptor.order", "5",
						"distributed-lock.idempotency.order", "7", "spring.aop.proxy-target-class", "false")));
			context.register(LockedInterface.class);
			context.refresh();
			assertThat(context.getBean(DistributedLockAdvisor.class).getOrder()).isEqualTo(5);
			assertThat(context.getBean(DistributedSemaphoreAdvisor.class).getOrder()).isEqualTo(5);
			assertThat(context.getBean(IdempotentAdvisor.class).getOrder()).isEqualTo(7);
			assertThat(AopUtils.isJdkDynamicProxy(context.getBean(Job.class))).isTrue();
		}
	}

	@Test
	void aFinalAnnotatedMethodStopsStartUp() {
		try (AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext()) {
			context.register(FinalMethod.class);
			assertThatExceptionOfType(BeanCreationException.class).isThrownBy(context::refresh)
				.havingRootCause()
				.isInstanceOf(IneffectiveAnnotationException.class)
				.withMessageContaining("FinalWorker.work")
				.withMessageContaining("final");
		}
	}

	@Test
	void withoutTheAnnotationNothingIsAdvised() {
		try (AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext(Unlocked.class)) {
			assertThat(context.getBeansOfType(DistributedLockAdvisor.class)).isEmpty();
			assertThat(AopUtils.isAopProxy(context.getBean(Worker.class))).isFalse();
		}
	}

	public static class Worker {

		@DistributedLock("work")
		public void work() {
		}

	}

	public static class FinalWorker {

		@DistributedLock("work")
		public final void work() {
		}

	}

	public interface Job {

		void run();

	}

	public static class LockedJob implements Job {

		@Override
		@DistributedLock("job")
		public void run() {
		}

	}

	@Configuration(proxyBeanMethods = false)
	@EnableDistributedLocks
	static class Locked {

		@Bean
		Worker worker() {
			return new Worker();
		}

	}

	@Configuration(proxyBeanMethods = false)
	@EnableDistributedLocks
	static class LockedInterface {

		@Bean
		Job job() {
			return new LockedJob();
		}

	}

	@Configuration(proxyBeanMethods = false)
	@EnableDistributedLocks
	static class FinalMethod {

		@Bean
		FinalWorker finalWorker() {
			return new FinalWorker();
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class Unlocked {

		@Bean
		Worker worker() {
			return new Worker();
		}

	}

}
