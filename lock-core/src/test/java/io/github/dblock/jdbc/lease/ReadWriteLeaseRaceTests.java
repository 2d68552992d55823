package io.github.dblock.jdbc.lease;

import io.github.dblock.jdbc.sql.LockRows;
import io.github.dblock.jdbc.sql.LockStatements;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockMode;
import io.github.dblock.LockType;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.spi.TransactionCheckedLock;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.Pauses;
import io.github.dblock.test.Reliability;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Races forced on the real database (found in review): a read holder's renewal sent before the reader's lease ended
 * but committed after must not let a writer in; a checked writer's transaction that is still committing when its
 * lease ends must keep readers and writers out until it ends, however many expired holder rows the resource has.
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

	/** Expired reader rows for the many-rows case: as many as a busy read-mostly resource leaves between clean-ups. */
	private static final int EXPIRED_READERS = 20_000;

	/**
	 * A writer's commit check has locked its holder row, and its lease runs out while its transaction is still
	 * open (its own renewal waits behind that row lock). A competing reader and writer must wait for that transaction
	 * (safety.md), whatever plan the server picks for their holder query: here the resource has 20,000 expired reader
	 * rows, with which the holder query's filter on the expiry leads the optimizer to the {@code expires_at} index,
	 * which never visits the writer's expired row.
	 */
	@Test
	void competitorsWaitForACheckedWritersTransactionThatOutlivesItsLeaseAmongManyExpiredHolderRows() throws Exception {
		try (HikariDataSource pool = TestDatabase.get().newDataSource(6)) {
			LockNodes.migrateOnce(pool);
			LeaseLockProvider provider = (LeaseLockProvider) LockNodes.provider(LockMode.LEASE, pool);
			JdbcTemplate jdbc = new JdbcTemplate(pool);
			String resource = "rw-checked-writer-" + UUID.randomUUID();
			String holders = LockNodes.TABLE.quoted("_rw_hold");
			HeldLock first = provider.acquire(request(resource, Duration.ofSeconds(10), Duration.ZERO, Duration.ZERO),
					LockType.WRITE).lock(); // creates the resource's row
			assertThat(first.release()).isTrue();
			try {
				competeWithACheckedWriter(pool, provider, jdbc, resource, holders);
			}
			finally {
				// expired rows left behind would be the clean-up tests' candidates first
				jdbc.update("DELETE FROM " + holders + " WHERE resource = ?", (Object) LockRows.bytes(resource));
				provider.close();
			}
		}
	}

	private static void competeWithACheckedWriter(HikariDataSource pool, LeaseLockProvider provider, JdbcTemplate jdbc,
			String resource, String holders) throws Exception {
		jdbc.update("INSERT INTO " + holders + " (resource, owner_token, kind, holder, fencing_token, acquired_at,"
				+ " expires_at) SELECT ?, UUID(), 'R', 'expired reader', n, UTC_TIMESTAMP(6) - INTERVAL 10 MINUTE,"
				+ " UTC_TIMESTAMP(6) - INTERVAL n * 1000 MICROSECOND FROM (SELECT a.d + 10 * b.d + 100 * c.d + 1000 * e.d"
				+ " + 10000 * f.d + 1 AS n FROM " + digits("a") + " CROSS JOIN " + digits("b") + " CROSS JOIN "
				+ digits("c") + " CROSS JOIN " + digits("e") + " CROSS JOIN " + digits("f") + ") numbers"
				+ " WHERE n <= " + EXPIRED_READERS, (Object) LockRows.bytes(resource));
		jdbc.execute("ANALYZE TABLE " + holders);
		LockStatements sql = LockStatements.of(LockNodes.TABLE, LockNodes.dialect(pool));
		String holderQueryIndex = explainedKey(jdbc, sql.readWrite.rwHolders, LockRows.bytes(resource), "none", "R");
		Reliability.setting("read/write holder query with " + EXPIRED_READERS + " expired rows", "index " + holderQueryIndex);

		HeldLock writer = provider.acquire(request(resource, Duration.ofMillis(1_500), Duration.ZERO, Duration.ZERO),
				LockType.WRITE).lock();
		assertThat(writer).isInstanceOf(TransactionCheckedLock.class);
		TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(pool));
		ExecutorService competitors = Executors.newSingleThreadExecutor();
		List<HeldLock> grantedWhileOpen = new ArrayList<>();
		Boolean checked;
		try {
			checked = transactions.execute((status) -> {
				boolean valid = ((TransactionCheckedLock) writer).lockRowInTransaction();
				// the lease ends (by the server's clock) while the checked transaction is still open
				assertThat(Pauses.await(Duration.ofSeconds(20), () -> Boolean.TRUE.equals(jdbc.queryForObject(
						"SELECT expires_at <= UTC_TIMESTAMP(6) FROM " + holders + " WHERE resource = ? AND owner_token = ?",
						Boolean.class, LockRows.bytes(resource), writer.ownerToken()))))
					.isTrue();
				for (LockType type : new LockType[] { LockType.READ, LockType.WRITE }) {
					HeldLock competitor = CompletableFuture.supplyAsync(() -> {
						try {
							return provider.acquire(request(resource, Duration.ofSeconds(10), Duration.ZERO,
									Duration.ofSeconds(1)), type).lock();
						}
						catch (InterruptedException ex) {
							throw new IllegalStateException(ex);
						}
					}, competitors).join();
					if (competitor != null) {
						grantedWhileOpen.add(competitor);
						competitor.release(); // so that the next competitor is judged on the writer alone
					}
				}
				return valid;
			});
		}
		finally {
			competitors.shutdown();
		}
		assertThat(checked).as("the writer held the lock at its commit check").isTrue();
		assertThat(grantedWhileOpen).as("competitors granted while the checked writer's transaction was open "
				+ "(holder query read through index " + holderQueryIndex + ")").isEmpty();
		HeldLock after = provider.acquire(request(resource, Duration.ofSeconds(10), Duration.ZERO,
				Duration.ofSeconds(5)), LockType.READ).lock();
		assertThat(after).as("once the transaction ended, the lock is free (the writer's lease is over)").isNotNull();
		assertThat(after.release()).isTrue();
		// what makes the competitors wait whatever the holder query's plan
		List<String> resourceLocks = provider.readWriteCommitCheckSql()
			.stream()
			.filter((statement) -> statement.startsWith("SELECT")
					&& statement.contains(" FROM " + LockNodes.TABLE.quoted("_rw") + " "))
			.toList();
		assertThat(resourceLocks).as("the commit check locks the resource's row, which every acquisition locks first")
			.hasSize(1);
		assertThat(explainedKey(jdbc, resourceLocks.get(0), LockRows.bytes(resource))).as("by its primary key")
			.isEqualTo("PRIMARY");
	}

	/** A derived table of the digits 0 to 9. */
	private static String digits(String alias) {
		return "(SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL"
				+ " SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) " + alias;
	}

	/** The index {@code EXPLAIN} names for a statement with its parameters bound ({@code none} if no index). */
	private static String explainedKey(JdbcTemplate jdbc, String statement, Object... parameters) {
		return jdbc.query("EXPLAIN " + statement, (rs) -> {
			rs.next();
			String key = rs.getString("key");
			return (key != null) ? key : "none";
		}, parameters);
	}

}
