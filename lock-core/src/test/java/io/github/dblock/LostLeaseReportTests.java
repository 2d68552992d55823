package io.github.dblock;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.idempotency.IdempotencyStatus;
import io.github.dblock.idempotency.IdempotencyTemplate;
import io.github.dblock.idempotency.OnDuplicate;
import io.github.dblock.jdbc.lease.IdempotencyStore;
import io.github.dblock.jdbc.lease.JdbcSemaphoreProvider;
import io.github.dblock.jdbc.lease.LeaseLockProvider;
import io.github.dblock.semaphore.PermitHandle;
import io.github.dblock.semaphore.SemaphoreOptions;
import io.github.dblock.semaphore.SemaphoreTemplate;
import io.github.dblock.test.nodes.IdempotencyNodes;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import io.github.dblock.wait.Backoff;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.dao.DataAccessException;
import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * Issue 23, part 5: a release or completion whose statement fails (here: it waits for a row lock past its 1 s query
 * timeout, as behind a silently dead acquisition) while the lease is known to be over is reported as
 * {@link LockLostException} with the database failure as its cause, not as a bare {@link DataAccessException}; a
 * lease still running is reported as the failure it is.
 */
class LostLeaseReportTests {

	private static final Duration STATEMENT_TIMEOUT = Duration.ofSeconds(1);

	private static final Backoff BACKOFF = new Backoff(Duration.ofMillis(5), Duration.ofMillis(50));

	private HikariDataSource pool;

	private LeaseLockProvider leases;

	@BeforeEach
	void setUp() {
		this.pool = TestDatabase.get().newDataSource(8);
		LockNodes.migrateOnce(this.pool);
		this.leases = new LeaseLockProvider(this.pool, LockNodes.TABLE, LockNodes.dialect(this.pool), STATEMENT_TIMEOUT,
				BACKOFF.initial(), BACKOFF.max());
	}

	@AfterEach
	void tearDown() {
		this.leases.close();
		this.pool.close();
	}

	/** A connection holding the row locks of {@code sql} (one bind parameter) until it is closed. */
	private Connection blocker(String sql, String key) throws SQLException {
		Connection blocker = this.pool.getConnection();
		blocker.setAutoCommit(false);
		try (PreparedStatement ps = blocker.prepareStatement(sql)) {
			ps.setBytes(1, key.getBytes(java.nio.charset.StandardCharsets.UTF_8));
			try (ResultSet rs = ps.executeQuery()) {
				assertThat(rs.next()).as("the blocker locks a row").isTrue();
			}
		}
		return blocker;
	}

	private static void rollbackAndClose(Connection blocker) throws SQLException {
		blocker.rollback();
		blocker.close();
	}

	private SemaphoreTemplate semaphores() {
		JdbcSemaphoreProvider provider = new JdbcSemaphoreProvider(this.pool, LockNodes.TABLE, STATEMENT_TIMEOUT, BACKOFF,
				this.leases, Map.of());
		return new SemaphoreTemplate(provider, Duration.ZERO, Duration.ofSeconds(30), "lost-report");
	}

	private String semaphoreHolds() {
		return "`" + LockNodes.TABLE.name() + "_sem_hold`";
	}

	@Test
	void closingAPermitWhoseLeaseEndedThrowsLockLostWithTheDatabaseFailureAttached() throws Exception {
		SemaphoreTemplate semaphores = semaphores();
		String name = "lost-report-p-" + UUID.randomUUID();
		semaphores.setPermits(name, 1);
		PermitHandle permit = semaphores.acquire(name, SemaphoreOptions.defaults().withLeaseTime(Duration.ofSeconds(1)));
		Thread.sleep(1_300);
		assertThat(permit.isHeld()).isFalse();
		Connection blocker = blocker("SELECT 1 FROM " + semaphoreHolds() + " WHERE name = ? FOR UPDATE", name);
		try {
			assertThatExceptionOfType(LockLostException.class).isThrownBy(permit::close)
				.satisfies((ex) -> assertThat(ex.getCause()).isInstanceOf(DataAccessException.class))
				.satisfies((ex) -> assertThat(ex.getFencingToken()).isEqualTo(permit.fencingToken()));
		}
		finally {
			rollbackAndClose(blocker);
		}
	}

	@Test
	void closingAPermitWhoseReleaseFailsWhileItsLeaseRunsReportsTheFailure() throws Exception {
		SemaphoreTemplate semaphores = semaphores();
		String name = "lost-report-p2-" + UUID.randomUUID();
		semaphores.setPermits(name, 1);
		PermitHandle permit = semaphores.acquire(name, SemaphoreOptions.defaults().withLeaseTime(Duration.ofSeconds(20)));
		Connection blocker = blocker("SELECT 1 FROM " + semaphoreHolds() + " WHERE name = ? FOR UPDATE", name);
		try {
			assertThatExceptionOfType(DataAccessException.class).as("still held in the database: not lost")
				.isThrownBy(permit::close);
		}
		finally {
			rollbackAndClose(blocker);
		}
		assertThat(semaphores.availablePermits(name)).as("the permit stays taken until its lease ends").isZero();
	}

	@Test
	void closingAPermitInTimeWhoseReleaseFailsUntilTheLeaseEndedCountsAsReleased() throws Exception {
		SemaphoreTemplate semaphores = semaphores();
		String name = "lost-report-p3-" + UUID.randomUUID();
		semaphores.setPermits(name, 1);
		PermitHandle permit = semaphores.acquire(name, SemaphoreOptions.defaults().withLeaseTime(Duration.ofSeconds(1)));
		Thread.sleep(200);
		assertThat(permit.isHeld()).isTrue();
		Connection blocker = blocker("SELECT 1 FROM " + semaphoreHolds() + " WHERE name = ? FOR UPDATE", name);
		try {
			// the delete waits past its 1 s query timeout, by when the 1 s lease is over: the permit was let go in
			// time and is free now, so nothing was lost
			permit.close();
		}
		finally {
			rollbackAndClose(blocker);
		}
		assertThat(semaphores.availablePermits(name)).isEqualTo(1);
	}

	@Test
	void closingAWriteLockWhoseLeaseEndedThrowsLockLostWithTheDatabaseFailureAttached() throws Exception {
		LockTemplate locks = LockNodes.node(this.leases, "lost-report");
		String resource = "lost-report-w-" + UUID.randomUUID();
		LockHandle lock = locks.acquire(resource,
				LockOptions.defaults().withType(LockType.WRITE).withLeaseTime(Duration.ofSeconds(1)));
		Thread.sleep(1_300);
		assertThat(lock.isHeld()).isFalse();
		Connection blocker = blocker("SELECT 1 FROM " + LockNodes.TABLE.quoted("_rw_hold") + " WHERE resource = ? FOR UPDATE",
				resource);
		try {
			assertThatExceptionOfType(LockLostException.class).isThrownBy(lock::close)
				.satisfies((ex) -> assertThat(ex.getCause()).isInstanceOf(DataAccessException.class));
		}
		finally {
			rollbackAndClose(blocker);
		}
	}

	@Test
	void anIdempotentCallWhoseClaimWasTakenOverThrowsLockLostWithTheDatabaseFailureAttached() throws Exception {
		IdempotencyStore store = new IdempotencyStore(this.pool, LockNodes.TABLE, STATEMENT_TIMEOUT, BACKOFF,
				this.leases);
		IdempotencyTemplate first = new IdempotencyTemplate(store, JsonMapper.shared(), Duration.ofHours(1),
				Duration.ofSeconds(30), Duration.ofSeconds(1), OnDuplicate.RETURN_OUTCOME, "first");
		String key = "lost-report-i-" + UUID.randomUUID();
		Connection[] blocker = new Connection[1];
		try (IdempotencyNodes.Node second = IdempotencyNodes.node(this.pool, "second", Duration.ofSeconds(5))) {
			assertThatExceptionOfType(LockLostException.class).isThrownBy(() -> first.execute(key, String.class, (claim) -> {
				try {
					this.leases.close(); // the first caller's renewal stops, as when its node stalls
					Thread.sleep(1_500);
					assertThat(claim.isHeld()).isFalse();
					// the second caller takes the key over and records its outcome
					assertThat(second.template().execute(key, String.class, (again) -> "second")).isEqualTo("second");
					blocker[0] = blocker("SELECT 1 FROM `" + LockNodes.TABLE.name() + "_idem` WHERE idem_key = ? FOR UPDATE",
							key);
				}
				catch (InterruptedException | SQLException ex) {
					throw new IllegalStateException(ex);
				}
				return "first";
			})).satisfies((ex) -> assertThat(ex.getCause()).isInstanceOf(DataAccessException.class));
		}
		finally {
			if (blocker[0] != null) {
				rollbackAndClose(blocker[0]);
			}
		}
		assertThat(first.find(key)).hasValueSatisfying((record) -> {
			assertThat(record.status()).isEqualTo(IdempotencyStatus.SUCCEEDED);
			assertThat(record.outcomeJson()).isEqualTo("\"second\"");
		});
	}

}
