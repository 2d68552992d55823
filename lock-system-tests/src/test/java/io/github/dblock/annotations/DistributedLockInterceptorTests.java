package io.github.dblock.annotations;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.DistributedLock;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockNotAcquiredException;
import io.github.dblock.LockTemplate;
import io.github.dblock.autoconfigure.DistributedLockAutoConfiguration;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.Reliability;
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
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * {@code @DistributedLock} in a Spring Boot context on the real database: SpEL resources, misuse errors, and the
 * ordering against Spring's transactions. A second, independent {@link LockTemplate} ("the other node") probes
 * whether the application holds a lock at a given moment.
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class DistributedLockInterceptorTests {

	private static HikariDataSource otherNodePool;

	private static LockTemplate otherNode;

	private static LockTemplate otherPessimisticNode;

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
				DataSourceTransactionManagerAutoConfiguration.class, TransactionAutoConfiguration.class,
				JdbcTemplateAutoConfiguration.class, AopAutoConfiguration.class, DistributedLockAutoConfiguration.class))
		.withPropertyValues(TestDatabase.get().springProperties())
		.withPropertyValues("distributed-lock.node-name=app", "test.prefix=tenant-7");

	@BeforeAll
	static void otherNode() {
		otherNodePool = TestDatabase.get().newDataSource(4);
		LockNodes.migrateOnce(otherNodePool);
		otherNode = LockNodes.node(LockMode.LEASE, "other-node", otherNodePool);
		otherPessimisticNode = LockNodes.node(LockMode.PESSIMISTIC, "other-pessimistic-node", otherNodePool);
		TestDatabase.get().execute("CREATE TABLE IF NOT EXISTS lock_test_item (id VARCHAR(64) PRIMARY KEY, note VARCHAR(64))");
	}

	@AfterAll
	static void closePool() {
		otherNodePool.close();
	}

	/** Whether another node could take the lock right now (it gives it back at once). */
	static boolean freeForOthers(String resource) {
		Optional<LockHandle> probe = otherNode.tryAcquire(resource);
		probe.ifPresent(LockHandle::close);
		return probe.isPresent();
	}

	/** Whether another node could take the row lock right now, without waiting (it gives it back at once). */
	static boolean rowLockFreeForOthers(String resource) {
		Optional<LockHandle> probe = otherPessimisticNode.tryAcquire(resource);
		probe.ifPresent(LockHandle::close);
		return probe.isPresent();
	}

	static boolean committedRowVisible(String id) {
		return new JdbcTemplate(otherNodePool).queryForObject("SELECT COUNT(*) FROM lock_test_item WHERE id = ?",
				Integer.class, id) == 1;
	}

	@Test
	void theLockIsTakenBeforeTheMethodsTransactionBeginsAndReleasedAfterItCommits() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			Inventory inventory = context.getBean(Inventory.class);
			String id = UUID.randomUUID().toString();
			inventory.reserve(new Item(id));
			assertThat(inventory.events()).containsExactly("in method: tx active=true, free for others=false",
					"after commit: free for others=false, row visible to others=true");
			assertThat(freeForOthers("item:" + id)).isTrue();
		});
	}

	@Test
	void insideACallersTransactionTheReleaseWaitsForThatTransactionToComplete() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			Caller caller = context.getBean(Caller.class);
			String id = UUID.randomUUID().toString();
			List<String> seen = new ArrayList<>();
			caller.inTransaction(id, () -> seen.add("after locked method returned, still in caller's tx: free for others="
					+ freeForOthers("item:" + id) + ", row visible=" + committedRowVisible(id)));
			// Were the lock released when the locked method returned, another node could take it and would not see
			// the row written under it: the first entry would say "free for others=true".
			assertThat(seen).containsExactly(
					"after locked method returned, still in caller's tx: free for others=false, row visible=false");
			assertThat(committedRowVisible(id)).isTrue();
			assertThat(freeForOthers("item:" + id)).isTrue();
		});
	}

	@Test
	void aRollbackOfTheCallersTransactionAlsoReleasesTheLock() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			Caller caller = context.getBean(Caller.class);
			String id = UUID.randomUUID().toString();
			assertThatExceptionOfType(IllegalStateException.class).isThrownBy(() -> caller.inTransaction(id, () -> {
				assertThat(freeForOthers("item:" + id)).isFalse();
				throw new IllegalStateException("business failure");
			}));
			assertThat(committedRowVisible(id)).isFalse();
			assertThat(freeForOthers("item:" + id)).isTrue();
		});
	}

	@Test
	void resourcesAreTemplatesOverArgumentsPropertiesAndBeans() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			Inventory inventory = context.getBean(Inventory.class);
			String key = UUID.randomUUID().toString();
			assertThat(inventory.byPosition(key)).isEqualTo("pos:" + key + " held=true");
			assertThat(inventory.withPlaceholderAndBean(key)).isEqualTo("tenant-7:KEY-" + key + " held=true");
			assertThat(inventory.literal()).isEqualTo("literal held=true");
			assertThat(freeForOthers("pos:" + key)).isTrue();
		});
	}

	@Test
	void anExpressionEvaluatingToNullOrBlankFailsTheCallBeforeTheMethodRuns() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			Inventory inventory = context.getBean(Inventory.class);
			assertThatIllegalArgumentException().isThrownBy(() -> inventory.nullable(null))
				.withMessageContaining("#{#value}")
				.withMessageContaining("Inventory.nullable()")
				.withMessageContaining("null");
			assertThatIllegalArgumentException().isThrownBy(() -> inventory.nullable(" "))
				.withMessageContaining("blank");
			assertThat(inventory.calls()).hasValue(0);
			Reliability.count(LockMode.LEASE.name(), "bad inputs tried", 2);
		});
	}

	@Test
	void aLockHeldElsewhereMakesTheCallFailWithoutRunningTheMethod() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			Inventory inventory = context.getBean(Inventory.class);
			String key = UUID.randomUUID().toString();
			try (LockHandle held = otherNode.acquire("n:" + key)) {
				assertThatExceptionOfType(LockNotAcquiredException.class).isThrownBy(() -> inventory.nullable(key))
					.withMessageContaining("other-node");
			}
			assertThat(inventory.calls()).hasValue(0);
			inventory.nullable(key);
			assertThat(inventory.calls()).hasValue(1);
		});
	}

	@Test
	void aMethodThatThrowsStillReleasesItsLock() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			Inventory inventory = context.getBean(Inventory.class);
			String key = UUID.randomUUID().toString();
			assertThatExceptionOfType(UnsupportedOperationException.class).isThrownBy(() -> inventory.failing(key));
			assertThat(freeForOthers("fail:" + key)).isTrue();
		});
	}

	@Test
	void aPessimisticLockRunsTheMethodInTheLockTransactionAndCommitsItsWritesWithTheRelease() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			ModeServices modes = context.getBean(ModeServices.class);
			String id = UUID.randomUUID().toString();
			assertThat(modes.pessimistic(id, false))
				.isEqualTo("tx active=true, lock free for others=false, row visible to others=false");
			assertThat(committedRowVisible(id)).isTrue();
			assertThat(rowLockFreeForOthers("pessimistic:" + id)).isTrue();
		});
	}

	@Test
	void aPessimisticMethodThatThrowsUncheckedRollsBackAndReleasesButACheckedExceptionCommits() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			ModeServices modes = context.getBean(ModeServices.class);
			String rolledBack = UUID.randomUUID().toString();
			assertThatExceptionOfType(IllegalStateException.class).isThrownBy(() -> modes.pessimistic(rolledBack, true));
			assertThat(committedRowVisible(rolledBack)).isFalse();
			assertThat(rowLockFreeForOthers("pessimistic:" + rolledBack)).isTrue();
			String committed = UUID.randomUUID().toString();
			assertThatExceptionOfType(java.io.IOException.class).isThrownBy(() -> modes.pessimisticChecked(committed));
			assertThat(committedRowVisible(committed)).isTrue();
			assertThat(rowLockFreeForOthers("pessimistic:" + committed)).isTrue();
		});
	}

	@Test
	void anOptimisticMethodIsRunAgainAfterAConflictAndOnlyTheLastRunsWritesCommit() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			ModeServices modes = context.getBean(ModeServices.class);
			String id = UUID.randomUUID().toString();
			assertThat(modes.optimistic(id)).isEqualTo(2);
			assertThat(new JdbcTemplate(otherNodePool).queryForList("SELECT note FROM lock_test_item WHERE id = ?",
					String.class, id)).containsExactly("run 2");
		});
	}

	@Test
	void aLockHandleParameterAndCurrentLockGiveTheMethodTheFencingToken() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			LifecycleServices services = context.getBean(LifecycleServices.class);
			String id = UUID.randomUUID().toString();
			long[] tokens = services.tokens(id, null);
			assertThat(tokens[0]).isPositive().isEqualTo(tokens[1]);
			assertThat(services.tokens(id, null)[0]).as("next acquisition").isGreaterThan(tokens[0]);
		});
	}

	@Test
	void aLeaseLostWhileTheMethodRanFailsTheCallAfterTheMethodReturns() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			LifecycleServices services = context.getBean(LifecycleServices.class);
			String id = UUID.randomUUID().toString();
			assertThatExceptionOfType(io.github.dblock.LockLostException.class).isThrownBy(() -> services.outlivesLease(id))
				.withMessageContaining("slow:" + id);
			assertThat(services.completed()).hasValue(1);
		});
	}

	@Test
	void aMinimumHoldTimeOnTheAnnotationKeepsTheLockAfterTheMethodReturns() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			LifecycleServices services = context.getBean(LifecycleServices.class);
			String id = UUID.randomUUID().toString();
			services.holdAtLeast(id);
			assertThat(freeForOthers("tick:" + id)).as("right after the method returned").isFalse();
			Thread.sleep(1_200);
			assertThat(freeForOthers("tick:" + id)).isTrue();
		});
	}

	@Test
	void withADedicatedLockPoolAPessimisticLockIsReleasedOnlyAfterTheMethodsTransactionOnTheOtherPoolCommits() {
		new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(TransactionAutoConfiguration.class, AopAutoConfiguration.class,
					DistributedLockAutoConfiguration.class))
			.withUserConfiguration(TwoPools.class)
			// the dedicated lock pool has 4 connections: the PESSIMISTIC cap must stay below it (LockPoolChecks)
			.withPropertyValues("distributed-lock.pessimistic.max-connections=3")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				TwoPools.Orders orders = context.getBean(TwoPools.Orders.class);
				String id = UUID.randomUUID().toString();
				// Were the lock committed with the application's transaction manager (which manages the other pool),
				// it would be released before the order commits, and afterCommit would find it free.
				orders.place(id);
				assertThat(orders.seen()).containsExactly("after the order committed: lock free for others=false");
				assertThat(committedRowVisible(id)).isTrue();
				assertThat(rowLockFreeForOthers("order:" + id)).isTrue();
			});
	}

	@Test
	void onFailureSkipDoesNotRunTheMethodAndReturnsNothingOfTheRightShape() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			FailurePolicies policies = context.getBean(FailurePolicies.class);
			String id = UUID.randomUUID().toString();
			try (LockHandle held = otherNode.acquire("busy:" + id)) {
				assertThat(policies.skipObject(id)).isNull();
				assertThat(policies.skipOptional(id)).isEmpty();
				assertThat(policies.skipInt(id)).isZero();
				assertThat(policies.skipBoolean(id)).isFalse();
				policies.skipVoid(id);
				assertThat(policies.runs()).hasValue(0);
			}
			assertThat(policies.skipOptional(id)).contains("ran");
			assertThat(policies.skipInt(id)).isEqualTo(7);
			assertThat(policies.runs()).hasValue(2);
		});
	}

	@Test
	void aFailureHandlerBeanReceivesTheResourceMethodAndArgumentsAndGivesTheResult() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			FailurePolicies policies = context.getBean(FailurePolicies.class);
			String id = UUID.randomUUID().toString();
			try (LockHandle held = otherNode.acquire("busy:" + id)) {
				assertThat(policies.withFallback(id)).isEqualTo("fallback for busy:" + id + " in withFallback(" + id
						+ ") held by other-node");
			}
			assertThat(policies.runs()).hasValue(0);
		});
	}

	@Test
	void skipAndAFailureHandlerTogetherStopStartUp() {
		this.runner.withUserConfiguration(BothPolicies.class).run((context) -> {
			assertThat(context).hasFailed();
			assertThat(messages(context.getStartupFailure())).anySatisfy((message) -> assertThat(message)
				.contains("BothPolicies$Worker.work()")
				.contains("not both"));
			Reliability.count(Reliability.ALL_MODES, "bad inputs tried", 1);
		});
	}

	@Test
	void anExpressionThatDoesNotParseStopsStartUpNamingTheMethod() {
		this.runner.withUserConfiguration(BrokenExpression.class).run((context) -> {
			assertThat(context).hasFailed();
			assertThat(messages(context.getStartupFailure())).anySatisfy((message) -> assertThat(message)
				.contains("BrokenExpression$Worker.work()")
				.contains("does not parse"));
			Reliability.count(Reliability.ALL_MODES, "bad inputs tried", 1);
		});
	}

	@Test
	void anUnparsableDurationStopsStartUpNamingTheMethod() {
		this.runner.withUserConfiguration(BrokenDuration.class).run((context) -> {
			assertThat(context).hasFailed();
			assertThat(messages(context.getStartupFailure())).anySatisfy((message) -> assertThat(message)
				.contains("BrokenDuration$Worker.work()")
				.contains("waitTime '5 parsecs' is not a duration"));
			Reliability.count(Reliability.ALL_MODES, "bad inputs tried", 1);
		});
	}

	@Test
	void aMissingResourceStopsStartUpNamingTheMethod() {
		this.runner.withUserConfiguration(MissingResource.class).run((context) -> {
			assertThat(context).hasFailed();
			assertThat(messages(context.getStartupFailure())).anySatisfy((message) -> assertThat(message)
				.contains("MissingResource$Worker.work()")
				.contains("has no resource"));
			Reliability.count(Reliability.ALL_MODES, "bad inputs tried", 1);
		});
	}

	private static List<String> messages(Throwable failure) {
		List<String> messages = new ArrayList<>();
		for (Throwable t = failure; t != null; t = t.getCause()) {
			messages.add(String.valueOf(t.getMessage()));
		}
		return messages;
	}

	record Item(String id) {
	}

	@Configuration(proxyBeanMethods = false)
	static class Services {

		@Bean
		Inventory inventory(JdbcTemplate jdbc) {
			return new Inventory(jdbc);
		}

		@Bean
		Caller caller(Inventory inventory) {
			return new Caller(inventory);
		}

		@Bean
		Keys keys() {
			return new Keys();
		}

		@Bean
		FailurePolicies failurePolicies() {
			return new FailurePolicies();
		}

		@Bean
		io.github.dblock.LockFailureHandler busyFallback() {
			return (failure) -> "fallback for " + failure.resource() + " in " + failure.method().getName() + "("
					+ failure.arguments()[0] + ") held by " + failure.exception().getHolder().split(" ")[0];
		}

		@Bean
		LifecycleServices lifecycleServices() {
			return new LifecycleServices();
		}

		@Bean
		ModeServices modeServices(JdbcTemplate jdbc) {
			return new ModeServices(jdbc);
		}

	}

	public static class Keys {

		public String key(String raw) {
			return "KEY-" + raw;
		}

	}

	public static class Inventory {

		final JdbcTemplate jdbc;

		final List<String> events = new ArrayList<>();

		final AtomicInteger calls = new AtomicInteger();

		Inventory(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		public List<String> events() {
			return this.events;
		}

		public AtomicInteger calls() {
			return this.calls;
		}

		@DistributedLock(resource = "item:#{#item.id}")
		@Transactional
		public void reserve(Item item) {
			String resource = "item:" + item.id();
			this.events.add("in method: tx active=" + TransactionSynchronizationManager.isActualTransactionActive()
					+ ", free for others=" + freeForOthers(resource));
			this.jdbc.update("INSERT INTO lock_test_item (id, note) VALUES (?, 'reserve')", item.id());
			TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
				@Override
				public void afterCommit() {
					Inventory.this.events.add("after commit: free for others=" + freeForOthers(resource)
							+ ", row visible to others=" + committedRowVisible(item.id()));
				}
			});
		}

		@DistributedLock("item:#{#id}")
		public void write(String id) {
			this.jdbc.update("INSERT INTO lock_test_item (id, note) VALUES (?, 'caller')", id);
		}

		@DistributedLock("pos:#{#p0}")
		public String byPosition(String key) {
			return "pos:" + key + " held=" + !freeForOthers("pos:" + key);
		}

		@DistributedLock("${test.prefix}:#{@keys.key(#a0)}")
		public String withPlaceholderAndBean(String key) {
			String resource = "tenant-7:KEY-" + key;
			return resource + " held=" + !freeForOthers(resource);
		}

		@DistributedLock(resource = "literal", waitTime = "10s", leaseTime = "PT1M", mode = LockMode.LEASE)
		public String literal() {
			return "literal held=" + !freeForOthers("literal");
		}

		@DistributedLock(resource = "n:#{#value}", waitTime = "0")
		public void nullable(String value) {
			this.calls.incrementAndGet();
		}

		@DistributedLock("fail:#{#key}")
		public void failing(String key) {
			throw new UnsupportedOperationException("boom");
		}

	}

	public static class FailurePolicies {

		private final AtomicInteger runs = new AtomicInteger();

		public AtomicInteger runs() {
			return this.runs;
		}

		@DistributedLock(resource = "busy:#{#id}", waitTime = "0", onFailure = io.github.dblock.OnLockFailure.SKIP)
		public Object skipObject(String id) {
			this.runs.incrementAndGet();
			return "ran";
		}

		@DistributedLock(resource = "busy:#{#id}", waitTime = "0", onFailure = io.github.dblock.OnLockFailure.SKIP)
		public java.util.Optional<String> skipOptional(String id) {
			this.runs.incrementAndGet();
			return java.util.Optional.of("ran");
		}

		@DistributedLock(resource = "busy:#{#id}", waitTime = "0", onFailure = io.github.dblock.OnLockFailure.SKIP)
		public int skipInt(String id) {
			this.runs.incrementAndGet();
			return 7;
		}

		@DistributedLock(resource = "busy:#{#id}", waitTime = "0", onFailure = io.github.dblock.OnLockFailure.SKIP)
		public boolean skipBoolean(String id) {
			this.runs.incrementAndGet();
			return true;
		}

		@DistributedLock(resource = "busy:#{#id}", waitTime = "0", onFailure = io.github.dblock.OnLockFailure.SKIP)
		public void skipVoid(String id) {
			this.runs.incrementAndGet();
		}

		@DistributedLock(resource = "busy:#{#id}", waitTime = "0", failureHandler = "busyFallback")
		public String withFallback(String id) {
			this.runs.incrementAndGet();
			return "ran";
		}

	}

	public static class LifecycleServices {

		private final AtomicInteger completed = new AtomicInteger();

		public AtomicInteger completed() {
			return this.completed;
		}

		@DistributedLock("token:#{#id}")
		public long[] tokens(String id, io.github.dblock.LockHandle lock) {
			return new long[] { lock.fencingToken(), io.github.dblock.CurrentLock.get().orElseThrow().fencingToken() };
		}

		@DistributedLock(resource = "slow:#{#id}", leaseTime = "300ms")
		public void outlivesLease(String id) throws InterruptedException {
			Thread.sleep(600);
			this.completed.incrementAndGet();
		}

		@DistributedLock(resource = "tick:#{#id}", minHoldTime = "1s", waitTime = "0")
		public void holdAtLeast(String id) {
		}

	}

	public static class ModeServices {

		private final JdbcTemplate jdbc;

		private final AtomicInteger optimisticRuns = new AtomicInteger();

		ModeServices(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@DistributedLock(resource = "pessimistic:#{#id}", mode = LockMode.PESSIMISTIC, waitTime = "5s")
		public String pessimistic(String id, boolean fail) {
			this.jdbc.update("INSERT INTO lock_test_item (id, note) VALUES (?, 'pessimistic')", id);
			String seen = "tx active=" + TransactionSynchronizationManager.isActualTransactionActive()
					+ ", lock free for others=" + rowLockFreeForOthers("pessimistic:" + id) + ", row visible to others="
					+ committedRowVisible(id);
			if (fail) {
				throw new IllegalStateException("roll back");
			}
			return seen;
		}

		@DistributedLock(resource = "pessimistic:#{#id}", mode = LockMode.PESSIMISTIC)
		public void pessimisticChecked(String id) throws java.io.IOException {
			this.jdbc.update("INSERT INTO lock_test_item (id, note) VALUES (?, 'checked')", id);
			throw new java.io.IOException("checked exceptions commit, as with @Transactional");
		}

		@DistributedLock(resource = "optimistic:#{#id}", mode = LockMode.OPTIMISTIC)
		public int optimistic(String id) {
			int run = this.optimisticRuns.incrementAndGet();
			this.jdbc.update("INSERT INTO lock_test_item (id, note) VALUES (?, ?)", id, "run " + run);
			if (run == 1) {
				otherNode.acquire("optimistic:" + id).close(); // another node commits in between: a conflict
			}
			return run;
		}

	}

	public static class Caller {

		private final Inventory inventory;

		Caller(Inventory inventory) {
			this.inventory = inventory;
		}

		@Transactional
		public void inTransaction(String id, Runnable afterLockedCall) {
			this.inventory.write(id);
			afterLockedCall.run();
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class TwoPools {

		@Bean(destroyMethod = "close")
		@org.springframework.context.annotation.Primary
		HikariDataSource applicationPool() {
			return TestDatabase.get().newDataSource(4);
		}

		@Bean(destroyMethod = "close")
		@io.github.dblock.autoconfigure.LockDataSource
		HikariDataSource lockPool() {
			return TestDatabase.get().newDataSource(4);
		}

		@Bean
		org.springframework.jdbc.datasource.DataSourceTransactionManager transactionManager(HikariDataSource applicationPool) {
			return new org.springframework.jdbc.datasource.DataSourceTransactionManager(applicationPool);
		}

		@Bean
		Orders orders(HikariDataSource applicationPool) {
			return new Orders(new JdbcTemplate(applicationPool));
		}

		public static class Orders {

			private final JdbcTemplate jdbc;

			private final List<String> seen = new java.util.concurrent.CopyOnWriteArrayList<>();

			Orders(JdbcTemplate jdbc) {
				this.jdbc = jdbc;
			}

			public List<String> seen() {
				return this.seen;
			}

			@DistributedLock(resource = "order:#{#id}", mode = LockMode.PESSIMISTIC)
			@Transactional
			public void place(String id) {
				this.jdbc.update("INSERT INTO lock_test_item (id, note) VALUES (?, 'order')", id);
				TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
					@Override
					public void afterCommit() {
						Orders.this.seen.add("after the order committed: lock free for others="
								+ rowLockFreeForOthers("order:" + id));
					}
				});
			}

		}

	}

	@Configuration(proxyBeanMethods = false)
	static class BothPolicies {

		@Bean
		BothPolicies.Worker worker() {
			return new Worker();
		}

		public static class Worker {

			@DistributedLock(resource = "x", onFailure = io.github.dblock.OnLockFailure.SKIP, failureHandler = "h")
			public void work() {
			}

		}

	}

	@Configuration(proxyBeanMethods = false)
	static class BrokenExpression {

		@Bean
		BrokenExpression.Worker worker() {
			return new Worker();
		}

		public static class Worker {

			@DistributedLock("x:#{#id.}")
			public void work() {
			}

		}

	}

	@Configuration(proxyBeanMethods = false)
	static class BrokenDuration {

		@Bean
		BrokenDuration.Worker worker() {
			return new Worker();
		}

		public static class Worker {

			@DistributedLock(resource = "x", waitTime = "5 parsecs")
			public void work() {
			}

		}

	}

	@Configuration(proxyBeanMethods = false)
	static class MissingResource {

		@Bean
		MissingResource.Worker worker() {
			return new Worker();
		}

		public static class Worker {

			@DistributedLock(waitTime = "1s")
			public void work() {
			}

		}

	}

}
