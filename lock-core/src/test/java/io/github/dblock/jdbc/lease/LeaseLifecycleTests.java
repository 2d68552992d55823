package io.github.dblock.jdbc.lease;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.CurrentLock;
import io.github.dblock.Fencing;
import io.github.dblock.LockHandle;
import io.github.dblock.LockLostException;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.test.CountingDataSource;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DelegatingDataSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * The LEASE lifecycle on the real database: renewal, lost-lease detection, fenced writes by a stalled holder, and
 * the minimum hold time.
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class LeaseLifecycleTests {

	private static final Duration SHORT_LEASE = LockTemplate.MIN_DEFAULT_LEASE_TIME;

	private static HikariDataSource pool;

	private static JdbcTemplate jdbc;

	@BeforeAll
	static void pool() {
		pool = TestDatabase.get().newDataSource(8);
		LockNodes.migrateOnce(pool);
		jdbc = new JdbcTemplate(pool);
		jdbc.execute("CREATE TABLE IF NOT EXISTS lock_test_account (id VARCHAR(64) PRIMARY KEY, balance BIGINT NOT NULL, "
				+ "fencing_token BIGINT NOT NULL DEFAULT 0)");
	}

	@AfterAll
	static void close() {
		pool.close();
	}

	/** A node whose default lease is short, so renewal happens within the test. */
	private static LockTemplate renewingNode(String name, javax.sql.DataSource dataSource) {
		return renewingNode(name, dataSource, SHORT_LEASE);
	}

	private static LockTemplate renewingNode(String name, javax.sql.DataSource dataSource, Duration lease) {
		return new LockTemplate(List.of(LockNodes.provider(LockMode.LEASE, dataSource)), LockMode.LEASE, Duration.ZERO,
				lease, name);
	}

	private static Object bytes(String resource) {
		return resource.getBytes(StandardCharsets.UTF_8);
	}

	@Test
	void aLockTakenWithoutALeaseTimeIsRenewedAndStaysHeldForSeveralLeases() throws Exception {
		LockTemplate holder = renewingNode("renewing", pool);
		LockTemplate other = LockNodes.node(LockMode.LEASE, "other", pool);
		String resource = "renewed-" + UUID.randomUUID();
		try (LockHandle lock = holder.acquire(resource)) {
			long end = System.nanoTime() + 4 * SHORT_LEASE.toNanos();
			while (System.nanoTime() < end) {
				assertThat(other.tryAcquire(resource)).as("still held").isEmpty();
				assertThat(lock.isHeld()).isTrue();
				Thread.sleep(150);
			}
			assertThat(jdbc.queryForObject("SELECT TIMESTAMPDIFF(MICROSECOND, acquired_at, expires_at) FROM "
					+ "distributed_lock WHERE resource = ?", Long.class, bytes(resource)))
				.as("expiry moved forward by renewals").isGreaterThan(3 * SHORT_LEASE.toNanos() / 1000);
		}
		assertThat(other.tryAcquire(resource).map((lock) -> {
			lock.close();
			return true;
		})).contains(true);
	}

	@Test
	void anExplicitLeaseTimeIsNotRenewed() throws Exception {
		LockTemplate holder = renewingNode("explicit", pool);
		LockTemplate other = LockNodes.node(LockMode.LEASE, "other", pool);
		String resource = "explicit-" + UUID.randomUUID();
		LockHandle lock = holder.acquire(resource, LockOptions.defaults().withLeaseTime(Duration.ofMillis(400)));
		try (LockHandle successor = other.acquire(resource, LockOptions.defaults().withWaitTime(Duration.ofSeconds(5)))) {
			assertThat(successor.fencingToken()).isGreaterThan(lock.fencingToken());
		}
		assertThatExceptionOfType(LockLostException.class).isThrownBy(lock::close);
	}

	@Test
	void renewalStopsWhenTheLockIsReleased() throws Exception {
		CountingDataSource counting = new CountingDataSource(pool);
		LockTemplate holder = renewingNode("counted", counting);
		String resource = "stops-" + UUID.randomUUID();
		try (LockHandle lock = holder.acquire(resource)) {
			long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
			while (renewals(counting) < 2) {
				assertThat(System.nanoTime() - deadline).as("renewed twice while held").isNegative();
				Thread.sleep(20);
			}
			assertThat(lock.isHeld()).isTrue();
		}
		int afterRelease = counting.executed().size();
		Thread.sleep(SHORT_LEASE.toMillis());
		assertThat(counting.executed()).hasSize(afterRelease);
	}

	private static long renewals(CountingDataSource counting) {
		return counting.statements().stream().filter((sql) -> sql.startsWith("UPDATE") && sql.contains("SET expires_at"))
			.count();
	}

	@Test
	void aLeaseTakenOverWhileHeldIsReportedLostAndItsReleaseChangesNothing() throws Exception {
		// 3 s: the takeover below must be in place before the first renewal (1 s in) on a loaded machine too
		Duration lease = Duration.ofSeconds(3);
		LockTemplate holder = renewingNode("victim", pool, lease);
		holder.setInterruptOnLoss(true);
		String resource = "stolen-" + UUID.randomUUID();
		CountDownLatch told = new CountDownLatch(1);
		AtomicReference<LockHandle> reported = new AtomicReference<>();
		AtomicBoolean interrupted = new AtomicBoolean();
		AtomicReference<Throwable> releaseFailure = new AtomicReference<>();
		Thread work = new Thread(() -> {
			LockHandle lock = holder.acquire(resource);
			lock.onLost((handle) -> {
				reported.set(handle);
				told.countDown();
			});
			// Simulate the lease expiring during a stall and another node taking the lock.
			jdbc.update("UPDATE distributed_lock SET owner_token = 'another-owner', holder = 'thief', "
					+ "expires_at = UTC_TIMESTAMP(6) + INTERVAL 1 MINUTE WHERE resource = ?", bytes(resource));
			try {
				Thread.sleep(10_000);
			}
			catch (InterruptedException ex) {
				interrupted.set(true);
			}
			try {
				lock.close();
			}
			catch (Throwable ex) {
				releaseFailure.set(ex);
			}
		});
		long start = System.nanoTime();
		work.start();
		assertThat(told.await(5, TimeUnit.SECONDS)).as("listener told").isTrue();
		// The first renewal (a third of the lease in) finds the takeover; the local fallback would only fire once
		// the whole lease had passed.
		assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).as("told at the first renewal")
			.isLessThan(lease.toMillis() * 3 / 4);
		assertThat(reported.get().isHeld()).isFalse();
		work.join(5_000);
		assertThat(interrupted).as("holder interrupted by the policy").isTrue();
		assertThat(releaseFailure.get()).isInstanceOf(LockLostException.class);
		assertThat(jdbc.queryForObject("SELECT owner_token FROM distributed_lock WHERE resource = ?", String.class,
				bytes(resource)))
			.as("release changed nothing").isEqualTo("another-owner");
	}

	@Test
	void aLeaseIsPresumedLostWhenTheDatabaseStaysUnreachableUntilItEnds() throws Exception {
		AtomicBoolean down = new AtomicBoolean();
		DelegatingDataSource flaky = new DelegatingDataSource(pool) {
			@Override
			public Connection getConnection() throws SQLException {
				if (down.get()) {
					// as HikariCP reports a database it cannot connect to: its timeout, caused by the connection failure
					throw new SQLTransientConnectionException("database unreachable (simulated)", "08001",
							new java.net.ConnectException("Connection refused (simulated)"));
				}
				return super.getConnection();
			}
		};
		LockTemplate holder = renewingNode("cut-off", flaky);
		String resource = "unreachable-" + UUID.randomUUID();
		long acquiredAt = System.nanoTime();
		LockHandle lock = holder.acquire(resource);
		CountDownLatch told = new CountDownLatch(1);
		lock.onLost((handle) -> told.countDown());
		down.set(true);
		assertThat(told.await(5, TimeUnit.SECONDS)).isTrue();
		long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - acquiredAt);
		// Failed renewals are retried; only once the lease must have run out is the lock presumed lost.
		assertThat(millis).as("not before the lease could have run out").isGreaterThanOrEqualTo(SHORT_LEASE.toMillis())
			.as("soon after it").isLessThan(SHORT_LEASE.toMillis() + 1_000);
		assertThat(lock.isHeld()).isFalse();
		assertThatExceptionOfType(org.springframework.dao.DataAccessException.class)
			.as("a lost lock is not re-entered: the call acquires anew, from the unreachable database")
			.isThrownBy(() -> holder.acquire(resource));
		assertThatExceptionOfType(LockLostException.class).isThrownBy(lock::close);
		assertThat(holder.introspection().localResourceCount()).isZero();
	}

	@Test
	void aStalledHolderIsSupersededAndItsFencedWriteIsRejected() throws Exception {
		LockTemplate stalled = LockNodes.node(LockMode.LEASE, "stalled", pool);
		LockTemplate successor = LockNodes.node(LockMode.LEASE, "successor", pool);
		String account = UUID.randomUUID().toString();
		jdbc.update("INSERT INTO lock_test_account (id, balance) VALUES (?, 100)", account);
		String resource = "account:" + account;
		LockHandle old = stalled.acquire(resource, LockOptions.defaults().withLeaseTime(Duration.ofMillis(300)));
		Thread.sleep(500); // the holder stalls past its lease

		try (LockHandle current = successor.acquire(resource, LockOptions.defaults().withWaitTime(Duration.ofSeconds(5)))) {
			assertThat(Fencing.requireApplied(fencedWrite(account, 70, current), current)).isEqualTo(1);
		}
		assertThat(old.isHeld()).isFalse();
		assertThatExceptionOfType(LockLostException.class)
			.isThrownBy(() -> Fencing.requireApplied(fencedWrite(account, 999, old), old))
			.withMessageContaining(String.valueOf(old.fencingToken()));
		assertThat(jdbc.queryForObject("SELECT balance FROM lock_test_account WHERE id = ?", Long.class, account))
			.isEqualTo(70);
		assertThatExceptionOfType(LockLostException.class).isThrownBy(old::close);
	}

	private static int fencedWrite(String account, long balance, LockHandle lock) {
		return jdbc.update("UPDATE lock_test_account SET balance = ?, fencing_token = ? WHERE id = ? AND fencing_token <= ?",
				balance, lock.fencingToken(), account, lock.fencingToken());
	}

	@Test
	void aMinimumHoldTimeKeepsTheLockTakenAfterAnEarlyRelease() throws Exception {
		LockTemplate first = LockNodes.node(LockMode.LEASE, "first", pool);
		LockTemplate second = LockNodes.node(LockMode.LEASE, "second", pool);
		String resource = "min-hold-" + UUID.randomUUID();
		long start = System.nanoTime();
		first.acquire(resource, LockOptions.defaults().withMinHoldTime(Duration.ofMillis(800))).close();
		assertThat(second.tryAcquire(resource)).as("still taken right after release").isEmpty();
		try (LockHandle lock = second.acquire(resource, LockOptions.defaults().withWaitTime(Duration.ofSeconds(5)))) {
			assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isGreaterThanOrEqualTo(700);
		}
		assertThatExceptionOfType(IllegalArgumentException.class).isThrownBy(() -> first.acquire(resource,
				LockOptions.defaults().withLeaseTime(Duration.ofSeconds(1)).withMinHoldTime(Duration.ofSeconds(2))))
			.withMessageContaining("exceeds the lease time");
	}

	@Test
	void theCurrentLockIsVisibleToCodeDeeperInTheCall() {
		LockTemplate node = LockNodes.node(LockMode.LEASE, "current", pool);
		String outer = "current-outer-" + UUID.randomUUID();
		String inner = "current-inner-" + UUID.randomUUID();
		assertThat(CurrentLock.get()).isEmpty();
		node.executeWithoutResult(outer, (o) -> {
			assertThat(CurrentLock.get()).containsSame(o);
			node.executeWithoutResult(inner, (i) -> {
				assertThat(CurrentLock.get()).containsSame(i);
				assertThat(CurrentLock.get(outer)).containsSame(o);
			});
			assertThat(CurrentLock.get()).containsSame(o);
		});
		assertThat(CurrentLock.get()).isEmpty();
	}

}
