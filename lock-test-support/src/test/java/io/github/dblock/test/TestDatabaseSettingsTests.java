package io.github.dblock.test;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The server settings the suite says it runs with are the ones its sessions have: CI runs the suite at
 * REPEATABLE READ and at READ COMMITTED ({@code lock.test.transaction-isolation}), with MariaDB's snapshot
 * isolation ON and OFF ({@code lock.test.snapshot-isolation}).
 */
class TestDatabaseSettingsTests {

	@Test
	void everyPooledSessionRunsAtTheIsolationLevelTheSuiteAsksFor() {
		try (HikariDataSource pool = TestDatabase.get().newDataSource(2)) {
			JdbcTemplate jdbc = new JdbcTemplate(pool);
			String variable = (TestDatabase.get().variable("transaction_isolation") != null) ? "transaction_isolation"
					: "tx_isolation";
			for (int i = 0; i < 3; i++) {
				assertThat(jdbc.queryForObject("SELECT @@SESSION." + variable, String.class))
					.isEqualTo(TestDatabase.transactionIsolationSetting());
			}
			assertThat(TestDatabase.get().description()).contains(
					TestDatabase.transactionIsolationSetting().equals("REPEATABLE-READ") ? "" : "READ-COMMITTED");
		}
	}

	@Test
	void snapshotIsolationIsWhatTheSuiteAsksFor() {
		String setting = TestDatabase.snapshotIsolationSetting();
		String value = TestDatabase.get().variable("innodb_snapshot_isolation");
		if (value != null && !setting.equals("SERVER")) {
			assertThat(value).isEqualTo(setting);
		}
		assertThat(TestDatabase.get().description()).contains(
				(value == null) ? "" : "innodb_snapshot_isolation=" + value);
	}

}
