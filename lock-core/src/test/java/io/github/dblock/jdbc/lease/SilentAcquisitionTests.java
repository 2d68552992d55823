package io.github.dblock.jdbc.lease;

import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockType;
import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.test.FaultProxy;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import io.github.dblock.wait.Backoff;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 23, part 4: an acquisition whose connection goes silent in the middle of its short transaction, after the
 * server locked the rows it read, holds those locks until the server ends its session. The client's network timeout
 * ends the client's wait only; what bounds the freeze for everybody else is the server's idle-transaction bound
 * (MariaDB {@code idle_transaction_timeout}; MySQL has only {@code wait_timeout}), set here for the silent node's
 * sessions only (2 s), as an operator sets it globally. With it, the other nodes get the resource within that bound
 * plus a margin, a healthy holder keeps its renewed lease and releases it normally.
 */
class SilentAcquisitionTests {

	private static final Duration STATEMENT_TIMEOUT = Duration.ofSeconds(5);

	private static final Backoff BACKOFF = new Backoff(Duration.ofMillis(5), Duration.ofMillis(50));

	private FaultProxy proxy;

	private HikariDataSource silentPool;

	private HikariDataSource direct;

	@BeforeEach
	void setUp() {
		TestDatabase db = TestDatabase.get();
		this.direct = db.newDataSource(8);
		LockNodes.migrateOnce(this.direct);
		this.proxy = FaultProxy.forJdbcUrl(db.jdbcUrl());
		String idleBound = db.isMariaDb() ? "idle_transaction_timeout=2" : "wait_timeout=2";
		String url = TestDatabase.withSessionVariables(this.proxy.jdbcUrl(db.jdbcUrl()), idleBound);
		this.silentPool = db.newDataSource(4, (config) -> {
			config.setJdbcUrl(url);
			config.setPoolName("silent-node");
		});
	}

	@AfterEach
	void tearDown() {
		this.proxy.close();
		this.silentPool.close();
		this.direct.close();
	}

	private static LockRequest request(String resource, Duration lease, boolean renew, Duration wait) {
		return new LockRequest(resource, lease, renew, Duration.ZERO, System.nanoTime() + wait.toNanos(), "silent-test");
	}

	private static LeaseLockProvider leases(javax.sql.DataSource dataSource) {
		return new LeaseLockProvider(dataSource, LockNodes.TABLE, LockNodes.dialect(dataSource), STATEMENT_TIMEOUT,
				BACKOFF.initial(), BACKOFF.max());
	}

	/** Runs an acquisition that is expected to go silent; its outcome does not matter, only that it ends. */
	private static CompletableFuture<Void> silently(ThrowingAcquisition acquisition) {
		return CompletableFuture.runAsync(() -> {
			try {
				HeldLock lock = acquisition.acquire().lock();
				if (lock != null) {
					lock.release();
				}
			}
			catch (RuntimeException | InterruptedException ex) {
				// a broken connection, reported after the network timeout: expected
			}
		});
	}

	@Test
	void aSilentSemaphoreAcquisitionFreezesThePoolOnlyForTheServersIdleBound() throws Exception {
		LeaseLockProvider healthyRenewals = leases(this.direct);
		LeaseLockProvider silentRenewals = leases(this.silentPool);
		JdbcSemaphoreProvider healthy = new JdbcSemaphoreProvider(this.direct, LockNodes.TABLE, STATEMENT_TIMEOUT,
				BACKOFF, healthyRenewals, Map.of());
		JdbcSemaphoreProvider silent = new JdbcSemaphoreProvider(this.silentPool, LockNodes.TABLE, STATEMENT_TIMEOUT,
				BACKOFF, silentRenewals, Map.of());
		String name = "silent-p-" + UUID.randomUUID();
		healthy.setPermits(name, 2);
		HeldLock holder = healthy.acquire(request(name, Duration.ofSeconds(3), true, Duration.ZERO)).lock();
		assertThat(holder).isNotNull();
		// the silent node's count of holders (a locking read of every holder row, after the pool row) is delivered,
		// then its connection goes silent with those locks held
		CountDownLatch silenced = this.proxy
			.dropReplyToNext(FaultProxy.isQueryContaining("SELECT COUNT(*), COALESCE(SUM(expires_at"));
		CompletableFuture<Void> dead = silently(
				() -> silent.acquire(request(name, Duration.ofSeconds(30), true, Duration.ZERO)));
		assertThat(silenced.await(10, TimeUnit.SECONDS)).isTrue();
		long start = System.nanoTime();
		AcquireResult other = healthy.acquire(request(name, Duration.ofSeconds(30), false, Duration.ofSeconds(10)));
		long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
		assertThat(other.lock()).as("the free permit, once the server ended the silent session").isNotNull();
		assertThat(waitedMillis).as("waited for the free permit").isLessThan(8_000);
		Thread.sleep(3_000); // more than the holder's lease: its renewals went through
		assertThat(holder.isLost()).as("the healthy holder's renewed permit").isFalse();
		assertThat(holder.release()).isTrue();
		assertThat(other.lock().release()).isTrue();
		dead.get(30, TimeUnit.SECONDS);
		healthyRenewals.close();
		silentRenewals.close();
	}

	@Test
	void aSilentWriteLockAcquisitionFreezesTheResourceOnlyForTheServersIdleBound() throws Exception {
		LeaseLockProvider healthy = leases(this.direct);
		LeaseLockProvider silent = leases(this.silentPool);
		String resource = "silent-rw-" + UUID.randomUUID();
		HeldLock reader = healthy.acquire(request(resource, Duration.ofSeconds(3), true, Duration.ZERO), LockType.READ)
			.lock();
		assertThat(reader).isNotNull();
		// the silent writer's look at the holders (a share-locking read of the holder rows, after the resource row's
		// exclusive lock) is delivered, then its connection goes silent with those locks held
		CountDownLatch silenced = this.proxy.dropReplyToNext(FaultProxy.isQueryContaining("SELECT kind, holder"));
		CompletableFuture<Void> dead = silently(
				() -> silent.acquire(request(resource, Duration.ofSeconds(30), true, Duration.ZERO), LockType.WRITE));
		assertThat(silenced.await(10, TimeUnit.SECONDS)).isTrue();
		long start = System.nanoTime();
		AcquireResult second = healthy.acquire(request(resource, Duration.ofSeconds(30), false, Duration.ofSeconds(10)),
				LockType.READ);
		long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
		assertThat(second.lock()).as("a second reader, once the server ended the silent session").isNotNull();
		assertThat(waitedMillis).as("waited for the read lock").isLessThan(8_000);
		Thread.sleep(3_000); // more than the first reader's lease: its renewals went through
		assertThat(reader.isLost()).as("the healthy reader's renewed lease").isFalse();
		assertThat(reader.release()).isTrue();
		assertThat(second.lock().release()).isTrue();
		dead.get(30, TimeUnit.SECONDS);
		healthy.close();
		silent.close();
	}

	@FunctionalInterface
	private interface ThrowingAcquisition {

		AcquireResult acquire() throws InterruptedException;

	}

}
