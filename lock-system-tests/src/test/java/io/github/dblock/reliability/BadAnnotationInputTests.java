package io.github.dblock.reliability;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.DistributedLock;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockTemplate;
import io.github.dblock.autoconfigure.DistributedLockAutoConfiguration;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.Reliability;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.aop.support.AopUtils;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.JdbcTemplateAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * Bad input through {@code @DistributedLock} in a Spring Boot context on the real database: resource templates
 * whose SpEL throws, yields null, or yields an invalid name fail the call naming the method and the expression, with
 * nothing locked (also when an outer lock was already held); broken durations and methods Spring AOP cannot
 * intercept (private, static, final, final class, not on the interface of a JDK proxy) stop start-up naming the
 * method and why. Unicode resources work. Every input tried is counted in the reliability report.
 * <p>
 * Proven in {@code DistributedLockInterceptorTests} and counted there: SpEL that does not parse, an unparsable
 * duration ("5 parsecs"), a missing resource, SpEL evaluating to null or blank (LEASE).
 */
class BadAnnotationInputTests {

	private static final String TRIED = "bad inputs tried";

	private static HikariDataSource otherPool;

	private static LockTemplate other;

	private static LockTemplate otherRows;

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
				DataSourceTransactionManagerAutoConfiguration.class, TransactionAutoConfiguration.class,
				JdbcTemplateAutoConfiguration.class, AopAutoConfiguration.class, DistributedLockAutoConfiguration.class))
		.withPropertyValues(TestDatabase.get().springProperties())
		.withPropertyValues("distributed-lock.node-name=app", "distributed-lock.cleanup.enabled=false");

	@BeforeAll
	static void otherNode() {
		otherPool = TestDatabase.get().newDataSource(4);
		LockNodes.migrateOnce(otherPool);
		other = LockNodes.node(LockMode.LEASE, "other", otherPool);
		otherRows = LockNodes.node(LockMode.PESSIMISTIC, "other-rows", otherPool);
	}

	@AfterAll
	static void closePool() {
		otherPool.close();
	}

	/** Whether another node can take the resource right now, in LEASE and in PESSIMISTIC mode. */
	static boolean freeForOthers(String resource) {
		Optional<LockHandle> lease = other.tryAcquire(resource);
		lease.ifPresent(LockHandle::close);
		Optional<LockHandle> row = otherRows.tryAcquire(resource);
		row.ifPresent(LockHandle::close);
		return lease.isPresent() && row.isPresent();
	}

	private static void tried(String mode) {
		Reliability.count(mode, TRIED, 1);
	}

	private static void assertNoLocalState(AssertableApplicationContext context) {
		LockTemplate template = context.getBean(LockTemplate.class);
		assertThat(template.introspection().localResourceCount()).as("resources the application holds or awaits").isZero();
		assertThat(template.introspection().localHolds()).isEmpty();
	}

	// ------------------------------------------------------------------ SpEL at call time

	@Test
	void spelThatThrowsYieldsNullOrAnInvalidNameFailsTheCallNamingTheMethodInEveryModeWithNothingLocked() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			assertThat(context).hasNotFailed();
			Orders orders = context.getBean(Orders.class);
			for (LockMode mode : LockMode.values()) {
				String method = "BadAnnotationInputTests$Orders." + mode.name().toLowerCase() + "()";
				assertThatIllegalArgumentException().as("%s: property of null", mode)
					.isThrownBy(() -> call(orders, mode, null, "x"))
					.withMessageContaining("@DistributedLock resource expression #{#order.id} of")
					.withMessageContaining(method)
					.withMessageContaining("failed");
				assertThatIllegalArgumentException().as("%s: evaluated to null", mode)
					.isThrownBy(() -> call(orders, mode, new Order(null), "x"))
					.withMessageContaining("#{#order.id}").withMessageContaining(method)
					.withMessageContaining("evaluated to null")
					.withMessageContaining("every expression must give a non-blank value");
				assertThatIllegalArgumentException().as("%s: bean method throws", mode)
					.isThrownBy(() -> call(orders, mode, new Order("1"), "boom"))
					.withMessageContaining("#{@keys.key(#suffix)}").withMessageContaining(method)
					.withMessageContaining("no key for boom");
				assertThatIllegalArgumentException().as("%s: too long", mode)
					.isThrownBy(() -> call(orders, mode, new Order("x".repeat(300)), "s"))
					.withMessageContaining("@DistributedLock resource \"order:#{#order.id}:#{@keys.key(#suffix)}\" of")
					.withMessageContaining(method)
					.withMessageContaining("308 characters (code points) long; at most 255 are allowed");
				assertThatIllegalArgumentException().as("%s: unpaired surrogate", mode)
					.isThrownBy(() -> call(orders, mode, new Order("\uD83D"), "s"))
					.withMessageContaining(method)
					.withMessageContaining("unpaired surrogate at index 6");
				for (int i = 0; i < 5; i++) {
					tried(mode.name());
				}
			}
			assertThat(orders.runs()).as("the method never ran").hasValue(0);
			assertNoLocalState(context);
		});
	}

	@Test
	void whenAnInnerAnnotationFailsWhileAnOuterLockIsHeldTheOuterLockIsReleased() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			Outer outer = context.getBean(Outer.class);
			for (LockMode mode : List.of(LockMode.LEASE, LockMode.PESSIMISTIC)) {
				String id = UUID.randomUUID().toString();
				List<Boolean> heldDuringCall = new ArrayList<>();
				assertThatIllegalArgumentException()
					.isThrownBy(() -> call(outer, mode, id, () -> heldDuringCall.add(!freeForOthers("outer:" + id))))
					.withMessageContaining("Orders.lease()")
					.withMessageContaining("evaluated to null");
				assertThat(heldDuringCall).as("the outer lock was held (%s)", mode).containsExactly(true);
				assertThat(freeForOthers("outer:" + id)).as("released after the failure (%s)", mode).isTrue();
				tried(mode.name());
			}
			assertNoLocalState(context);
		});
	}

	@Test
	void unicodeResourcesWorkThroughTheAnnotationInEveryModeAndAreExclusive() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			Orders orders = context.getBean(Orders.class);
			for (LockMode mode : LockMode.values()) {
				String id = "注文-" + UUID.randomUUID().toString().substring(0, 8) + "-😀";
				String resource = "Bestellung-Größe-😀:" + id;
				assertThat(unicode(orders, mode, id)).isEqualTo(resource + " held=" + (mode != LockMode.OPTIMISTIC));
				assertThat(freeForOthers(resource)).isTrue();
				tried(mode.name());
			}
			assertThat(orders.runs()).hasValue(3);
			assertNoLocalState(context);
		});
	}

	// ------------------------------------------------------------------ durations and names at start-up

	@Test
	void badDurationsAndOverLongLiteralResourcesStopStartUpNamingTheMethodAndWhatIsAllowed() {
		assertStartupFails(NegativeWait.class, "NegativeWait$Worker.work()", "waitTime must be \"0\" (a single attempt) "
				+ "or positive, was -5s");
		assertStartupFails(ZeroLease.class, "ZeroLease$Worker.work()", "leaseTime must be at least 10ms (a shorter "
				+ "lease ends before the statement taking it returns), was 0");
		assertStartupFails(TinyLease.class, "TinyLease$Worker.work()", "leaseTime must be at least 10ms", "was 500us");
		assertStartupFails(NegativeMinHold.class, "NegativeMinHold$Worker.work()", "minHoldTime must be zero or "
				+ "positive, was -1s");
		assertStartupFails(MinHoldBeyondLease.class, "MinHoldBeyondLease$Worker.work()", "minHoldTime 2m exceeds "
				+ "leaseTime 1m");
		assertStartupFails(MinHoldBeyondDefaultLease.class, "MinHoldBeyondDefaultLease$Worker.work()",
				"its minHoldTime PT1M exceeds the default lease time PT30S (distributed-lock.lease-time)",
				"Give a leaseTime of at least the minHoldTime");
		assertStartupFails(NotADuration.class, "NotADuration$Worker.work()", "leaseTime 'abc' is not a duration "
				+ "(use e.g. \"500ms\", \"5s\", \"PT1M\")");
		assertStartupFails(MissingPlaceholder.class, "MissingPlaceholder$Worker.work()", "waitTime '${no.such.wait}'",
				"no.such.wait");
		assertStartupFails(TooLongLiteral.class, "TooLongLiteral$Worker.work()",
				"256 characters (code points) long; at most 255 are allowed");
		assertStartupFails(BlankLiteral.class, "BlankLiteral$Worker.work()", "has no resource");
		assertStartupFails(CenturiesLease.class, "CenturiesLease$Worker.work()",
				"leaseTime must be at most 36500d (about 100 years), was 36501d");
		assertStartupFails(TwoModes.class, "TwoModes$Worker.work()", "give at most one mode, was 2");
		for (int i = 0; i < 12; i++) {
			tried(Reliability.ALL_MODES);
		}
	}

	// ------------------------------------------------------------------ methods a proxy cannot intercept

	@Test
	void privateStaticAndFinalMethodsAndFinalClassesStopStartUpNamingTheMethodAndWhy() {
		assertStartupFails(PrivateMethod.class, "PrivateMethod$Worker.work()", "cannot take effect",
				"the method is private, and Spring AOP proxies never intercept private methods");
		assertStartupFails(StaticMethod.class, "StaticMethod$Worker.work()", "the method is static");
		assertStartupFails(FinalMethod.class, "FinalMethod$Worker.work()", "the method is final, so the class-based "
				+ "(CGLIB) proxy cannot override it");
		assertStartupFails(FinalClass.class, "FinalClass$Worker.work()", "FinalClass$Worker is final, so Spring "
				+ "cannot create the class-based (CGLIB) proxy");
		this.runner.withPropertyValues("spring.aop.proxy-target-class=false")
			.withUserConfiguration(NotOnTheInterface.class)
			.run((context) -> assertFailure(context, "NotOnTheInterface$Worker.extra()",
					"has an interface-based (JDK) proxy", "none declares this method"));
		for (int i = 0; i < 5; i++) {
			tried(Reliability.ALL_MODES);
		}
	}

	@Test
	void protectedAndPackagePrivateMethodsOfAClassProxyAndInterfaceMethodsOfAJdkProxyAreLocked() {
		this.runner.withUserConfiguration(Proxyable.class).run((context) -> {
			assertThat(context).hasNotFailed();
			Proxyable.Worker worker = context.getBean(Proxyable.Worker.class);
			assertThat(AopUtils.isCglibProxy(worker)).isTrue();
			String id = UUID.randomUUID().toString();
			assertThat(worker.packagePrivate(id)).isEqualTo("held=true");
			assertThat(worker.protectedMethod(id)).isEqualTo("held=true");
			assertThat(((Named) worker).name(id)).as("annotation on the interface method").isEqualTo("held=true");
		});
		this.runner.withPropertyValues("spring.aop.proxy-target-class=false")
			.withUserConfiguration(JdkProxied.class)
			.run((context) -> {
				assertThat(context).hasNotFailed();
				Named named = context.getBean(Named.class);
				assertThat(AopUtils.isJdkDynamicProxy(named)).isTrue();
				assertThat(named.name(UUID.randomUUID().toString())).isEqualTo("held=true");
				Plain plain = context.getBean(Plain.class);
				assertThat(AopUtils.isJdkDynamicProxy(plain)).isTrue();
				assertThat(plain.name(UUID.randomUUID().toString())).as("annotation on the implementation")
					.isEqualTo("held=true");
			});
		tried(Reliability.ALL_MODES);
		tried(Reliability.ALL_MODES);
	}

	@Test
	void selfInvocationIsNotInterceptedAsDocumented() {
		this.runner.withUserConfiguration(Proxyable.class).run((context) -> {
			Proxyable.Worker worker = context.getBean(Proxyable.Worker.class);
			String id = UUID.randomUUID().toString();
			assertThat(worker.selfInvoking(id)).as("the inner call bypasses the proxy").isEqualTo("held=false");
			assertThat(worker.packagePrivate(id)).as("the same call through the proxy").isEqualTo("held=true");
		});
		tried(Reliability.ALL_MODES);
	}

	// ------------------------------------------------------------------ helpers

	/** Calls the annotated method of the mode through the proxy. */
	private static void call(Orders orders, LockMode mode, Order order, String suffix) {
		switch (mode) {
			case LEASE -> orders.lease(order, suffix);
			case PESSIMISTIC -> orders.pessimistic(order, suffix);
			case OPTIMISTIC -> orders.optimistic(order, suffix);
		}
	}

	private static String unicode(Orders orders, LockMode mode, String id) {
		return switch (mode) {
			case LEASE -> orders.unicodeLease(id, null);
			case PESSIMISTIC -> orders.unicodePessimistic(id, null);
			case OPTIMISTIC -> orders.unicodeOptimistic(id, null);
		};
	}

	private static void call(Outer outer, LockMode mode, String id, Runnable probe) {
		if (mode == LockMode.PESSIMISTIC) {
			outer.pessimistic(id, probe);
		}
		else {
			outer.lease(id, probe);
		}
	}

	private void assertStartupFails(Class<?> configuration, String method, String... reasons) {
		this.runner.withUserConfiguration(configuration).run((context) -> assertFailure(context, method, reasons));
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

	record Order(String id) {
	}

	public static class Keys {

		public String key(String suffix) {
			if (suffix.equals("boom")) {
				throw new IllegalStateException("no key for " + suffix);
			}
			return suffix;
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class Services {

		@Bean
		Keys keys() {
			return new Keys();
		}

		@Bean
		Orders orders() {
			return new Orders();
		}

		@Bean
		Outer outer(Orders orders) {
			return new Outer(orders);
		}

	}

	public static class Orders {

		private final AtomicInteger runs = new AtomicInteger();

		public AtomicInteger runs() {
			return this.runs;
		}

		@DistributedLock(resource = "order:#{#order.id}:#{@keys.key(#suffix)}", waitTime = "0")
		public void lease(Order order, String suffix) {
			this.runs.incrementAndGet();
		}

		@DistributedLock(resource = "order:#{#order.id}:#{@keys.key(#suffix)}", waitTime = "0",
				mode = LockMode.PESSIMISTIC)
		public void pessimistic(Order order, String suffix) {
			this.runs.incrementAndGet();
		}

		@DistributedLock(resource = "order:#{#order.id}:#{@keys.key(#suffix)}", mode = LockMode.OPTIMISTIC)
		public void optimistic(Order order, String suffix) {
			this.runs.incrementAndGet();
		}

		@DistributedLock(resource = "Bestellung-Größe-😀:#{#id}", waitTime = "0")
		public String unicodeLease(String id, LockHandle lock) {
			this.runs.incrementAndGet();
			return lock.resource() + " held=" + !freeForOthers(lock.resource());
		}

		@DistributedLock(resource = "Bestellung-Größe-😀:#{#id}", waitTime = "0", mode = LockMode.PESSIMISTIC)
		public String unicodePessimistic(String id, LockHandle lock) {
			this.runs.incrementAndGet();
			return lock.resource() + " held=" + !otherRows.tryAcquire(lock.resource()).map((l) -> {
				l.close();
				return true;
			}).orElse(false);
		}

		@DistributedLock(resource = "Bestellung-Größe-😀:#{#id}", mode = LockMode.OPTIMISTIC)
		public String unicodeOptimistic(String id, LockHandle lock) {
			this.runs.incrementAndGet();
			return lock.resource() + " held=false";
		}

	}

	/** Holds an outer lock and calls an annotated method of another bean whose resource evaluates to null. */
	public static class Outer {

		private final Orders orders;

		Outer(Orders orders) {
			this.orders = orders;
		}

		@DistributedLock(resource = "outer:#{#id}", waitTime = "0")
		public void lease(String id, Runnable probe) {
			probe.run();
			this.orders.lease(new Order(null), "x");
		}

		@DistributedLock(resource = "outer:#{#id}", waitTime = "0", mode = LockMode.PESSIMISTIC)
		public void pessimistic(String id, Runnable probe) {
			probe.run();
			this.orders.lease(new Order(null), "x");
		}



	}

	public interface Named {

		@DistributedLock("named:#{#id}")
		String name(String id);

	}

	@Configuration(proxyBeanMethods = false)
	static class Proxyable {

		@Bean
		Worker worker() {
			return new Worker();
		}

		public static class Worker implements Named {

			@DistributedLock("pp:#{#id}")
			String packagePrivate(String id) {
				return "held=" + !freeForOthers("pp:" + id);
			}

			@DistributedLock("prot:#{#id}")
			protected String protectedMethod(String id) {
				return "held=" + !freeForOthers("prot:" + id);
			}

			@Override
			public String name(String id) {
				return "held=" + !freeForOthers("named:" + id);
			}

			public String selfInvoking(String id) {
				return packagePrivate(id);
			}

		}

	}

	public interface Plain {

		String name(String id);

	}

	@Configuration(proxyBeanMethods = false)
	static class JdkProxied {

		@Bean
		Named named() {
			return new NamedImpl();
		}

		@Bean
		Plain plain() {
			return new PlainImpl();
		}

		static class PlainImpl implements Plain {

			@Override
			@DistributedLock("plain:#{#id}")
			public String name(String id) {
				return "held=" + !freeForOthers("plain:" + id);
			}

		}

		static class NamedImpl implements Named {

			@Override
			public String name(String id) {
				return "held=" + !freeForOthers("named:" + id);
			}

		}

	}

	@Configuration(proxyBeanMethods = false)
	static class NotOnTheInterface {

		@Bean
		Worker worker() {
			return new Worker();
		}

		public static class Worker implements Named {

			@Override
			public String name(String id) {
				return id;
			}

			@DistributedLock("extra")
			public void extra() {
			}

		}

	}

	@Configuration(proxyBeanMethods = false)
	static class PrivateMethod {

		@Bean
		Worker worker() {
			return new Worker();
		}

		public static class Worker {

			public void run() {
				work();
			}

			@DistributedLock("private")
			private void work() {
			}

		}

	}

	@Configuration(proxyBeanMethods = false)
	static class StaticMethod {

		@Bean
		Worker worker() {
			return new Worker();
		}

		public static class Worker {

			@DistributedLock("static")
			public static void work() {
			}

		}

	}

	@Configuration(proxyBeanMethods = false)
	static class FinalMethod {

		@Bean
		Worker worker() {
			return new Worker();
		}

		public static class Worker {

			@DistributedLock("final")
			public final void work() {
			}

		}

	}

	@Configuration(proxyBeanMethods = false)
	static class FinalClass {

		@Bean
		Worker worker() {
			return new Worker();
		}

		public static final class Worker {

			@DistributedLock("final-class")
			public void work() {
			}

		}

	}

	@Configuration(proxyBeanMethods = false)
	static class NegativeWait {

		@Bean
		Worker worker() {
			return new Worker();
		}

		public static class Worker {

			@DistributedLock(resource = "x", waitTime = "-5s")
			public void work() {
			}

		}

	}

	@Configuration(proxyBeanMethods = false)
	static class ZeroLease {

		@Bean
		Worker worker() {
			return new Worker();
		}

		public static class Worker {

			@DistributedLock(resource = "x", leaseTime = "0")
			public void work() {
			}

		}

	}

	@Configuration(proxyBeanMethods = false)
	static class TinyLease {

		@Bean
		Worker worker() {
			return new Worker();
		}

		public static class Worker {

			@DistributedLock(resource = "x", leaseTime = "500us")
			public void work() {
			}

		}

	}

	@Configuration(proxyBeanMethods = false)
	static class NegativeMinHold {

		@Bean
		Worker worker() {
			return new Worker();
		}

		public static class Worker {

			@DistributedLock(resource = "x", minHoldTime = "-1s")
			public void work() {
			}

		}

	}

	@Configuration(proxyBeanMethods = false)
	static class MinHoldBeyondLease {

		@Bean
		Worker worker() {
			return new Worker();
		}

		public static class Worker {

			@DistributedLock(resource = "x", leaseTime = "1m", minHoldTime = "2m")
			public void work() {
			}

		}

	}

	@Configuration(proxyBeanMethods = false)
	static class MinHoldBeyondDefaultLease {

		@Bean
		Worker worker() {
			return new Worker();
		}

		public static class Worker {

			@DistributedLock(resource = "x", minHoldTime = "1m")
			public void work() {
			}

		}

	}

	@Configuration(proxyBeanMethods = false)
	static class NotADuration {

		@Bean
		Worker worker() {
			return new Worker();
		}

		public static class Worker {

			@DistributedLock(resource = "x", leaseTime = "abc")
			public void work() {
			}

		}

	}

	@Configuration(proxyBeanMethods = false)
	static class MissingPlaceholder {

		@Bean
		Worker worker() {
			return new Worker();
		}

		public static class Worker {

			@DistributedLock(resource = "x", waitTime = "${no.such.wait}")
			public void work() {
			}

		}

	}

	@Configuration(proxyBeanMethods = false)
	static class TooLongLiteral {

		@Bean
		Worker worker() {
			return new Worker();
		}

		public static class Worker {

			@DistributedLock("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
					+ "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
					+ "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
					+ "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
			public void work() {
			}

		}

	}

	@Configuration(proxyBeanMethods = false)
	static class CenturiesLease {

		@Bean
		Worker worker() {
			return new Worker();
		}

		public static class Worker {

			@DistributedLock(resource = "x", leaseTime = "36501d")
			public void work() {
			}

		}

	}

	@Configuration(proxyBeanMethods = false)
	static class TwoModes {

		@Bean
		Worker worker() {
			return new Worker();
		}

		public static class Worker {

			@DistributedLock(resource = "x", mode = { LockMode.LEASE, LockMode.PESSIMISTIC })
			public void work() {
			}

		}

	}

	@Configuration(proxyBeanMethods = false)
	static class BlankLiteral {

		@Bean
		Worker worker() {
			return new Worker();
		}

		public static class Worker {

			@DistributedLock("   ")
			public void work() {
			}

		}

	}

}
