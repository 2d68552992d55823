package io.github.dblock.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockMode;
import io.github.dblock.LockType;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.test.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A race between a read holder's renewal and a writer, forced on the real database (found in review): a renewal
 * sent before the reader's lease ended but committed after must not let a writer in.
 */
class ReadWriteLeaseRaceTests {

	private static LockRequest request(String resource, Duration lease, Duration minHold, Duration wait) {
		return new LockRequest(resource, lease, false, minHold, System.nanoTime() + wait.toNanos(), "race-test");
	}

	@Test
	void aWriterWaitsForAReadersRenewalThatCommitsAfterTheOldExpiry() throws Exception {
		try (HikariDataSource pool = TestDatabase.get().newDataSource(6)) {
			LockNodes.migrateOnce(pool);
			LeaseLockProvider provider = (LeaseLockProvider) LockNodes.provider(LockMode.LEASE, pool);
			String resource = "rw-race-" + UUID.randomUUID();
			HeldLock reader = provider
				.acquire(request(resource, Duration.ofSeconds(4), Duration.ZERO, Duration.ZERO), LockType.READ)
				.lock();
			assertThat(reader).isNotNull();
			HeldLock writer;
			try (Connection blocker = pool.getConnection()) {
				// stands in for a renewal whose commit is slow: the renewal's UPDATE waits on this row lock
				blocker.setAutoCommit(false);
				try (PreparedStatement ps = blocker.prepareStatement("SELECT 1 FROM " + LockNodes.TABLE.quoted("_rw_hold")
						+ " WHERE resource = ? AND owner_token = ? FOR UPDATE")) {
					ps.setBytes(1, LockRows.bytes(resource));
					ps.setString(2, reader.ownerToken());
					ps.executeQuery().close();
				}
				Thread.sleep(2_000); // the renewal is sent while the lease (4 s) still runs, with 2 s to spare
				CompletableFuture<Void> renewal = CompletableFuture.runAsync(((RenewableLease) reader)::renew);
				Thread.sleep(2_300); // the server's expiry of the old lease passes while the renewal waits
				CompletableFuture<HeldLock> writing = CompletableFuture.supplyAsync(() -> {
					try {
						return provider.acquire(request(resource, Duration.ofSeconds(10), Duration.ZERO, Duration.ZERO),
								LockType.WRITE).lock();
					}
					catch (InterruptedException ex) {
						throw new IllegalStateException(ex);
					}
				});
				Thread.sleep(300);
				blocker.commit();
				renewal.get(10, TimeUnit.SECONDS);
				writer = writing.get(10, TimeUnit.SECONDS);
			}
			assertThat(reader.isLost()).as("the renewal committed: the reader still holds").isFalse();
			assertThat(writer).as("a writer granted while the renewed reader holds").isNull();
			reader.release();
			provider.close();
		}
	}

}
