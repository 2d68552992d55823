package io.github.dblock.annotations;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.CurrentLock;
import io.github.dblock.DistributedLock;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.LockType;
import io.github.dblock.LockUpgradeException;
import io.github.dblock.autoconfigure.DistributedLockAutoConfiguration;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * {@code @DistributedLock(type = READ | WRITE)} in a Spring Boot context on the real database: readers of the
 * annotated method overlap, a writer excludes everyone (checked from an independent node), a read method calling a
 * write method of the same resource gets the upgrade error, and READ/WRITE outside LEASE stops start-up.
 */
class ReadWriteLockInterceptorTests {

	private static HikariDataSource otherNodePool;

	private static LockTemplate otherNode;

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
				DataSourceTransactionManagerAutoConfiguration.class, TransactionAutoConfiguration.class,
				AopAutoConfiguration.class, DistributedLockAutoConfiguration.class))
		.withPropertyValues(TestDatabase.get().springProperties())
		.withPropertyValues("distributed-lock.node-name=app");

	@BeforeAll
	static void otherNode() {
		otherNodePool = TestDatabase.get().newDataSource(4);
		LockNodes.migrateOnce(otherNodePool);
		otherNode = LockNodes.node(LockMode.LEASE, "other-node", otherNodePool);
	}

	@AfterAll
	static void closePool() {
		otherNodePool.close();
	}

	private static boolean freeForOthers(String resource, LockType type) {
		Optional<LockHandle> probe = otherNode.tryAcquire(resource, LockOptions.defaults().withType(type));
		probe.ifPresent(LockHandle::close);
		return probe.isPresent();
	}

	@Test
	void readMethodsOverlapAndExcludeWritersAndWriteMethodsExcludeEveryone() throws Exception {
		this.runner.withUserConfiguration(Catalog.class).run((context) -> {
			assertThat(context).hasNotFailed();
			CatalogService catalog = context.getBean(CatalogService.class);
			String id = UUID.randomUUID().toString();
			String resource = "catalog:" + id;
			int readers = 4;
			CyclicBarrier allInside = new CyclicBarrier(readers + 1);
			ExecutorService executor = Executors.newFixedThreadPool(readers);
			try {
				List<Future<LockType>> calls = new ArrayList<>();
				for (int i = 0; i < readers; i++) {
					calls.add(executor.submit(() -> catalog.read(id, null, () -> {
						allInside.await(30, TimeUnit.SECONDS); // all readers inside at once, with the test thread
						allInside.await(30, TimeUnit.SECONDS); // stay until the test thread has probed
						return null;
					})));
				}
				allInside.await(30, TimeUnit.SECONDS);
				assertThat(freeForOthers(resource, LockType.WRITE)).as("a writer while readers are inside").isFalse();
				assertThat(freeForOthers(resource, LockType.READ)).as("another reader").isTrue();
				allInside.await(30, TimeUnit.SECONDS);
				for (Future<LockType> call : calls) {
					assertThat(call.get(30, TimeUnit.SECONDS)).as("the handle passed in").isEqualTo(LockType.READ);
				}
			}
			finally {
				executor.shutdownNow();
			}
			LockType seen = catalog.write(id, () -> {
				assertThat(freeForOthers(resource, LockType.READ)).as("a reader while the writer is inside").isFalse();
				assertThat(freeForOthers(resource, LockType.WRITE)).as("a writer while the writer is inside").isFalse();
				assertThat(CurrentLock.get(resource)).hasValueSatisfying((lock) -> assertThat(lock.type())
					.isEqualTo(LockType.WRITE));
				return null;
			});
			assertThat(seen).isEqualTo(LockType.WRITE);
			assertThat(freeForOthers(resource, LockType.WRITE)).as("released after the method").isTrue();
			assertThat(context.getBean(LockTemplate.class).introspection().localResourceCount()).isZero();
		});
	}

	@Test
	void aReadMethodCallingAWriteMethodOfTheSameResourceGetsTheUpgradeErrorAndAWriteMethodMayCallAReadMethod() {
		this.runner.withUserConfiguration(Catalog.class).run((context) -> {
			CatalogService catalog = context.getBean(CatalogService.class);
			String id = UUID.randomUUID().toString();
			assertThatExceptionOfType(LockUpgradeException.class)
				.isThrownBy(() -> catalog.read(id, null, () -> catalog.write(id, () -> null)))
				.withMessageContaining("catalog:" + id);
			assertThat(catalog.write(id, () -> catalog.read(id, null, () -> null))).isEqualTo(LockType.WRITE);
			assertThat(freeForOthers("catalog:" + id, LockType.WRITE)).isTrue();
			assertThat(context.getBean(LockTemplate.class).introspection().localResourceCount()).isZero();
		});
	}

	@Test
	void readOrWriteWithAModeOtherThanLeaseStopsStartUpNamingTheMethod() {
		this.runner.withUserConfiguration(OptimisticRead.class)
			.run((context) -> assertFailure(context, "OptimisticReader.read()", "type = READ needs mode = LEASE",
					"OPTIMISTIC has no lock to hold"));
		this.runner.withUserConfiguration(PessimisticWrite.class)
			.run((context) -> assertFailure(context, "PessimisticWriter.write()", "type = WRITE needs mode = LEASE",
					"PESSIMISTIC"));
		this.runner.withUserConfiguration(Catalog.class)
			.withPropertyValues("distributed-lock.mode=pessimistic")
			.run((context) -> assertFailure(context, "CatalogService.", "needs LEASE mode", "distributed-lock.mode is PESSIMISTIC",
					"mode = LockMode.LEASE"));
	}

	private static void assertFailure(AssertableApplicationContext context, String method, String... reasons) {
		assertThat(context).hasFailed();
		List<String> messages = new ArrayList<>();
		for (Throwable t = context.getStartupFailure(); t != null; t = t.getCause()) {
			messages.add(String.valueOf(t.getMessage()));
		}
		assertThat(messages).as("start-up failure").anySatisfy((message) -> {
			assertThat(message).contains("@DistributedLock on ").contains(method);
			for (String reason : reasons) {
				assertThat(message).contains(reason);
			}
		});
	}

	@Configuration(proxyBeanMethods = false)
	static class Catalog {

		@Bean
		CatalogService catalogService() {
			return new CatalogService();
		}

	}

	public static class CatalogService {

		@DistributedLock(resource = "catalog:#{#id}", type = LockType.READ, waitTime = "10s")
		public LockType read(String id, LockHandle lock, Callable<?> inside) throws Exception {
			inside.call();
			return lock.type();
		}

		@DistributedLock(resource = "catalog:#{#id}", type = LockType.WRITE, waitTime = "10s")
		public LockType write(String id, Callable<?> inside) throws Exception {
			inside.call();
			return CurrentLock.get().orElseThrow().type();
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class OptimisticRead {

		@Bean
		OptimisticReader optimisticReader() {
			return new OptimisticReader();
		}

	}

	public static class OptimisticReader {

		@DistributedLock(resource = "x", type = LockType.READ, mode = LockMode.OPTIMISTIC)
		public void read() {
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class PessimisticWrite {

		@Bean
		PessimisticWriter pessimisticWriter() {
			return new PessimisticWriter();
		}

	}

	public static class PessimisticWriter {

		@DistributedLock(resource = "x", type = LockType.WRITE, mode = LockMode.PESSIMISTIC)
		public void write() {
		}

	}

}
