package io.github.dblock.jpa;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.CommitValidation;
import io.github.dblock.DistributedLock;
import io.github.dblock.LockHandle;
import io.github.dblock.LockLostException;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.autoconfigure.DistributedLockAutoConfiguration;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import jakarta.persistence.EntityManager;
import jakarta.persistence.EntityManagerFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.hibernate.autoconfigure.HibernateJpaAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.persistence.autoconfigure.EntityScan;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.orm.jpa.EntityManagerHolder;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.orm.jpa.SharedEntityManagerCreator;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * Commit-time validation under {@link JpaTransactionManager} (Hibernate, from Spring Boot's JPA auto-configuration)
 * on the lock's data source. That manager binds an {@link EntityManagerHolder} for the entity manager factory and,
 * through {@code HibernateJpaDialect}, a {@link ConnectionHolder} with the session's JDBC connection for the data
 * source: the check finds the transaction's connection through the latter and runs on it. A stale holder's JPA
 * transaction (its entity inserted and flushed, then stalled past its 300 ms lease while another node takes the lock
 * and writes) rolls back with {@link LockLostException} and its entity is not visible; a holder that commits in time
 * commits; with {@code validate-at-commit=false} the stale entity commits too.
 * <p>
 * In a module of its own (lock-jpa-tests), the only one with JPA on its test class path.
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class JpaCommitValidationTests {

	private static final Duration LEASE = Duration.ofMillis(300);

	private static HikariDataSource otherNodePool;

	private static LockTemplate otherNode;

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, HibernateJpaAutoConfiguration.class,
				TransactionAutoConfiguration.class, AopAutoConfiguration.class, DistributedLockAutoConfiguration.class))
		.withPropertyValues(TestDatabase.get().springProperties())
		.withPropertyValues("distributed-lock.node-name=jpa-app", "distributed-lock.cleanup.enabled=false",
				"spring.jpa.hibernate.ddl-auto=none", "spring.jpa.open-in-view=false",
				"spring.jpa.database-platform=" + (TestDatabase.get().isMariaDb() ? "org.hibernate.dialect.MariaDBDialect"
						: "org.hibernate.dialect.MySQLDialect"))
		.withUserConfiguration(App.class);

	private final ExecutorService caller = Executors.newSingleThreadExecutor();

	@BeforeAll
	static void otherNode() {
		otherNodePool = TestDatabase.get().newDataSource(4);
		LockNodes.migrateOnce(otherNodePool);
		otherNode = LockNodes.node(LockMode.LEASE, "other-node", otherNodePool);
		TestDatabase.get().execute("CREATE TABLE IF NOT EXISTS jpa_commit_check (id BIGINT AUTO_INCREMENT PRIMARY KEY,"
				+ " resource VARCHAR(100) NOT NULL, writer VARCHAR(32) NOT NULL)");
	}

	@AfterAll
	static void closePool() {
		otherNodePool.close();
	}

	@org.junit.jupiter.api.AfterEach
	void stopCaller() {
		this.caller.shutdownNow();
	}

	@Test
	void theJpaTransactionManagerHasTheListenerAndBindsTheConnectionTheCheckUses() {
		this.runner.run((context) -> {
			assertThat(context).hasNotFailed();
			PlatformTransactionManager manager = context.getBean(PlatformTransactionManager.class);
			assertThat(manager).isInstanceOf(JpaTransactionManager.class);
			assertThat(((JpaTransactionManager) manager).getTransactionExecutionListeners())
				.filteredOn(CommitValidation.class::isInstance)
				.hasSize(1);
			String id = UUID.randomUUID().toString();
			Journal journal = context.getBean(Journal.class);
			journal.record(id);
			assertThat(journal.bound()).containsExactly(EntityManagerHolder.class.getSimpleName(),
					ConnectionHolder.class.getSimpleName(), "check registered");
			assertThat(writers(id)).containsExactly("app");
		});
	}

	/**
	 * {@code @DistributedLock} on a {@code @Transactional} method (the lock taken before the JPA transaction begins;
	 * the listener registers the check when it begins): the stale holder's entity is rolled back, the other node's
	 * write stays, and a holder that commits in time commits.
	 */
	@Test
	void aStaleHoldersJpaTransactionRollsBackAndItsEntityIsNotVisible() {
		this.runner.run((context) -> {
			Journal journal = context.getBean(Journal.class);
			String id = UUID.randomUUID().toString();
			CountDownLatch written = new CountDownLatch(1);
			CountDownLatch resume = new CountDownLatch(1);
			Future<?> call = this.caller.submit(() -> journal.post(id, written, resume));
			assertThat(written.await(10, TimeUnit.SECONDS)).isTrue();
			otherNodeTakesOverAndWrites(id);
			resume.countDown();
			assertThatExceptionOfType(ExecutionException.class).isThrownBy(() -> call.get(30, TimeUnit.SECONDS))
				.withCauseInstanceOf(LockLostException.class)
				.withMessageContaining("was no longer held when its transaction was about to commit");
			assertThat(writers(id)).containsExactly("other-node");

			String next = UUID.randomUUID().toString();
			journal.record(next);
			assertThat(writers(next)).containsExactly("app");
			assertThat(freeForOtherNode("jpa:" + next)).isTrue();
		});
	}

	/**
	 * {@code LockTemplate.execute} inside a JPA transaction ({@code TransactionTemplate} on the JPA manager): the check
	 * is registered when the lock is handed out, through the bound {@link ConnectionHolder}, and the lock is kept until
	 * the transaction has completed.
	 */
	@Test
	void aLockTakenInsideTheJpaTransactionIsCheckedAtItsCommit() {
		this.runner.run((context) -> {
			LockTemplate locks = context.getBean(LockTemplate.class);
			TransactionTemplate tx = new TransactionTemplate(context.getBean(PlatformTransactionManager.class));
			EntityManager em = context.getBean(EntityManager.class);
			String id = UUID.randomUUID().toString();
			CountDownLatch written = new CountDownLatch(1);
			CountDownLatch resume = new CountDownLatch(1);
			Future<?> call = this.caller.submit(() -> tx.executeWithoutResult((status) ->
				locks.executeWithoutResult("jpa:" + id, LockOptions.defaults().withLeaseTime(LEASE), (lock) -> {
					em.persist(new JpaEntry(id, "app"));
					em.flush();
					written.countDown();
					await(resume);
				})));
			assertThat(written.await(10, TimeUnit.SECONDS)).isTrue();
			otherNodeTakesOverAndWrites(id);
			resume.countDown();
			assertThatExceptionOfType(ExecutionException.class).isThrownBy(() -> call.get(30, TimeUnit.SECONDS))
				.withCauseInstanceOf(LockLostException.class);
			assertThat(writers(id)).containsExactly("other-node");

			String next = UUID.randomUUID().toString();
			List<String> afterTheCheck = new ArrayList<>();
			tx.executeWithoutResult((status) -> {
				locks.executeWithoutResult("jpa:" + next, (lock) -> em.persist(new JpaEntry(next, "app")));
				assertThat(freeForOtherNode("jpa:" + next)).as("kept until the transaction has completed").isFalse();
				TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
					@Override
					public void beforeCompletion() { // after every beforeCommit, the check's included
						afterTheCheck.add(lockRowLockedElsewhere("jpa:" + next) ? "row locked by the JPA transaction"
								: "row free");
					}
				});
			});
			// the check ran on the JPA transaction's own connection: its row lock lasted until that commit
			assertThat(afterTheCheck).containsExactly("row locked by the JPA transaction");
			assertThat(lockRowLockedElsewhere("jpa:" + next)).as("the probe, once the transaction is over").isFalse();
			assertThat(writers(next)).containsExactly("app");
			assertThat(freeForOtherNode("jpa:" + next)).isTrue();
		});
	}

	/** Without validation the stale holder's entity commits after the other node's write: what the check prevents. */
	@Test
	void withValidationOffTheStaleJpaTransactionCommitsToo() {
		this.runner.withPropertyValues("distributed-lock.validate-at-commit=false").run((context) -> {
			Journal journal = context.getBean(Journal.class);
			String id = UUID.randomUUID().toString();
			CountDownLatch written = new CountDownLatch(1);
			CountDownLatch resume = new CountDownLatch(1);
			Future<?> call = this.caller.submit(() -> {
				try {
					journal.post(id, written, resume);
				}
				catch (LockLostException expected) {
					// the release after the commit finds the lease gone; the transaction has committed
				}
			});
			assertThat(written.await(10, TimeUnit.SECONDS)).isTrue();
			otherNodeTakesOverAndWrites(id);
			resume.countDown();
			call.get(30, TimeUnit.SECONDS);
			assertThat(writers(id)).containsExactlyInAnyOrder("app", "other-node");
		});
	}

	/** The other node takes the lock once the app's lease has ended and writes under it, autocommit. */
	private static void otherNodeTakesOverAndWrites(String id) {
		try (LockHandle taken = otherNode.acquire("jpa:" + id, LockOptions.defaults()
			.withLeaseTime(Duration.ofSeconds(10))
			.withWaitTime(Duration.ofSeconds(5)))) {
			new JdbcTemplate(otherNodePool).update(
					"INSERT INTO jpa_commit_check (resource, writer) VALUES (?, 'other-node')", id);
		}
	}

	private static boolean freeForOtherNode(String resource) {
		java.util.Optional<LockHandle> probe = otherNode.tryAcquire(resource, LockOptions.defaults());
		probe.ifPresent(LockHandle::close);
		return probe.isPresent();
	}

	/** Whether the lock row is row-locked by another transaction ({@code FOR UPDATE NOWAIT} from another pool). */
	private static boolean lockRowLockedElsewhere(String resource) {
		try {
			new JdbcTemplate(otherNodePool).execute((java.sql.Connection connection) -> {
				connection.setAutoCommit(false);
				try (java.sql.PreparedStatement ps = connection
					.prepareStatement("SELECT resource FROM distributed_lock WHERE resource = ? FOR UPDATE NOWAIT")) {
					ps.setBytes(1, resource.getBytes(java.nio.charset.StandardCharsets.UTF_8));
					ps.executeQuery().close();
					return null;
				}
				finally {
					connection.rollback();
					connection.setAutoCommit(true);
				}
			});
			return false;
		}
		catch (org.springframework.dao.PessimisticLockingFailureException ex) {
			return true; // lock wait refused: the row is locked
		}
	}

	private static List<String> writers(String id) {
		return new JdbcTemplate(otherNodePool).queryForList(
				"SELECT writer FROM jpa_commit_check WHERE resource = ? ORDER BY id", String.class, id);
	}

	private static void await(CountDownLatch latch) {
		try {
			assertThat(latch.await(30, TimeUnit.SECONDS)).isTrue();
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}

	@Configuration(proxyBeanMethods = false)
	@EntityScan(basePackageClasses = JpaEntry.class)
	static class App {

		@Bean
		EntityManager sharedEntityManager(EntityManagerFactory factory) {
			return SharedEntityManagerCreator.createSharedEntityManager(factory);
		}

		@Bean
		Journal journal(EntityManager entityManager, EntityManagerFactory factory, DataSource dataSource) {
			return new Journal(entityManager, factory, dataSource);
		}

	}

	/** The application's service: one entity per call, written with JPA under the lock. */
	public static class Journal {

		private final EntityManager entityManager;

		private final EntityManagerFactory factory;

		private final DataSource dataSource;

		/** What the last call's transaction had bound, and whether the check was registered in it. */
		final List<String> bound = new ArrayList<>();

		Journal(EntityManager entityManager, EntityManagerFactory factory, DataSource dataSource) {
			this.entityManager = entityManager;
			this.factory = factory;
			this.dataSource = dataSource;
		}

		/** What the last call's transaction had bound (read through the proxy, which has no state of its own). */
		public List<String> bound() {
			return this.bound;
		}

		/**
		 * Persists and flushes an entry, then says so and waits (past its 300 ms lease) before the transaction commits.
		 */
		@DistributedLock(resource = "jpa:#{#id}", leaseTime = "300ms")
		@Transactional
		public void post(String id, CountDownLatch written, CountDownLatch resume) {
			write(id);
			written.countDown();
			await(resume);
		}

		/**
		 * Persists and flushes an entry under the lock with the default lease (30 s, renewed), which no loaded
		 * machine outruns, unlike a 300 ms lease on a first call that still initializes Hibernate's statements.
		 */
		@DistributedLock(resource = "jpa:#{#id}")
		@Transactional
		public void record(String id) {
			write(id);
		}

		private void write(String id) {
			this.entityManager.persist(new JpaEntry(id, "app"));
			this.entityManager.flush();
			this.bound.clear();
			Object emf = TransactionSynchronizationManager.getResource(this.factory);
			Object ds = TransactionSynchronizationManager.getResource(this.dataSource);
			this.bound.add((emf != null) ? emf.getClass().getSimpleName() : "nothing");
			this.bound.add((ds != null) ? ds.getClass().getSimpleName() : "nothing");
			this.bound.add(TransactionSynchronizationManager.getSynchronizations()
				.stream()
				.anyMatch((s) -> s.getClass().getName().equals("io.github.dblock.engine.CommitCheck"))
					? "check registered" : "no check");
		}

	}

}
