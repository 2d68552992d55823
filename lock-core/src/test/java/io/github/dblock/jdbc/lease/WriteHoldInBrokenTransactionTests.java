package io.github.dblock.jdbc.lease;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.LockType;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatRuntimeException;

/**
 * A WRITE lock taken in a caller's transaction whose connection is killed after the grant (the caller's next
 * statement fails, the rollback fails too): the grant ran in a short transaction of the library's own connection, so
 * its fencing token counter stays committed whatever happens to the caller's transaction. A handle the caller never
 * closes stays its thread's hold: the thread's next READ or WRITE of the resource re-enters it (same fencing token, no
 * grant in the database) while its lease runs; the next owner is granted the next token once that lease has ended.
 * A handle closed in the failing transaction is released once the transaction has rolled back, and the thread's next
 * acquisition is a grant of its own, with the next token.
 */
class WriteHoldInBrokenTransactionTests {

	private static final Duration LEASE = Duration.ofSeconds(2);

	private HikariDataSource pool;

	private JdbcTemplate jdbc;

	private TransactionTemplate tx;

	private LockTemplate locks;

	private final ExecutorService executor = Executors.newSingleThreadExecutor();

	private final String resource = "write-broken-tx-" + UUID.randomUUID();

	@BeforeEach
	void node() {
		this.pool = TestDatabase.get().newDataSource(4);
		LockNodes.migrateOnce(this.pool);
		this.jdbc = new JdbcTemplate(this.pool);
		this.tx = new TransactionTemplate(new DataSourceTransactionManager(this.pool));
		this.locks = new LockTemplate(List.of(LockNodes.provider(LockMode.LEASE, this.pool)), LockMode.LEASE,
				Duration.ZERO, LEASE, "broken-tx-node");
		this.locks.setValidateAtCommit(true);
	}

	@AfterEach
	void close() {
		this.executor.shutdownNow();
		this.pool.close();
	}

	private LockOptions options(LockType type) {
		return LockOptions.defaults().withType(type).withWaitTime(Duration.ofSeconds(5)).withLeaseTime(LEASE);
	}

	private long counter() {
		return this.jdbc.queryForObject("SELECT fencing_token FROM distributed_lock_rw WHERE resource = ?", Long.class,
				(Object) this.resource.getBytes(StandardCharsets.UTF_8));
	}

	/** Kills the connection of the current transaction, then writes on it: the transaction fails, and so does its rollback. */
	private void breakTheTransaction() throws Exception {
		Connection connection = DataSourceUtils.getConnection(this.pool);
		long id;
		try (Statement statement = connection.createStatement();
				ResultSet rs = statement.executeQuery("SELECT CONNECTION_ID()")) {
			rs.next();
			id = rs.getLong(1);
		}
		TestDatabase.get().execute("KILL CONNECTION " + id);
		this.jdbc.update("UPDATE distributed_lock_rw SET fencing_token = fencing_token WHERE resource = ?",
				(Object) this.resource.getBytes(StandardCharsets.UTF_8));
	}

	@Test
	void anUnclosedWriteHandleOfABrokenTransactionIsReenteredByItsThreadWithTheSameToken() throws Exception {
		// the owner is a thread of its own: the handle it leaves open (and the thread's current-lock stack) end with it
		ExecutorService owner = Executors.newSingleThreadExecutor();
		long[] granted = new long[1];
		long[] again = new long[2];
		try {
			owner.submit(() -> {
				assertThatRuntimeException().isThrownBy(() -> this.tx.executeWithoutResult((status) -> {
					LockHandle lock = this.locks.acquire(this.resource, options(LockType.WRITE));
					granted[0] = lock.fencingToken();
					try {
						breakTheTransaction(); // lock.close() is never reached
					}
					catch (Exception ex) {
						throw new IllegalStateException(ex);
					}
				}));
				assertThat(counter()).as("the grant committed on the library's own connection").isEqualTo(granted[0]);

				long started = System.nanoTime();
				try (LockHandle read = this.locks.acquire(this.resource, options(LockType.READ))) {
					again[0] = read.fencingToken();
				}
				this.tx.executeWithoutResult((status) -> {
					try (LockHandle write = this.locks.acquire(this.resource, options(LockType.WRITE))) {
						again[1] = write.fencingToken();
					}
				});
				assertThat(System.nanoTime() - started).as("both re-entered within the lease")
					.isLessThan(LEASE.toNanos());
				return null;
			}).get(30, TimeUnit.SECONDS);
		}
		finally {
			owner.shutdownNow();
		}
		assertThat(again[0]).as("the thread's unclosed WRITE hold serves its READ").isEqualTo(granted[0]);
		assertThat(again[1]).as("and its WRITE in a new transaction").isEqualTo(granted[0]);
		assertThat(counter()).as("no grant in the database meanwhile").isEqualTo(granted[0]);

		long other = this.executor.submit(() -> {
			try (LockHandle read = this.locks.acquire(this.resource, options(LockType.READ))) {
				return read.fencingToken();
			}
		}).get(30, TimeUnit.SECONDS);
		assertThat(other).as("another thread is granted the next token once the lease has ended")
			.isEqualTo(granted[0] + 1);
	}

	@Test
	void aWriteHandleClosedInABrokenTransactionIsReleasedAndTheNextAcquisitionIsANewGrant() throws Exception {
		long[] granted = new long[1];
		assertThatRuntimeException().isThrownBy(() -> this.tx.executeWithoutResult((status) -> {
			try (LockHandle lock = this.locks.acquire(this.resource, options(LockType.WRITE))) {
				granted[0] = lock.fencingToken();
				breakTheTransaction();
			}
			catch (Exception ex) {
				throw new IllegalStateException(ex);
			}
		}));
		long started = System.nanoTime();
		try (LockHandle read = this.locks.acquire(this.resource, options(LockType.READ))) {
			assertThat(read.fencingToken()).as("a grant of its own").isEqualTo(granted[0] + 1);
		}
		assertThat(System.nanoTime() - started).as("the WRITE lock was released at the rollback, not left to expire")
			.isLessThan(LEASE.toNanos());
		assertThat(counter()).isEqualTo(granted[0] + 1);
	}

}
