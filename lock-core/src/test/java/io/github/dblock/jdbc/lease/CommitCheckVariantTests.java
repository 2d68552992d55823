package io.github.dblock.jdbc.lease;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockMode;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.spi.TransactionCheckedLock;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

/**
 * The two variants of the commit check: a locking read on one primary, a write to the lock row on a multi-primary
 * cluster (where only writes are certified). Both run here on the single test server, which is what can be tested
 * without a cluster: the choice of variant and that each one tells a held lock from a lost one.
 */
class CommitCheckVariantTests {

	private HikariDataSource pool;

	private JdbcTemplate jdbc;

	private TransactionTemplate tx;

	private LeaseLockProvider provider;

	private final String resource = "commit-variant-" + UUID.randomUUID();

	@BeforeEach
	void provider() {
		this.pool = TestDatabase.get().newDataSource(4);
		LockNodes.migrateOnce(this.pool);
		this.jdbc = new JdbcTemplate(this.pool);
		this.tx = new TransactionTemplate(new DataSourceTransactionManager(this.pool));
		this.provider = (LeaseLockProvider) LockNodes.provider(LockMode.LEASE, this.pool);
	}

	@AfterEach
	void close() {
		this.provider.close();
		this.pool.close();
	}

	private TransactionCheckedLock acquire(Duration lease) throws InterruptedException {
		HeldLock held = this.provider.acquire(new LockRequest(this.resource, lease, false, Duration.ZERO,
				System.nanoTime(), "variant-test")).lock();
		assertThat(held).isInstanceOf(TransactionCheckedLock.class);
		return (TransactionCheckedLock) held;
	}

	private static boolean checkIn(TransactionTemplate tx,
			org.springframework.transaction.support.TransactionCallback<Boolean> work) {
		return Boolean.TRUE.equals(tx.execute(work));
	}

	private long expiresAtMicros() {
		return this.jdbc.queryForObject("SELECT TIMESTAMPDIFF(MICROSECOND, '2000-01-01', expires_at) FROM "
				+ "distributed_lock WHERE resource = ?", Long.class, this.resource.getBytes(StandardCharsets.UTF_8));
	}

	@Test
	void onOnePrimaryTheCheckIsALockingReadThatChangesNothing() throws Exception {
		assertThat(this.provider.isMultiPrimary()).isFalse();
		assertThat(this.provider.commitCheckSql()).startsWith("SELECT fencing_token FROM `distributed_lock`")
			.endsWith(" WHERE resource = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6) FOR UPDATE");
		TransactionCheckedLock lock = acquire(Duration.ofSeconds(30));
		long before = expiresAtMicros();
		assertThat(checkIn(this.tx, (status) -> lock.lockRowInTransaction())).isTrue();
		assertThat(expiresAtMicros()).isEqualTo(before);
		assertThat(lock.release()).isTrue();
		assertThat(checkIn(this.tx, (status) -> lock.lockRowInTransaction())).isFalse();
	}

	@Test
	void onAMultiPrimaryClusterTheCheckWritesTheRow() throws Exception {
		this.provider.setMultiPrimary(true);
		assertThat(this.provider.commitCheckSql()).isEqualTo("UPDATE `distributed_lock` SET expires_at = expires_at"
				+ " + INTERVAL 1 MICROSECOND WHERE resource = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6)");
		TransactionCheckedLock lock = acquire(Duration.ofSeconds(30));
		long before = expiresAtMicros();
		assertThat(checkIn(this.tx, (status) -> lock.lockRowInTransaction())).isTrue();
		assertThat(expiresAtMicros()).isEqualTo(before + 1); // a real change, which a cluster certifies
		assertThat(checkIn(this.tx, (status) -> {
			boolean held = lock.lockRowInTransaction();
			status.setRollbackOnly();
			return held;
		})).isTrue();
		assertThat(expiresAtMicros()).isEqualTo(before + 1); // rolled back with its transaction
		assertThat(lock.release()).isTrue();
		assertThat(checkIn(this.tx, (status) -> lock.lockRowInTransaction())).isFalse();
	}

	@Test
	void anEndedLeaseFailsTheCheckInBothVariants() throws Exception {
		TransactionCheckedLock lock = acquire(Duration.ofMillis(50));
		Thread.sleep(100);
		assertThat(checkIn(this.tx, (status) -> lock.lockRowInTransaction())).isFalse();
		this.provider.setMultiPrimary(true);
		assertThat(checkIn(this.tx, (status) -> lock.lockRowInTransaction())).isFalse();
	}

	@Test
	void aTransactionManagerOnTheProxiedDataSourceIsFoundAndAnotherDataSourceIsNot() throws Exception {
		TransactionAwareDataSourceProxy proxy = new TransactionAwareDataSourceProxy(this.pool);
		LeaseLockProvider onProxy = (LeaseLockProvider) LockNodes.provider(LockMode.LEASE, proxy);
		HeldLock held = onProxy.acquire(new LockRequest(this.resource, Duration.ofSeconds(30), false, Duration.ZERO,
				System.nanoTime(), "variant-test")).lock();
		TransactionCheckedLock lock = (TransactionCheckedLock) held;
		// a DataSourceTransactionManager given the proxy binds its connection to the target
		TransactionTemplate onProxyTx = new TransactionTemplate(new DataSourceTransactionManager(proxy));
		assertThat(checkIn(onProxyTx, (status) -> lock.inTransactionOfItsDatabase() && lock.lockRowInTransaction()))
			.isTrue();
		try (HikariDataSource other = TestDatabase.get().newDataSource(1)) {
			TransactionTemplate otherTx = new TransactionTemplate(new DataSourceTransactionManager(other));
			assertThat(checkIn(otherTx, (status) -> lock.inTransactionOfItsDatabase())).isFalse();
			otherTx.executeWithoutResult((status) -> assertThatIllegalStateException()
				.isThrownBy(lock::lockRowInTransaction)
				.withMessageContaining("No transaction on the lock data source"));
		}
		assertThat(lock.release()).isTrue();
	}

}
