package io.github.dblock.jdbc.admin;

import io.github.dblock.jdbc.sql.JdbcLockSupport;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockHandle;
import io.github.dblock.LockLostException;
import io.github.dblock.LockMode;
import io.github.dblock.LockTemplate;
import io.github.dblock.jdbc.admin.LockTableAdmin.ForceRelease;
import io.github.dblock.jdbc.optimistic.OptimisticCommitConflictTests.FailingCommits;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.dao.DataAccessException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * {@link LockTableAdmin#forceRelease} when the database rolls its transaction back with a deadlock error, as Galera
 * reports a certification conflict with a take on another node (the mixed-workload checker on Galera saw it with
 * seed 202). The failure is injected into {@link java.sql.Connection#commit()} of a real connection, which is rolled
 * back ({@link FailingCommits}).
 */
class ForceReleaseConflictTests {

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

	@Test
	void aForcedReleaseRolledBackByADeadlockRunsAgainAndFreesTheLock() {
		LockTemplate node = LockNodes.node(LockMode.LEASE, "node-x", pool);
		String resource = "force-release-conflict-" + UUID.randomUUID();
		LockHandle stale = node.acquire(resource);
		long staleToken = stale.fencingToken();
		FailingCommits failing = new FailingCommits(pool, 1);

		Optional<ForceRelease> released = new LockTableAdmin(failing, LockNodes.TABLE, Duration.ofSeconds(2))
			.forceRelease(resource, "test");

		assertThat(failing.failedCommits).as("commits refused").hasValue(1);
		assertThat(released).get().satisfies((r) -> {
			assertThat(r.wasHeld()).isTrue();
			assertThat(r.previousHolder()).startsWith("node-x [");
			assertThat(r.previousFencingToken()).isBetween(staleToken, staleToken + 1023);
			assertThat(r.fencingToken()).isGreaterThan(staleToken);
		});
		assertThatExceptionOfType(LockLostException.class).isThrownBy(stale::close);
	}

	@Test
	void aForcedReleaseRolledBackByADeadlockEveryTimeFailsAfterItsRetriesAndFreesNothing() {
		LockTemplate node = LockNodes.node(LockMode.LEASE, "node-x", pool);
		String resource = "force-release-conflict-" + UUID.randomUUID();
		LockHandle holder = node.acquire(resource);
		FailingCommits failing = new FailingCommits(pool, 1_000);

		assertThatExceptionOfType(DataAccessException.class)
			.isThrownBy(() -> new LockTableAdmin(failing, LockNodes.TABLE, Duration.ofSeconds(2)).forceRelease(resource,
					"test"))
			.withMessageContaining("Deadlock");

		assertThat(failing.failedCommits).as("the first attempt and its retries")
			.hasValue(1 + JdbcLockSupport.MAX_TRANSIENT_RETRIES);
		assertThat(holder.isHeld()).isTrue();
		holder.close(); // still held: the release succeeds
	}

}
