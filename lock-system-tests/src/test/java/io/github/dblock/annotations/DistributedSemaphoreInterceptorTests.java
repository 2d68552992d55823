package io.github.dblock.annotations;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.autoconfigure.DistributedLockAutoConfiguration;
import io.github.dblock.semaphore.DistributedSemaphore;
import io.github.dblock.semaphore.PermitHandle;
import io.github.dblock.semaphore.PermitNotAcquiredException;
import io.github.dblock.semaphore.SemaphoreTemplate;
import io.github.dblock.test.nodes.SemaphoreNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.JdbcTemplateAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionSynchronizationManager;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * {@code @DistributedSemaphore} in a Spring Boot context on the real database: configured pools, SpEL names, the
 * permit count enforced across concurrent calls, the ordering against the method's transaction, and start-up
 * failures for annotations that cannot work. A separate {@link SemaphoreTemplate} ("the other node") observes.
 */
class DistributedSemaphoreInterceptorTests {

	private static final String API = "partner-api-" + UUID.randomUUID();

	private static HikariDataSource otherNodePool;

	private static SemaphoreTemplate otherNode;

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
				DataSourceTransactionManagerAutoConfiguration.class, TransactionAutoConfiguration.class,
				JdbcTemplateAutoConfiguration.class, AopAutoConfiguration.class, DistributedLockAutoConfiguration.class))
		.withPropertyValues(TestDatabase.get().springProperties())
		.withPropertyValues("distributed-lock.node-name=app", "test.api=" + API,
				"distributed-lock.semaphores[" + API + "].permits=2");

	@BeforeAll
	static void otherNode() {
		otherNodePool = TestDatabase.get().newDataSource(4);
		otherNode = SemaphoreNodes.node("other-node", otherNodePool);
	}

	@AfterAll
	static void closePool() {
		otherNodePool.close();
	}

	@Test
	void atMostThePermitCountOfCallsRunAtOnce() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			PartnerClient client = context.getBean(PartnerClient.class);
			assertThat(context.getBean(SemaphoreTemplate.class).getPermits(API)).isEqualTo(2);
			int calls = 8;
			ExecutorService executor = Executors.newFixedThreadPool(calls);
			try {
				List<Future<PermitHandle>> futures = new ArrayList<>();
				for (int i = 0; i < calls; i++) {
					futures.add(executor.submit(() -> client.call(null)));
				}
				List<Long> tokens = new ArrayList<>();
				for (Future<PermitHandle> future : futures) {
					PermitHandle permit = future.get(1, TimeUnit.MINUTES);
					assertThat(permit.name()).isEqualTo(API);
					tokens.add(permit.fencingToken());
				}
				assertThat(tokens).doesNotHaveDuplicates();
			}
			finally {
				executor.shutdownNow();
			}
			assertThat(client.maxInside()).as("N = 2 reached and never exceeded").isEqualTo(2);
			assertThat(otherNode.availablePermits(API)).isEqualTo(2);
		});
	}

	@Test
	void aFullSemaphoreStopsTheCallBeforeTheMethodRuns() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			PartnerClient client = context.getBean(PartnerClient.class);
			PermitHandle first = otherNode.acquire(API);
			PermitHandle second = otherNode.acquire(API);
			try {
				assertThatExceptionOfType(PermitNotAcquiredException.class).isThrownBy(() -> client.quick())
					.withMessageContaining("semaphore '" + API + "'");
				assertThat(client.quickRuns()).isZero();
			}
			finally {
				first.close();
				second.close();
			}
			client.quick();
			assertThat(client.quickRuns()).isEqualTo(1);
		});
	}

	@Test
	void spelAndPlaceholdersNameThePoolAndThePermitWrapsTheTransaction() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			PartnerClient client = context.getBean(PartnerClient.class);
			String tenant = "t-" + UUID.randomUUID();
			otherNode.setPermits(API + ":" + tenant, 1);
			String seen = client.perTenant(tenant);
			assertThat(seen).isEqualTo("tx active=true, permits free for others=0");
			assertThat(otherNode.availablePermits(API + ":" + tenant)).isEqualTo(1);
			assertThatIllegalArgumentException().isThrownBy(() -> client.perTenant(" "))
				.withMessageContaining("@DistributedSemaphore resource expression #{#tenant}")
				.withMessageContaining("PartnerClient.perTenant()");
			String unknown = "never-configured-" + UUID.randomUUID();
			assertThatIllegalArgumentException().isThrownBy(() -> client.perTenant(unknown))
				.withMessageContaining("distributed-lock.semaphores." + API + ":" + unknown + ".permits");
		});
	}

	@Test
	void theConfiguredCountCreatesTheSemaphoreOnceAndARestartKeepsARunTimeChange() {
		String name = "restart-" + UUID.randomUUID();
		ApplicationContextRunner configured = this.runner
			.withPropertyValues("distributed-lock.semaphores[" + name + "].permits=2");
		configured.run((context) -> {
			SemaphoreTemplate semaphores = context.getBean(SemaphoreTemplate.class);
			assertThat(otherNode.getPermits(name)).as("written to the database at start-up").isEqualTo(2);
			semaphores.setPermits(name, 5);
		});
		configured.run((context) -> assertThat(context.getBean(SemaphoreTemplate.class).getPermits(name))
			.as("a restarted instance does not undo the run-time change").isEqualTo(5));
	}

	@Test
	void aPermitCountBelowOneStopsStartUpNamingTheProperty() {
		this.runner.withPropertyValues("distributed-lock.semaphores.reports.permits=0").run((context) -> {
			assertThat(context).hasFailed();
			assertThat(causes(context.getStartupFailure())).contains("distributed-lock.semaphores.reports.permits");
		});
	}

	@Test
	void anAnnotationWithoutANameOrOnAPrivateMethodStopsStartUp() {
		this.runner.withUserConfiguration(Unnamed.class).run((context) -> {
			assertThat(context).hasFailed();
			assertThat(causes(context.getStartupFailure())).contains("@DistributedSemaphore on")
				.contains("Unnamed$Client.call()").contains("has no name");
		});
		this.runner.withUserConfiguration(FinalMethod.class).run((context) -> {
			assertThat(context).hasFailed();
			assertThat(causes(context.getStartupFailure())).contains("@DistributedSemaphore on")
				.contains("FinalMethod$Client.call()").contains("the method is final");
		});
		this.runner.withUserConfiguration(BadDuration.class).run((context) -> {
			assertThat(context).hasFailed();
			assertThat(causes(context.getStartupFailure())).contains("waitTime 'soon'").contains("is not a duration");
		});
	}

	private static String causes(Throwable failure) {
		StringBuilder all = new StringBuilder();
		for (Throwable t = failure; t != null; t = t.getCause()) {
			all.append(t.getMessage()).append('\n');
		}
		return all.toString();
	}

	@Configuration(proxyBeanMethods = false)
	static class Services {

		@Bean
		PartnerClient partnerClient() {
			return new PartnerClient();
		}

	}

	public static class PartnerClient {

		final AtomicInteger inside = new AtomicInteger();

		final AtomicInteger maxInside = new AtomicInteger();

		final AtomicInteger quickRuns = new AtomicInteger();

		final CountDownLatch twoInside = new CountDownLatch(2);

		/** Read through the proxy: its own fields are not the target's. */
		public int maxInside() {
			return this.maxInside.get();
		}

		public int quickRuns() {
			return this.quickRuns.get();
		}

		@DistributedSemaphore(name = "${test.api}", waitTime = "30s")
		public PermitHandle call(PermitHandle permit) throws InterruptedException {
			int now = this.inside.incrementAndGet();
			this.maxInside.accumulateAndGet(now, Math::max);
			this.twoInside.countDown();
			this.twoInside.await(10, TimeUnit.SECONDS); // the first two callers meet inside
			Thread.sleep(5);
			this.inside.decrementAndGet();
			return permit;
		}

		@DistributedSemaphore(name = "${test.api}", waitTime = "0")
		public void quick() {
			this.quickRuns.incrementAndGet();
		}

		@DistributedSemaphore(name = "${test.api}:#{#tenant}", waitTime = "2s")
		@Transactional
		public String perTenant(String tenant) {
			return "tx active=" + TransactionSynchronizationManager.isActualTransactionActive()
					+ ", permits free for others=" + otherNode.availablePermits(API + ":" + tenant);
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class Unnamed {

		@Bean
		Client client() {
			return new Client();
		}

		public static class Client {

			@DistributedSemaphore(waitTime = "1s")
			public void call() {
			}

		}

	}

	@Configuration(proxyBeanMethods = false)
	static class FinalMethod {

		@Bean
		Client client() {
			return new Client();
		}

		public static class Client {

			@DistributedSemaphore(name = "x")
			public final void call() {
			}

		}

	}

	@Configuration(proxyBeanMethods = false)
	static class BadDuration {

		@Bean
		Client client() {
			return new Client();
		}

		public static class Client {

			@DistributedSemaphore(name = "x", waitTime = "soon")
			public void call() {
			}

		}

	}

}
