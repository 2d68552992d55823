package io.github.dblock.jdbc.optimistic;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLTransactionRollbackException;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.Reliability;
import io.github.dblock.test.TestDatabase;
import io.github.dblock.wait.Backoff;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DelegatingDataSource;
import org.springframework.jdbc.support.JdbcTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatRuntimeException;

/**
 * OPTIMISTIC when the database refuses the COMMIT with a deadlock error, as Galera and group replication report a
 * certification conflict: the attempt counts as a conflict and the work runs again. The failure is injected into
 * {@link Connection#commit()} of a real connection (no Galera here); the server then sees a rollback, so only the
 * second run's write exists.
 */
public class OptimisticCommitConflictTests {

	private static HikariDataSource pool;

	private static JdbcTemplate jdbc;

	@BeforeAll
	static void pool() {
		pool = TestDatabase.get().newDataSource(4);
		LockNodes.migrateOnce(pool);
		jdbc = new JdbcTemplate(pool);
		jdbc.execute("CREATE TABLE IF NOT EXISTS lock_test_item (id VARCHAR(64) PRIMARY KEY, note VARCHAR(64))");
	}

	@AfterAll
	static void close() {
		pool.close();
	}

	@Test
	void aCommitRefusedWithADeadlockRunsTheWorkAgainWithBothTransactionManagers() {
		for (boolean translating : new boolean[] { false, true }) {
			FailingCommits dataSource = new FailingCommits(pool, 1);
			PlatformTransactionManager transactions = translating ? new JdbcTransactionManager(dataSource)
					: new DataSourceTransactionManager(dataSource);
			LockTemplate node = LockNodes.node(new OptimisticLockProvider(dataSource, LockNodes.TABLE, transactions,
					Duration.ofSeconds(5), new Backoff(Duration.ofMillis(5), Duration.ofMillis(20)), 5), "optimistic");
			String resource = "optimistic-commit-conflict-" + UUID.randomUUID();
			AtomicInteger runs = new AtomicInteger();
			String result = node.execute(resource, (lock) -> {
				int run = runs.incrementAndGet();
				new JdbcTemplate(dataSource).update("INSERT INTO lock_test_item (id, note) VALUES (?, ?)", resource,
						"run " + run);
				return "committed on run " + run;
			});
			assertThat(result).as(transactions.getClass().getSimpleName()).isEqualTo("committed on run 2");
			assertThat(dataSource.failedCommits).hasValue(1);
			assertThat(jdbc.queryForList("SELECT note FROM lock_test_item WHERE id = ?", String.class, resource))
				.as("the refused commit rolled back").containsExactly("run 2");
			Reliability.count("OPTIMISTIC", "commits refused with a deadlock (injected), then re-run", 1);
		}
	}

	@Test
	void aCommitRefusedForAnotherReasonIsNotRetried() {
		FailingCommits dataSource = new FailingCommits(pool, 1);
		dataSource.error = new SQLException("Lost connection to server during query", "08S01", 2013);
		LockTemplate node = LockNodes.node(new OptimisticLockProvider(dataSource, LockNodes.TABLE,
				new DataSourceTransactionManager(dataSource), Duration.ofSeconds(5),
				new Backoff(Duration.ofMillis(5), Duration.ofMillis(20)), 5), "optimistic");
		AtomicInteger runs = new AtomicInteger();
		assertThatRuntimeException().isThrownBy(() -> node.execute("optimistic-commit-lost-" + UUID.randomUUID(),
				LockOptions.defaults(), (lock) -> runs.incrementAndGet()))
			.withStackTraceContaining("Lost connection");
		assertThat(runs).hasValue(1);
	}

	/**
	 * On Galera another node's commit aborts the work's transaction and the work's next statement fails with 1213
	 * (seen in {@code GaleraClusterTests}); injected here as the work's own exception: the work runs again. A lock
	 * wait timeout (1205) thrown by the work rolls back only its statement, so it surfaces.
	 */
	@Test
	void aWorkStatementFailingWithADeadlockRunsTheWorkAgainButALockWaitTimeoutSurfaces() {
		LockTemplate node = LockNodes.node(new OptimisticLockProvider(pool, LockNodes.TABLE,
				new JdbcTransactionManager(pool), Duration.ofSeconds(5),
				new Backoff(Duration.ofMillis(5), Duration.ofMillis(20)), 5), "optimistic");
		String resource = "optimistic-work-deadlock-" + UUID.randomUUID();
		AtomicInteger runs = new AtomicInteger();
		String result = node.execute(resource, (lock) -> {
			int run = runs.incrementAndGet();
			new JdbcTemplate(pool).update("INSERT INTO lock_test_item (id, note) VALUES (?, ?)", resource, "run " + run);
			if (run == 1) {
				throw new IllegalStateException("the work's statement failed", new SQLTransactionRollbackException(
						"Deadlock found when trying to get lock; try restarting transaction", "40001", 1213));
			}
			return "committed on run " + run;
		});
		assertThat(result).isEqualTo("committed on run 2");
		assertThat(jdbc.queryForList("SELECT note FROM lock_test_item WHERE id = ?", String.class, resource))
			.as("the aborted run rolled back").containsExactly("run 2");

		AtomicInteger timedOut = new AtomicInteger();
		assertThatRuntimeException().isThrownBy(() -> node.execute("optimistic-work-timeout-" + UUID.randomUUID(),
				LockOptions.defaults(), (lock) -> {
					timedOut.incrementAndGet();
					throw new IllegalStateException(new SQLException("Lock wait timeout exceeded", "HY000", 1205));
				})).withStackTraceContaining("Lock wait timeout");
		assertThat(timedOut).hasValue(1);
	}

	/**
	 * Hands out real connections whose first {@code n} commits roll back and throw instead of committing, as a
	 * server refusing the commit does. Single-threaded.
	 */
	public static final class FailingCommits extends DelegatingDataSource {

		public final AtomicInteger failedCommits = new AtomicInteger();

		private final int failures;

		SQLException error = new SQLTransactionRollbackException(
				"Deadlock found when trying to get lock; try restarting transaction", "40001", 1213);

		public FailingCommits(DataSource target, int failures) {
			super(target);
			this.failures = failures;
		}

		@Override
		public Connection getConnection() throws SQLException {
			Connection target = super.getConnection();
			return (Connection) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] { Connection.class },
					(proxy, method, args) -> {
						if (method.getName().equals("commit") && !target.getAutoCommit()
								&& this.failedCommits.get() < this.failures) {
							this.failedCommits.incrementAndGet();
							target.rollback(); // as the server does when it refuses a commit
							throw this.error;
						}
						try {
							return method.invoke(target, args);
						}
						catch (InvocationTargetException ex) {
							throw ex.getTargetException();
						}
					});
		}

	}

}
