package io.github.dblock.benchmarks;

import java.time.Duration;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.jdbc.sql.LockSchema;
import io.github.dblock.jdbc.sql.LockTable;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs the idempotency scenario briefly: every part produced samples, and every burst of concurrent duplicates ran
 * its work exactly once. Never asserts on speed.
 */
class IdempotencyScenarioTests {

	@Test
	void everyPartProducesFiguresAndEveryBurstRunsItsWorkOnce() throws Exception {
		LockTable table = LockTable.of("bench_idem_smoke");
		try (HikariDataSource pool = BenchDatabase.get().newPool(12, "bench-idem-smoke")) {
			LockSchema.migrate(pool, table);
			IdempotencyScenario.Result result = IdempotencyScenario.run(pool, table, Duration.ofMillis(300), 8);
			assertThat(result.firstCall().size()).isPositive();
			assertThat(result.duplicate().size()).isPositive();
			assertThat(result.leaseLock().size()).isPositive();
			assertThat(result.bursts()).isPositive();
			assertThat(result.executions()).as("one execution per burst").isEqualTo(result.bursts());
			assertThat(result.firstCall().percentileMillis(50)).isPositive()
				.isLessThanOrEqualTo(result.firstCall().percentileMillis(99));
		}
	}

}
