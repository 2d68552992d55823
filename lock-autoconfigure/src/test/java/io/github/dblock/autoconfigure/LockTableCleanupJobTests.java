package io.github.dblock.autoconfigure;

import java.time.Duration;
import java.util.Optional;
import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockMode;
import io.github.dblock.LockTemplate;
import io.github.dblock.jdbc.admin.LockTableCleaner;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The cleanup job runs on one instance per period, and is configured by default.
 */
class LockTableCleanupJobTests {

	private static HikariDataSource pool;

	@BeforeAll
	static void pool() {
		pool = TestDatabase.get().newDataSource(4);
		LockNodes.migrateOnce(pool);
	}

	@AfterAll
	static void close() {
		pool.close();
	}

	private static LockTableCleanupJob job(LockTemplate node) {
		return new LockTableCleanupJob(new LockTableCleaner(pool, LockNodes.TABLE, Duration.ofDays(1), 100,
				Duration.ofSeconds(5)), node, Duration.ofSeconds(30));
	}

	@Test
	void onlyOneInstanceCleansPerPeriodAndItDeletesRowsOlderThanTheRetention() {
		new JdbcTemplate(pool).update("UPDATE distributed_lock SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 MINUTE "
				+ "WHERE resource = ?", (Object) LockTableCleanupJob.LOCK_NAME.getBytes(java.nio.charset.StandardCharsets.UTF_8));
		String resource = "cleanup-job-" + UUID.randomUUID();
		LockTemplate nodeA = LockNodes.node(LockMode.LEASE, "cleaner-a", pool);
		nodeA.acquire(resource).close();
		// a row last used two days ago: its lease and its fencing token (which follows the server clock in µs)
		new JdbcTemplate(pool).update("UPDATE distributed_lock SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 2 DAY, "
				+ "fencing_token = fencing_token - 172800000000, acquired_at = UTC_TIMESTAMP(6) - INTERVAL 2 DAY "
				+ "WHERE resource = ?",
				(Object) resource.getBytes(java.nio.charset.StandardCharsets.UTF_8));

		Optional<Integer> first = job(nodeA).runOnce();
		Optional<Integer> second = job(LockNodes.node(LockMode.LEASE, "cleaner-b", pool)).runOnce();

		assertThat(first).isPresent();
		assertThat(first.get()).isGreaterThanOrEqualTo(1);
		assertThat(second).as("the other instance skips this period (minimum hold)").isEmpty();
		assertThat(new JdbcTemplate(pool).queryForObject("SELECT COUNT(*) FROM distributed_lock WHERE resource = ?",
				Integer.class, (Object) resource.getBytes(java.nio.charset.StandardCharsets.UTF_8))).isZero();
	}

	@Test
	void theJobIsConfiguredByDefaultAndCanBeSwitchedOff() {
		ApplicationContextRunner runner = new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, DistributedLockAutoConfiguration.class))
			.withPropertyValues(TestDatabase.get().springProperties());
		runner.run((context) -> assertThat(context).hasSingleBean(LockTableCleanupJob.class));
		runner.withPropertyValues("distributed-lock.cleanup.enabled=false")
			.run((context) -> assertThat(context).doesNotHaveBean(LockTableCleanupJob.class));
		runner.withPropertyValues("distributed-lock.cleanup.retention=30m").run((context) -> {
			assertThat(context).hasFailed();
			assertThat(context.getStartupFailure()).rootCause().hasMessageContaining("distributed-lock.cleanup.retention");
		});
	}

}
