package io.github.dblock.annotations;

import java.io.IOException;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.dblock.interceptor.IdempotentAdvisor;
import io.github.dblock.LockTemplate;
import io.github.dblock.autoconfigure.DistributedLockAutoConfiguration;
import io.github.dblock.idempotency.AlreadyProcessedException;
import io.github.dblock.idempotency.IdempotencyRecord;
import io.github.dblock.idempotency.IdempotencyStatus;
import io.github.dblock.idempotency.IdempotencyTemplate;
import io.github.dblock.idempotency.Idempotent;
import io.github.dblock.idempotency.OnDuplicate;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.aop.Advisor;
import org.springframework.aop.framework.Advised;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.JdbcTemplateAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.interceptor.TransactionAspectSupport;
import org.springframework.transaction.interceptor.TransactionAttributeSourceAdvisor;
import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

/**
 * {@code @Idempotent} in a Spring Boot context on the real database: generic outcomes, the join with the method's
 * transaction (the advisor sits inside the transaction advisor), checked exceptions, duplicate policies, and misuse
 * caught at start-up or before anything is claimed.
 */
class IdempotentInterceptorTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
				DataSourceTransactionManagerAutoConfiguration.class, TransactionAutoConfiguration.class,
				JdbcTemplateAutoConfiguration.class, AopAutoConfiguration.class, DistributedLockAutoConfiguration.class))
		.withPropertyValues(TestDatabase.get().springProperties())
		.withPropertyValues("distributed-lock.node-name=app", "test.prefix=tenant-7");

	@BeforeAll
	static void tables() {
		TestDatabase.get().execute("CREATE TABLE IF NOT EXISTS idem_test_payment (idem_key VARCHAR(100) PRIMARY KEY,"
				+ " amount INT NOT NULL)");
	}

	private static int payments(JdbcTemplate jdbc, String id) {
		return jdbc.queryForObject("SELECT COUNT(*) FROM idem_test_payment WHERE idem_key = ?", Integer.class, id);
	}

	@Test
	void aDuplicateGetsTheRecordedOutcomeAsTheMethodsGenericReturnTypeWithoutRunningIt() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			Orders orders = context.getBean(Orders.class);
			String id = UUID.randomUUID().toString();
			List<Receipt> first = orders.place(id, 25);
			List<Receipt> second = orders.place(id, 99);
			assertThat(first).containsExactly(new Receipt(id, 25), new Receipt(id + "-fee", 1));
			assertThat(second).isEqualTo(first);
			assertThat(second.get(0)).isInstanceOf(Receipt.class);
			assertThat(orders.runs()).hasValue(1);
			assertThat(payments(context.getBean(JdbcTemplate.class), id)).isEqualTo(1);
			IdempotencyRecord record = context.getBean(IdempotencyTemplate.class).find("order:" + id).orElseThrow();
			assertThat(record.status()).isEqualTo(IdempotencyStatus.SUCCEEDED);
			assertThat(record.holder()).startsWith("app [");
		});
	}

	@Test
	void theOutcomeJoinsTheMethodsTransactionSoARollbackLeavesNoRecordOfSuccessAndTheNextCallRunsAgain() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			Orders orders = context.getBean(Orders.class);
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			String id = UUID.randomUUID().toString();
			assertThat(orders.rollbackOnly(id)).isEqualTo("written, tx active=true");
			assertThat(payments(jdbc, id)).isZero();
			IdempotencyRecord record = context.getBean(IdempotencyTemplate.class)
				.find("tenant-7:rollback:" + id)
				.orElseThrow();
			assertThat(record.status()).isEqualTo(IdempotencyStatus.FAILED);
			assertThat(record.error()).isEqualTo("the transaction that recorded the outcome rolled back");
			assertThat(orders.rollbackOnly(id)).isEqualTo("written, tx active=true");
			assertThat(orders.runs()).hasValue(2);
		});
	}

	@Test
	void theIdempotencyAdvisorRunsInsideTheTransactionAdvisor() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			Advisor[] advisors = ((Advised) context.getBean(Orders.class)).getAdvisors();
			int transaction = -1;
			int idempotent = -1;
			for (int i = 0; i < advisors.length; i++) {
				if (advisors[i] instanceof IdempotentAdvisor) {
					idempotent = i;
				}
				else if (advisors[i] instanceof TransactionAttributeSourceAdvisor
						|| advisors[i].getClass().getSimpleName().contains("TransactionAttributeSourceAdvisor")) {
					transaction = i;
				}
			}
			assertThat(transaction).isNotNegative();
			assertThat(idempotent).as("after (inside) the transaction advisor").isGreaterThan(transaction);
		});
	}

	@Test
	void anAdvisorOrderedOutsideTheTransactionFailsTheCallBeforeAnythingIsClaimed() {
		this.runner.withUserConfiguration(Services.class)
			.withPropertyValues("distributed-lock.idempotency.order=0")
			.run((context) -> {
				Orders orders = context.getBean(Orders.class);
				String id = UUID.randomUUID().toString();
				assertThatIllegalStateException().isThrownBy(() -> orders.place(id, 1))
					.withMessageContaining("@Idempotent on " + Orders.class.getName() + ".place() runs outside the method's "
							+ "@Transactional transaction")
					.withMessageContaining("Nothing was claimed");
				assertThat(orders.runs()).hasValue(0);
				assertThat(context.getBean(IdempotencyTemplate.class).find("order:" + id)).isEmpty();
			});
	}

	@Test
	void aCheckedExceptionPropagatesUnchangedAndMarksTheKeyFailed() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			Orders orders = context.getBean(Orders.class);
			String id = UUID.randomUUID().toString();
			assertThatExceptionOfType(IOException.class).isThrownBy(() -> orders.checked(id)).withMessage("disk full");
			assertThatExceptionOfType(IOException.class).isThrownBy(() -> orders.checked(id)).withMessage("disk full");
			assertThat(orders.runs()).as("a failed key runs again").hasValue(2);
			IdempotencyRecord record = context.getBean(IdempotencyTemplate.class).find("checked:" + id).orElseThrow();
			assertThat(record.status()).isEqualTo(IdempotencyStatus.FAILED);
			assertThat(record.error()).isEqualTo("java.io.IOException: disk full");
			assertThat(record.attempts()).isEqualTo(2);
		});
	}

	@Test
	void aCheckedExceptionWhoseTransactionCommitsKeepsTheKeyProcessedSoTheWritesAreNotRepeated() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			Orders orders = context.getBean(Orders.class);
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			String id = UUID.randomUUID().toString();
			// Spring commits on a checked exception: the write persists, so the key must not run again
			assertThatExceptionOfType(IOException.class).isThrownBy(() -> orders.refund(id))
				.withMessage("provider asks to retry later");
			assertThat(payments(jdbc, id)).isEqualTo(1);
			assertThatExceptionOfType(AlreadyProcessedException.class).isThrownBy(() -> orders.refund(id))
				.satisfies((ex) -> assertThat(ex.getMessage()).contains("java.io.IOException: provider asks to retry later"));
			assertThat(orders.runs()).hasValue(1);
			assertThat(payments(jdbc, id)).isEqualTo(1);
			IdempotencyRecord record = context.getBean(IdempotencyTemplate.class).find("refund:" + id).orElseThrow();
			assertThat(record.status()).isEqualTo(IdempotencyStatus.SUCCEEDED);
		});
	}

	@Test
	void aRuntimeExceptionRollsTheTransactionBackAndTheKeyRunsAgain() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			Orders orders = context.getBean(Orders.class);
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			String id = UUID.randomUUID().toString();
			assertThatIllegalStateException().isThrownBy(() -> orders.refundUnchecked(id)).withMessage("declined");
			assertThat(payments(jdbc, id)).isZero();
			IdempotencyRecord record = context.getBean(IdempotencyTemplate.class).find("refund-unchecked:" + id)
				.orElseThrow();
			assertThat(record.status()).isEqualTo(IdempotencyStatus.FAILED);
			assertThatIllegalStateException().isThrownBy(() -> orders.refundUnchecked(id)).withMessage("declined");
			assertThat(orders.runs()).as("a rolled-back attempt runs again").hasValue(2);
			assertThat(payments(jdbc, id)).isZero();
		});
	}

	@Test
	void aReturnTypeGivenByATypeVariableComesBackAsTheConcreteType() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			ReceiptHandler handler = context.getBean(ReceiptHandler.class);
			String id = UUID.randomUUID().toString();
			Receipt first = handler.handle(id);
			Object second = handler.handle(id);
			assertThat(second).isInstanceOf(Receipt.class).isEqualTo(first);
			assertThat(handler.runs()).hasValue(1);
		});
	}

	@Test
	void aReadOnlyTransactionIsRefusedBeforeAnythingIsClaimed() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			Orders orders = context.getBean(Orders.class);
			String id = UUID.randomUUID().toString();
			assertThatIllegalStateException().isThrownBy(() -> orders.readOnly(id))
				.withMessageContaining("read-only transaction")
				.withMessageContaining("Nothing was claimed");
			assertThat(orders.runs()).hasValue(0);
			assertThat(context.getBean(IdempotencyTemplate.class).find("read-only:" + id)).isEmpty();
		});
	}

	@Test
	void aVoidMethodWithTheThrowPolicyRunsOnceAndTellsDuplicates() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			Orders orders = context.getBean(Orders.class);
			String id = UUID.randomUUID().toString();
			orders.notifyOnce(id);
			assertThatExceptionOfType(AlreadyProcessedException.class).isThrownBy(() -> orders.notifyOnce(id))
				.satisfies((ex) -> assertThat(ex.getKey()).isEqualTo("notify:" + id));
			assertThat(orders.runs()).hasValue(1);
		});
	}

	@Test
	void aKeyExpressionEvaluatingToNullFailsTheCallBeforeAnythingIsClaimed() {
		this.runner.withUserConfiguration(Services.class).run((context) -> {
			Orders orders = context.getBean(Orders.class);
			assertThatIllegalArgumentException().isThrownBy(() -> orders.place(null, 1))
				.withMessage("@Idempotent key expression #{#id} of " + Orders.class.getName()
						+ ".place() evaluated to null; the name would be ambiguous, so every expression must give a "
						+ "non-blank value");
			assertThat(orders.runs()).hasValue(0);
		});
	}

	@Test
	void invalidAnnotationsAndUninterceptableMethodsStopStartUpNamingTheMethod() {
		this.runner.withUserConfiguration(BadRetention.class).run((context) -> assertThat(context).getFailure()
			.hasStackTraceContaining("IllegalStateException: @Idempotent on " + BadRetentionService.class.getName()
					+ ".run(): retention must be positive, was PT-1S"));
		this.runner.withUserConfiguration(NoKey.class).run((context) -> assertThat(context).getFailure()
			.rootCause()
			.hasMessageContaining("@Idempotent on " + NoKeyService.class.getName() + ".run() has no key"));
		this.runner.withUserConfiguration(PrivateMethod.class).run((context) -> assertThat(context).getFailure()
			.rootCause()
			.hasMessageContaining("@Idempotent on " + PrivateMethodService.class.getName()
					+ ".hidden() cannot take effect: the method is private"));
	}

	@Test
	void withoutJacksonThereAreNoIdempotencyBeansAndAnIdempotentMethodStopsStartUp() {
		this.runner.withClassLoader(new FilteredClassLoader(JsonMapper.class)).run((context) -> {
			assertThat(context).hasNotFailed().hasSingleBean(LockTemplate.class).doesNotHaveBean(IdempotencyTemplate.class);
		});
		this.runner.withClassLoader(new FilteredClassLoader(JsonMapper.class))
			.withUserConfiguration(Services.class)
			.run((context) -> assertThat(context).getFailure()
				.hasStackTraceContaining("() cannot take effect: idempotency keys record outcomes as JSON with Jackson 3, "
						+ "which is not on the class path")
				.hasStackTraceContaining("@Idempotent on " + Orders.class.getName() + "."));
	}

	@Test
	void invalidIdempotencyPropertiesStopStartUpNamingTheProperty() {
		this.runner.withPropertyValues("distributed-lock.idempotency.retention=0s").run((context) -> assertThat(context)
			.getFailure()
			.rootCause()
			.hasMessageContaining("distributed-lock.idempotency.retention")
			.hasMessageContaining("must be positive"));
		this.runner.withPropertyValues("distributed-lock.idempotency.lease-time=500ms").run((context) -> assertThat(context)
			.getFailure()
			.rootCause()
			.hasMessageContaining("distributed-lock.idempotency.lease-time")
			.hasMessageContaining("at least 1s"));
	}

	@Configuration(proxyBeanMethods = false)
	static class Services {

		@Bean
		Orders orders(JdbcTemplate jdbc) {
			return new Orders(jdbc);
		}

		@Bean
		ReceiptHandler receiptHandler() {
			return new ReceiptHandler();
		}

	}

	public record Receipt(String id, int amount) {
	}

	public abstract static class Handler<R> {

		private final AtomicInteger runs = new AtomicInteger();

		public AtomicInteger runs() {
			return this.runs;
		}

		@Idempotent(key = "handle:#{#id}")
		public R handle(String id) {
			this.runs.incrementAndGet();
			return create(id);
		}

		abstract R create(String id);

	}

	public static class ReceiptHandler extends Handler<Receipt> {

		@Override
		Receipt create(String id) {
			return new Receipt(id, 7);
		}

	}

	public static class Orders {

		private final JdbcTemplate jdbc;

		private final AtomicInteger runs = new AtomicInteger();

		Orders(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		AtomicInteger runs() {
			return this.runs;
		}

		@Idempotent(key = "order:#{#id}")
		@Transactional
		public List<Receipt> place(String id, int amount) {
			this.runs.incrementAndGet();
			this.jdbc.update("INSERT INTO idem_test_payment (idem_key, amount) VALUES (?, ?)", id, amount);
			return List.of(new Receipt(id, amount), new Receipt(id + "-fee", 1));
		}

		@Idempotent(key = "${test.prefix}:rollback:#{#p0}")
		@Transactional
		public String rollbackOnly(String id) {
			this.runs.incrementAndGet();
			this.jdbc.update("INSERT INTO idem_test_payment (idem_key, amount) VALUES (?, 5)", id);
			TransactionAspectSupport.currentTransactionStatus().setRollbackOnly();
			return "written, tx active="
					+ org.springframework.transaction.support.TransactionSynchronizationManager.isActualTransactionActive();
		}

		@Idempotent(key = "checked:#{#id}")
		public String checked(String id) throws IOException {
			this.runs.incrementAndGet();
			throw new IOException("disk full");
		}

		@Idempotent(key = "refund:#{#id}")
		@Transactional
		public void refund(String id) throws IOException {
			this.runs.incrementAndGet();
			this.jdbc.update("INSERT INTO idem_test_payment (idem_key, amount) VALUES (?, -5)", id);
			throw new IOException("provider asks to retry later");
		}

		@Idempotent(key = "refund-unchecked:#{#id}")
		@Transactional
		public void refundUnchecked(String id) {
			this.runs.incrementAndGet();
			this.jdbc.update("INSERT INTO idem_test_payment (idem_key, amount) VALUES (?, -5)", id);
			throw new IllegalStateException("declined");
		}

		@Idempotent(key = "read-only:#{#id}")
		@Transactional(readOnly = true)
		public String readOnly(String id) {
			this.runs.incrementAndGet();
			return "read " + id;
		}

		@Idempotent(key = "notify:#{#id}", onDuplicate = OnDuplicate.THROW)
		public void notifyOnce(String id) {
			this.runs.incrementAndGet();
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class BadRetention {

		@Bean
		BadRetentionService badRetentionService() {
			return new BadRetentionService();
		}

	}

	public static class BadRetentionService {

		@Idempotent(key = "x", retention = "-1s")
		public void run() {
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class NoKey {

		@Bean
		NoKeyService noKeyService() {
			return new NoKeyService();
		}

	}

	public static class NoKeyService {

		@Idempotent(retention = "1h")
		public void run() {
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class PrivateMethod {

		@Bean
		PrivateMethodService privateMethodService() {
			return new PrivateMethodService();
		}

	}

	public static class PrivateMethodService {

		@Idempotent(key = "x")
		public void run() {
			hidden();
		}

		@Idempotent(key = "y")
		private void hidden() {
		}

	}

}
