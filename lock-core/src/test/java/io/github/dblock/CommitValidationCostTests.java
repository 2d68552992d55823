package io.github.dblock;

import java.time.Duration;
import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What commit-time validation costs per transaction: the same small transaction (one insert) under a held LEASE lock,
 * with and without validation, in alternating rounds on one thread; and the check's locking read itself in its two
 * forms ({@code FOR UPDATE}, {@code LOCK IN SHARE MODE}). Printed and appended to
 * {@code target/commit-validation-measurements.txt}; timings are not asserted (the machine is shared).
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class CommitValidationCostTests {

	private static final int ROUNDS = 4;

	private static final int PER_ROUND = 250;

	private HikariDataSource pool;

	private LockTemplate node;

	private TransactionTemplate tx;

	private JdbcTemplate jdbc;

	private final String resource = "commit-cost-" + UUID.randomUUID();

	@BeforeAll
	static void table() {
		TestDatabase.get().execute("CREATE TABLE IF NOT EXISTS commit_check_write (id BIGINT AUTO_INCREMENT PRIMARY KEY,"
				+ " resource VARCHAR(100) NOT NULL, writer VARCHAR(32) NOT NULL)");
	}

	@BeforeEach
	void node() {
		this.pool = TestDatabase.get().newDataSource(4);
		LockNodes.migrateOnce(this.pool);
		this.node = LockNodes.node(LockMode.LEASE, "cost", this.pool);
		DataSourceTransactionManager manager = new DataSourceTransactionManager(this.pool);
		manager.addListener(new CommitValidation());
		this.tx = new TransactionTemplate(manager);
		this.jdbc = new JdbcTemplate(this.pool);
	}

	@AfterEach
	void close() {
		this.pool.close();
	}

	@Test
	void costPerTransactionWithAndWithoutValidation() {
		int total = ROUNDS * PER_ROUND;
		long[] without = new long[total];
		long[] with = new long[total];
		long[] forUpdate = new long[total];
		long[] shareMode = new long[total];
		long[] plain = new long[total];
		long[] insertAndRead = new long[total];
		int writes;
		try (LockHandle lock = this.node.acquire(this.resource, LockOptions.defaults()
			.withLeaseTime(Duration.ofMinutes(5)))) {
			for (int i = 0; i < 200; i++) { // warm-up
				once(i % 2 == 0);
			}
			for (int i = 0; i < total; i++) { // interleaved, so that load from elsewhere hits both alike
				boolean validateFirst = i % 2 == 0;
				long first = once(validateFirst);
				long second = once(!validateFirst);
				with[i] = validateFirst ? first : second;
				without[i] = validateFirst ? second : first;
			}
			writes = this.jdbc.queryForObject("SELECT COUNT(*) FROM commit_check_write WHERE resource = ?",
					Integer.class, this.resource);
			this.node.setValidateAtCommit(false);
			byte[] key = this.resource.getBytes(java.nio.charset.StandardCharsets.UTF_8);
			for (int i = 0; i < total; i++) { // while the lease runs, so the row matches
				plain[i] = timed(() -> this.jdbc.queryForList("SELECT 1"));
				forUpdate[i] = timed(() -> this.jdbc.queryForList(CHECK + "FOR UPDATE", key));
				shareMode[i] = timed(() -> this.jdbc.queryForList(CHECK + "LOCK IN SHARE MODE", key));
				insertAndRead[i] = timed(() -> {
					this.jdbc.update("INSERT INTO commit_check_write (resource, writer) VALUES (?, 'cost')", this.resource);
					this.jdbc.queryForList(CHECK + "FOR UPDATE", key);
				});
			}
		}
		String report = String.format(java.util.Locale.ROOT, "commit-time validation cost (%d transactions each, one "
				+ "insert under a held lease, one thread, interleaved; medians): without %d us/tx, with %d us/tx, "
				+ "difference %d us/tx; a transaction with only the check: FOR UPDATE %d us, LOCK IN SHARE MODE %d us, "
				+ "SELECT 1 %d us; the insert and the same FOR UPDATE by hand in one transaction %d us", total,
				median(without), median(with), median(with) - median(without), median(forUpdate), median(shareMode),
				median(plain), median(insertAndRead));
		System.out.println(report);
		CommitValidationContentionTests.Measurements.record(report);
		assertThat(writes).isEqualTo(200 + 2 * total);
		assertThat(insertAndRead).hasSize(total);
	}

	private static final String CHECK = "SELECT fencing_token FROM distributed_lock WHERE resource = ? "
			+ "AND expires_at > UTC_TIMESTAMP(6) ";

	/** Microseconds of one transaction that inserts a row, with or without validation. */
	private long once(boolean validate) {
		this.node.setValidateAtCommit(validate);
		// the thread holds the lock when the transaction begins: the listener registers the check when on
		return timed(() -> this.jdbc.update("INSERT INTO commit_check_write (resource, writer) VALUES (?, 'cost')",
				this.resource));
	}

	/** Microseconds of one transaction running the work. */
	private long timed(Runnable work) {
		long start = System.nanoTime();
		this.tx.executeWithoutResult((status) -> work.run());
		return (System.nanoTime() - start) / 1000;
	}

	private static long median(long[] values) {
		long[] sorted = values.clone();
		java.util.Arrays.sort(sorted);
		return sorted[sorted.length / 2];
	}

}
