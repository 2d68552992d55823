package io.github.dblock.compat;

import java.io.IOException;
import java.time.Duration;
import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockHandle;
import io.github.dblock.LockLostException;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.jdbc.admin.LockTableAdmin;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

/**
 * What the drop-in adapters need from the core: {@link LockHandle#extend(Duration)},
 * {@link LockTemplate#executeChecked} and {@link LockTableAdmin#isLocked(String)}, on the real database.
 */
class CoreAdditionsTests {

	private static HikariDataSource pool;

	private static LockTemplate node;

	private static LockTemplate other;

	private static LockTableAdmin admin;

	@BeforeAll
	static void nodes() {
		pool = TestDatabase.get().newDataSource(6);
		LockNodes.migrateOnce(pool);
		node = LockNodes.node(LockMode.LEASE, "core-node", pool);
		other = LockNodes.node(LockMode.LEASE, "core-other", pool);
		admin = new LockTableAdmin(pool, LockNodes.TABLE, Duration.ofSeconds(5));
	}

	@AfterAll
	static void close() {
		pool.close();
	}

	private static String resource() {
		return "core-" + UUID.randomUUID();
	}

	/** Seconds from the server's now to the row's expires_at, on the server's clock. */
	private static double secondsLeft(String resource) {
		return new JdbcTemplate(pool).queryForObject("SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) "
				+ "/ 1e6 FROM " + LockNodes.TABLE.quoted() + " WHERE resource = ?", Double.class,
				resource.getBytes(java.nio.charset.StandardCharsets.UTF_8));
	}

	@Test
	void extendMovesTheLeaseEndOnTheServerClockAndKeepsTheLockPastItsFirstLease() throws Exception {
		String resource = resource();
		try (LockHandle lock = node.acquire(resource, LockOptions.defaults().withLeaseTime(Duration.ofMillis(500)))) {
			lock.extend(Duration.ofSeconds(30));
			assertThat(secondsLeft(resource)).isBetween(29.0, 30.0);
			Thread.sleep(700);
			assertThat(lock.isHeld()).isTrue();
			assertThat(other.tryAcquire(resource)).isEmpty();
			assertThat(admin.isLocked(resource)).isTrue();
			lock.extend(Duration.ofSeconds(2)); // shortening is allowed
			assertThat(secondsLeft(resource)).isBetween(1.0, 2.0);
		}
		assertThat(admin.isLocked(resource)).isFalse();
	}

	@Test
	void extendAfterTheLeaseEndedThrowsLockLostExceptionAndChangesNothing() throws Exception {
		String resource = resource();
		LockHandle lock = node.acquire(resource, LockOptions.defaults().withLeaseTime(Duration.ofMillis(50)));
		Thread.sleep(150);
		assertThatExceptionOfType(LockLostException.class).isThrownBy(() -> lock.extend(Duration.ofSeconds(30)));
		assertThat(admin.isLocked(resource)).isFalse();
		try (LockHandle taken = other.tryAcquire(resource).orElseThrow()) {
			assertThat(taken.fencingToken()).isGreaterThan(lock.fencingToken());
			assertThatExceptionOfType(LockLostException.class).isThrownBy(() -> lock.extend(Duration.ofSeconds(30)));
			assertThat(admin.isLocked(resource)).isTrue();
		}
		assertThatExceptionOfType(LockLostException.class).isThrownBy(lock::close);
	}

	@Test
	void aRenewedLeaseAPessimisticHoldAndAClosedHandleCannotBeExtended() {
		String resource = resource();
		try (LockHandle renewed = node.acquire(resource)) {
			assertThatIllegalStateException().isThrownBy(() -> renewed.extend(Duration.ofSeconds(5)))
				.withMessageContaining("renewed automatically");
		}
		LockTemplate pessimistic = LockNodes.node(LockMode.PESSIMISTIC, "core-pessimistic", pool);
		try (LockHandle held = pessimistic.acquire(resource())) {
			assertThatIllegalStateException().isThrownBy(() -> held.extend(Duration.ofSeconds(5)))
				.withMessageContaining("PESSIMISTIC");
		}
		LockHandle closed = node.acquire(resource, LockOptions.defaults().withLeaseTime(Duration.ofSeconds(5)));
		closed.close();
		assertThatIllegalStateException().isThrownBy(() -> closed.extend(Duration.ofSeconds(5)));
	}

	@Test
	void executeCheckedRethrowsTheCheckedExceptionUnwrappedAfterReleasing() {
		String resource = resource();
		IOException thrown = new IOException("disk full");
		assertThatExceptionOfType(IOException.class)
			.isThrownBy(() -> node.executeChecked(resource, LockOptions.defaults(), (lock) -> {
				assertThat(admin.isLocked(resource)).isTrue();
				throw thrown;
			}))
			.isSameAs(thrown);
		assertThat(admin.isLocked(resource)).isFalse();
		String result = assertDoesNotThrowIo(() -> node.executeChecked(resource, LockOptions.defaults(),
				(lock) -> "token " + (lock.fencingToken() > 0)));
		assertThat(result).isEqualTo("token true");
	}

	@Test
	void executeCheckedInPessimisticModeRollsBackOnACheckedException() {
		LockTemplate pessimistic = LockNodes.node(LockMode.PESSIMISTIC, "core-pessimistic-tx", pool);
		JdbcTemplate jdbc = new JdbcTemplate(pool);
		jdbc.execute("CREATE TABLE IF NOT EXISTS core_additions_marks (id VARCHAR(64) PRIMARY KEY)");
		String resource = resource();
		assertThatExceptionOfType(IOException.class)
			.isThrownBy(() -> pessimistic.executeChecked(resource, LockOptions.defaults(), (lock) -> {
				// through the transaction the template runs the work in (JdbcTemplate joins it)
				assertThat(jdbc.update("INSERT INTO core_additions_marks VALUES (?)", resource.substring(5, 41))).isOne();
				throw new IOException("after the insert");
			}));
		assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM core_additions_marks WHERE id = ?", Integer.class,
				resource.substring(5, 41))).isZero();
	}

	@Test
	void isLockedCountsAMinimumHoldAfterTheReleaseAndAnUnknownResourceIsFree() throws Exception {
		String resource = resource();
		assertThat(admin.isLocked(resource)).isFalse();
		node.acquire(resource, LockOptions.defaults().withLeaseTime(Duration.ofSeconds(10))
			.withMinHoldTime(Duration.ofMillis(800))).close();
		assertThat(admin.isLocked(resource)).isTrue();
		assertThat(admin.find(resource).orElseThrow().held()).isFalse();
		Thread.sleep(1000);
		assertThat(admin.isLocked(resource)).isFalse();
	}

	private interface IoSupplier<T> {

		T get() throws IOException;

	}

	private static <T> T assertDoesNotThrowIo(IoSupplier<T> supplier) {
		try {
			return supplier.get();
		}
		catch (IOException ex) {
			throw new AssertionError(ex);
		}
	}

}
