package io.github.dblock.annotations;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import io.github.dblock.interceptor.DistributedLockAdvisor;
import io.github.dblock.interceptor.DistributedSemaphoreAdvisor;
import io.github.dblock.interceptor.EnableDistributedLocks;
import io.github.dblock.interceptor.IdempotentAdvisor;
import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.DistributedLock;
import io.github.dblock.LockIntrospection;
import io.github.dblock.LockTemplate;
import io.github.dblock.autoconfigure.DistributedLockAutoConfiguration;
import io.github.dblock.jdbc.JdbcLockTemplateBuilder;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.Test;
import org.springframework.aop.framework.Advised;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link EnableDistributedLocks} on the real database: in a plain Spring context (no Spring Boot, a
 * {@link LockTemplate} built by hand) {@code @DistributedLock} makes two threads mutually exclusive, and in a Spring
 * Boot application that also has the auto-configuration the annotation adds no second advisor.
 */
class EnableDistributedLocksTests {

	@Test
	void inAPlainSpringContextTwoThreadsCallingALockedMethodNeverOverlap() throws Exception {
		try (AnnotationConfigApplicationContext context = plainContext(PlainLockConfiguration.class)) {
			Worker worker = context.getBean(Worker.class);
			assertThat(runTwoThreadsTogether(worker)).containsExactly(1, 1);
			assertThat(worker.maxInside()).isEqualTo(1);
			assertThat(worker.calls()).isEqualTo(2);
			assertThat(worker.holdCounts()).containsExactly(1, 1);
			assertThat(advisorsOf(worker)).isEqualTo(1);
		}
	}

	/** The control for the test above: without the annotation, the same two calls do overlap. */
	@Test
	void withoutTheAnnotationTheSameCallsOverlap() throws Exception {
		try (AnnotationConfigApplicationContext context = plainContext(UnlockedConfiguration.class)) {
			Worker worker = context.getBean(Worker.class);
			runTwoThreadsTogether(worker);
			assertThat(worker.maxInside()).isEqualTo(2);
			assertThat(worker.holdCounts()).containsExactly(0, 0);
		}
	}

	@Test
	void withSpringBootTheAnnotationAddsNoSecondAdvisor() {
		new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
					DataSourceTransactionManagerAutoConfiguration.class, TransactionAutoConfiguration.class,
					AopAutoConfiguration.class, DistributedLockAutoConfiguration.class))
			.withPropertyValues(TestDatabase.get().springProperties())
			.withUserConfiguration(BootConfiguration.class)
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context.getBeansOfType(DistributedLockAdvisor.class)).hasSize(1);
				assertThat(context.getBeansOfType(DistributedSemaphoreAdvisor.class)).hasSize(1);
				assertThat(context.getBeansOfType(IdempotentAdvisor.class)).hasSize(1);
				Worker worker = context.getBean(Worker.class);
				assertThat(advisorsOf(worker)).isEqualTo(1);
				worker.work();
				worker.work();
				assertThat(worker.calls()).isEqualTo(2);
				// a second interceptor on the same call would re-enter the lock: hold count 2
				assertThat(worker.holdCounts()).containsExactly(1, 1);
			});
	}

	private static AnnotationConfigApplicationContext plainContext(Class<?> configuration) {
		AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext();
		// a pool of its own, closed with the context
		context.registerBean("dataSource", HikariDataSource.class, () -> TestDatabase.get().newDataSource(4));
		context.register(configuration);
		context.refresh();
		return context;
	}

	/** Starts two threads that call the worker at the same moment; returns the hold counts they saw, in order. */
	private static List<Integer> runTwoThreadsTogether(Worker worker) throws Exception {
		CountDownLatch start = new CountDownLatch(1);
		ExecutorService threads = Executors.newFixedThreadPool(2);
		try {
			List<Future<?>> calls = new ArrayList<>();
			for (int i = 0; i < 2; i++) {
				calls.add(threads.submit(() -> {
					start.await();
					worker.work();
					return null;
				}));
			}
			start.countDown();
			for (Future<?> call : calls) {
				call.get(30, TimeUnit.SECONDS);
			}
		}
		finally {
			threads.shutdownNow();
		}
		return List.copyOf(worker.holdCounts());
	}

	private static long advisorsOf(Object bean) {
		return Arrays.stream(((Advised) bean).getAdvisors())
			.filter(DistributedLockAdvisor.class::isInstance)
			.count();
	}

	/**
	 * A locked method that records how many callers are inside it at once and the lock's hold count. Read through
	 * its methods: the fields of a class-based proxy are not the target's.
	 */
	static class Worker {

		static final String RESOURCE = "enable-distributed-locks";

		final AtomicInteger inside = new AtomicInteger();

		final AtomicInteger maxInside = new AtomicInteger();

		final AtomicInteger calls = new AtomicInteger();

		final List<Integer> holdCounts = Collections.synchronizedList(new ArrayList<>());

		private final LockTemplate locks;

		Worker(LockTemplate locks) {
			this.locks = locks;
		}

		int maxInside() {
			return this.maxInside.get();
		}

		int calls() {
			return this.calls.get();
		}

		List<Integer> holdCounts() {
			return List.copyOf(this.holdCounts);
		}

		@DistributedLock(RESOURCE)
		public void work() throws InterruptedException {
			int now = this.inside.incrementAndGet();
			this.maxInside.accumulateAndGet(now, Math::max);
			this.holdCounts.add(this.locks.introspection().localHolds()
				.stream()
				.filter((hold) -> hold.resource().equals(RESOURCE))
				.mapToInt(LockIntrospection.LocalHold::holdCount)
				.sum());
			Thread.sleep(300);
			this.calls.incrementAndGet();
			this.inside.decrementAndGet();
		}

	}

	@Configuration(proxyBeanMethods = false)
	@EnableDistributedLocks
	static class PlainLockConfiguration {

		@Bean
		LockTemplate lockTemplate(DataSource dataSource) {
			return JdbcLockTemplateBuilder.forDataSource(dataSource)
				.nodeName("plain-spring")
				.waitTime(Duration.ofSeconds(10))
				.build();
		}

		@Bean
		Worker worker(LockTemplate lockTemplate) {
			return new Worker(lockTemplate);
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class UnlockedConfiguration {

		@Bean
		LockTemplate lockTemplate(DataSource dataSource) {
			return JdbcLockTemplateBuilder.forDataSource(dataSource).nodeName("plain-spring").build();
		}

		@Bean
		Worker worker(LockTemplate lockTemplate) {
			return new Worker(lockTemplate);
		}

	}

	@Configuration(proxyBeanMethods = false)
	@EnableDistributedLocks
	static class BootConfiguration {

		@Bean
		Worker worker(LockTemplate lockTemplate) {
			return new Worker(lockTemplate);
		}

	}

}
