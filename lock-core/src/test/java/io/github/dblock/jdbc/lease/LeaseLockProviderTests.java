package io.github.dblock.jdbc.lease;

import io.github.dblock.jdbc.sql.LockDialect;
import java.time.Duration;
import java.util.List;
import java.util.UUID;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockTemplate;
import io.github.dblock.test.CountingDataSource;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import io.github.dblock.wait.Backoff;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Round-trip budget and driver-setting independence of the LEASE provider, on the real database.
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class LeaseLockProviderTests {

	@Test
	void uncontendedAcquireAndReleaseOfAKnownResourceCostOneStatementEachAndReentryCostsNone() {
		try (HikariDataSource pool = TestDatabase.get().newDataSource(2)) {
			LockNodes.migrateOnce(pool);
			LockNodes.dialect(pool); // detected once per JVM; when this test runs first it must not be counted
			CountingDataSource counting = new CountingDataSource(pool);
			LockTemplate node = LockNodes.node(LockMode.LEASE, "counted", counting);
			String resource = "budget-" + UUID.randomUUID();

			node.acquire(resource).close(); // first use creates the row
			assertThat(counting.statements()).extracting((sql) -> sql.substring(0, 6))
				.containsExactly("UPDATE", "SELECT", "INSERT", "UPDATE");
			counting.reset();

			try (LockHandle outer = node.acquire(resource)) {
				assertThat(counting.statements()).hasSize(1).allMatch((sql) -> sql.startsWith("UPDATE"));
				try (LockHandle inner = node.acquire(resource)) {
					assertThat(inner.fencingToken()).isEqualTo(outer.fencingToken());
				}
				assertThat(counting.executed()).as("reentry and inner release").hasSize(1);
			}
			assertThat(counting.executed()).hasSize(2);
			assertThat(counting.statements().get(1)).startsWith("UPDATE").contains("waiting_owner = NULL");
			// bounded by the server on MariaDB (no driver timer per statement), by the driver's query timeout on MySQL
			// (the take's bound is the caller's remaining wait, at most the statement timeout; the release's is the latter)
			boolean mariaDb = LockNodes.dialect(pool) == LockDialect.MARIADB;
			assertThat(counting.executed()).allMatch(
					(sql) -> mariaDb ? sql.matches("SET STATEMENT max_statement_time=[1-5] FOR UPDATE .*") : sql.startsWith("UPDATE"));
			assertThat(counting.executed().get(1)).startsWith(mariaDb ? "SET STATEMENT max_statement_time=5 FOR " : "UPDATE");
			assertThat(counting.warnings()).isEmpty();
		}
	}

	@Test
	void aFirstAcquisitionCostsThreeStatementsAndABusySingleAttemptTwo() {
		try (HikariDataSource pool = TestDatabase.get().newDataSource(2)) {
			LockNodes.migrateOnce(pool);
			CountingDataSource counting = new CountingDataSource(pool);
			LockTemplate node = LockNodes.node(LockMode.LEASE, "counted", counting);
			LockTemplate other = LockNodes.node(LockMode.LEASE, "other", pool);
			String resource = "budget-new-" + UUID.randomUUID();
			try (LockHandle lock = node.acquire(resource)) {
				assertThat(counting.statements()).extracting((sql) -> sql.substring(0, 6))
					.containsExactly("UPDATE", "SELECT", "INSERT");
			}
			counting.reset();
			try (LockHandle held = other.acquire(resource)) {
				assertThat(node.tryAcquire(resource)).isEmpty();
				assertThat(counting.statements()).extracting((sql) -> sql.substring(0, 6)).containsExactly("UPDATE", "SELECT");
			}
			assertThat(counting.warnings()).isEmpty();
		}
	}

	@Test
	void ownershipDoesNotDependOnWhetherTheDriverReportsFoundRowsOrAffectedRows() {
		for (String flag : List.of("useAffectedRows=true", "useAffectedRows=false")) {
			try (HikariDataSource pool = pool(flag, true)) {
				LockNodes.migrateOnce(pool);
				LockTemplate a = LockNodes.node(LockMode.LEASE, "a", pool);
				LockTemplate b = LockNodes.node(LockMode.LEASE, "b", pool);
				String resource = "rows-" + UUID.randomUUID();
				long first;
				try (LockHandle lock = a.acquire(resource)) {
					first = lock.fencingToken();
					assertThat(b.tryAcquire(resource)).as(flag).isEmpty();
				}
				try (LockHandle lock = b.acquire(resource)) {
					assertThat(lock.fencingToken()).as(flag).isGreaterThan(first);
					assertThat(a.tryAcquire(resource)).as(flag).isEmpty();
				}
			}
		}
	}

	@Test
	void poolsWithAutocommitOffCommitEveryLockStatement() {
		try (HikariDataSource manual = pool("", false); HikariDataSource auto = pool("", true)) {
			LockNodes.migrateOnce(auto);
			LockTemplate a = LockNodes.node(LockMode.LEASE, "manual-commit", manual);
			LockTemplate b = LockNodes.node(LockMode.LEASE, "auto-commit", auto);
			String resource = "commit-" + UUID.randomUUID();
			try (LockHandle lock = a.acquire(resource)) {
				assertThat(b.tryAcquire(resource)).as("visible to other nodes while held").isEmpty();
			}
			try (LockHandle lock = b.tryAcquire(resource).orElseThrow()) {
				assertThat(lock.isHeld()).isTrue();
			}
		}
	}

	@Test
	void theWarningCheckAboveWouldSeeAServerWarning() throws Exception {
		try (HikariDataSource pool = TestDatabase.get().newDataSource(1)) {
			CountingDataSource counting = new CountingDataSource(pool);
			try (var c = counting.getConnection(); var ps = c.prepareStatement("SELECT 1/0")) {
				ps.executeQuery().close();
			}
			assertThat(counting.warnings()).hasSize(1);
		}
	}

	@Test
	void backoffGrowsWithJitterAndStopsAtTheLeaseEndAndTheDeadline() {
		Backoff backoff = new Backoff(Duration.ofMillis(10), Duration.ofMillis(200));
		long ms = 1_000_000L;
		for (int i = 0; i < 50; i++) {
			assertThat(backoff.pauseNanos(0, 0, Long.MAX_VALUE)).isBetween(5 * ms, 10 * ms);
			assertThat(backoff.pauseNanos(3, 0, Long.MAX_VALUE)).isBetween(40 * ms, 80 * ms);
			assertThat(backoff.pauseNanos(30, 0, Long.MAX_VALUE)).isBetween(100 * ms, 200 * ms);
			assertThat(backoff.pauseNanos(30, 3 * ms, Long.MAX_VALUE)).isLessThanOrEqualTo(4 * ms);
			assertThat(backoff.pauseNanos(30, 0, 2 * ms)).isLessThanOrEqualTo(2 * ms);
		}
	}

	private static HikariDataSource pool(String urlFlag, boolean autoCommit) {
		TestDatabase db = TestDatabase.get();
		HikariConfig config = new HikariConfig();
		String url = db.jdbcUrl();
		if (!urlFlag.isEmpty()) {
			url = url + (url.contains("?") ? "&" : "?") + urlFlag;
		}
		config.setJdbcUrl(url);
		config.setUsername(db.username());
		config.setPassword(db.password());
		config.setAutoCommit(autoCommit);
		config.setMaximumPoolSize(4);
		return new HikariDataSource(config);
	}

}
