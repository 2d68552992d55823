package io.github.dblock.idempotency;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.jdbc.sql.LockTable;
import io.github.dblock.jdbc.admin.LockTableCleaner;
import io.github.dblock.test.CountingDataSource;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The cleanup of idempotency records ({@link LockTableCleaner#forIdempotencyRecords}) on the real database: records
 * past their retention go, except a running claim whose lease has not ended and one whose fencing token is ahead of
 * the server clock; the statements are the lock table
 * cleaner's (candidates on the {@code retain_until} index, then primary-key locks with {@code SKIP LOCKED}).
 */
class IdempotencyRecordCleanupTests {

	private static HikariDataSource pool;

	private static JdbcTemplate jdbc;

	@BeforeAll
	static void setUp() {
		pool = TestDatabase.get().newDataSource(4);
		LockNodes.migrateOnce(pool);
		jdbc = new JdbcTemplate(pool);
	}

	@AfterAll
	static void tearDown() {
		pool.close();
	}

	private static void insert(String key, String status, String expiresAt, String retainUntil) {
		jdbc.update("INSERT INTO distributed_lock_idem (idem_key, status, owner_token, holder, fencing_token, attempts,"
				+ " started_at, expires_at, completed_at, retain_until) VALUES (?, ?, NULL, 'test', 1, 1,"
				+ " UTC_TIMESTAMP(6) - INTERVAL 2 DAY, " + expiresAt + ", NULL, " + retainUntil + ")",
				key.getBytes(StandardCharsets.UTF_8), status);
	}

	private static List<String> remaining(String prefix) {
		return jdbc.queryForList("SELECT CAST(idem_key AS CHAR) FROM distributed_lock_idem WHERE idem_key LIKE ?"
				+ " ORDER BY idem_key", String.class, prefix + "%");
	}

	@Test
	void recordsPastTheirRetentionAreDeletedButNotARunningClaimWhoseLeaseGoesOn() {
		String p = "cleanup-" + UUID.randomUUID() + "-";
		String past = "UTC_TIMESTAMP(6) - INTERVAL 1 HOUR";
		String future = "UTC_TIMESTAMP(6) + INTERVAL 1 HOUR";
		insert(p + "1-succeeded-expired", "SUCCEEDED", past, past);
		insert(p + "2-succeeded-retained", "SUCCEEDED", past, future);
		insert(p + "3-failed-expired", "FAILED", past, past);
		insert(p + "4-running-lease-ended", "RUNNING", past, past);
		insert(p + "5-running-lease-goes-on", "RUNNING", future, past);
		CountingDataSource counting = new CountingDataSource(pool);
		int deleted = LockTableCleaner.forIdempotencyRecords(counting, LockNodes.TABLE, 500, Duration.ofSeconds(5))
			.deleteExpired();
		assertThat(deleted).isGreaterThanOrEqualTo(3);
		assertThat(remaining(p)).containsExactly(p + "2-succeeded-retained", p + "5-running-lease-goes-on");
		assertThat(counting.executed().get(0)).startsWith("SELECT idem_key FROM `distributed_lock_idem` WHERE "
				+ "retain_until < UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND AND fencing_token < TIMESTAMPDIFF(MICROSECOND,"
				+ " '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) - ? AND (status <> 'RUNNING' OR expires_at < "
				+ "UTC_TIMESTAMP(6)) ORDER BY retain_until LIMIT ?");
		assertThat(counting.executed()).filteredOn((sql) -> sql.contains("FOR UPDATE SKIP LOCKED"))
			.allSatisfy((sql) -> assertThat(sql).contains("FORCE INDEX (PRIMARY) WHERE idem_key IN ("));
		assertThat(counting.executed()).filteredOn((sql) -> sql.startsWith("DELETE"))
			.isNotEmpty()
			.allSatisfy((sql) -> assertThat(sql).contains("FORCE INDEX (PRIMARY) WHERE idem_key IN ("));
		assertThat(counting.warnings()).isEmpty();
		jdbc.update("DELETE FROM distributed_lock_idem WHERE idem_key LIKE ?", p + "%");
	}

	@Test
	void aRecordWhoseTokenIsAheadOfTheClockIsKeptUntilTheClockHasPassedIt() {
		String key = "cleanup-ahead-" + UUID.randomUUID();
		String past = "UTC_TIMESTAMP(6) - INTERVAL 1 HOUR";
		insert(key, "FAILED", past, past);
		// a token ahead of the server clock (a clock step back): a claim after a delete would start below it
		jdbc.update("UPDATE distributed_lock_idem SET fencing_token = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00',"
				+ " UTC_TIMESTAMP(6)) + 3600000000 WHERE idem_key = ?", key.getBytes(StandardCharsets.UTF_8));
		LockTableCleaner.forIdempotencyRecords(pool, LockNodes.TABLE, 500, Duration.ofSeconds(5)).deleteExpired();
		assertThat(remaining(key)).as("kept while its token is ahead of the clock").containsExactly(key);
		jdbc.update("DELETE FROM distributed_lock_idem WHERE idem_key = ?", key.getBytes(StandardCharsets.UTF_8));
	}

	@Test
	void aMissingRecordsTableIsSkipped() {
		LockTable without = LockTable.of("no_such_lock_table_" + UUID.randomUUID().toString().substring(0, 8));
		assertThat(LockTableCleaner.forIdempotencyRecords(pool, without, 100, Duration.ofSeconds(5)).deleteExpired())
			.isZero();
	}

}
