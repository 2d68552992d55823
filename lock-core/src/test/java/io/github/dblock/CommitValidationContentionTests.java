package io.github.dblock;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Several nodes (each a {@link LockTemplate} on a pool of its own), two threads each, increment a counter under a
 * LEASE lock with an explicit lease, in the shape of {@code @DistributedLock} on a {@code @Transactional} method (the
 * lock taken outside the transaction); the work pauses at random, sometimes past its lease. Each committed
 * transaction logs its holder's fencing token and the value it wrote. A commit made by a holder after its lease had
 * passed to another owner shows as a value that does not follow the lock's order: sorted by fencing token, the
 * committed values must increase strictly. With commit-time validation there must be none.
 */
class CommitValidationContentionTests {

	private static final Duration LEASE = Duration.ofMillis(80);

	private static final int NODES = 3;

	private static final int THREADS_PER_NODE = 2;

	private static final int UNITS_PER_THREAD = 12;

	private final List<HikariDataSource> pools = new ArrayList<>();

	@BeforeAll
	static void tables() {
		CommitCheckCounter.createTables();
	}

	@AfterEach
	void close() {
		this.pools.forEach(HikariDataSource::close);
	}

	@Test
	void noCommitAfterTheLeasePassedToAnotherOwnerWithValidationAndSomeWithout() throws Exception {
		Outcome on = run(true);
		Outcome off = run(false);
		String report = "commit-time validation under contention (" + NODES + " nodes x " + THREADS_PER_NODE
				+ " threads x " + UNITS_PER_THREAD + " units, lease " + LEASE.toMillis() + " ms, 30% of units pause 90-150 ms):"
				+ "\n  on:  " + on + "\n  off: " + off;
		System.out.println(report);
		Measurements.record(report);
		assertThat(on.outOfOrder).isZero();
		assertThat(on.finalValue).isEqualTo(on.committed);
		assertThat(on.committed + on.rolledBack + on.notAcquired).isEqualTo(NODES * THREADS_PER_NODE * UNITS_PER_THREAD);
		assertThat(on.rolledBack).as("some holders stalled past their lease and were stopped at (or, by MariaDB's "
				+ "snapshot isolation, before) commit").isPositive();
	}

	private Outcome run(boolean validate) throws Exception {
		HikariDataSource admin = pool(2);
		LockNodes.migrateOnce(admin);
		JdbcTemplate adminJdbc = new JdbcTemplate(admin);
		String name = CommitCheckCounter.newCounter(adminJdbc, "contention-");
		AtomicInteger rolledBack = new AtomicInteger();
		AtomicInteger notAcquired = new AtomicInteger();
		ExecutorService threads = Executors.newFixedThreadPool(NODES * THREADS_PER_NODE);
		List<Future<?>> futures = new ArrayList<>();
		for (int n = 0; n < NODES; n++) {
			HikariDataSource pool = pool(THREADS_PER_NODE + 3);
			LockTemplate node = LockNodes.node(LockMode.LEASE, "node-" + n, pool);
			node.setValidateAtCommit(validate);
			TransactionTemplate tx = CommitCheckCounter.validatedTransactions(pool);
			JdbcTemplate jdbc = new JdbcTemplate(pool);
			LockOptions options = LockOptions.defaults().withLeaseTime(LEASE).withWaitTime(Duration.ofSeconds(20));
			for (int t = 0; t < THREADS_PER_NODE; t++) {
				futures.add(threads.submit(() -> CommitCheckCounter.runUnits(node, tx, jdbc, name, options,
						UNITS_PER_THREAD, rolledBack, notAcquired)));
			}
		}
		for (Future<?> future : futures) {
			future.get(5, TimeUnit.MINUTES);
		}
		threads.shutdown();
		CommitCheckCounter.Tally tally = CommitCheckCounter.Tally.of(adminJdbc, name);
		return new Outcome(tally.committed(), tally.outOfOrder(), tally.finalValue(), rolledBack.get(), notAcquired.get());
	}

	private HikariDataSource pool(int size) {
		HikariDataSource pool = TestDatabase.get().newDataSource(size);
		this.pools.add(pool);
		return pool;
	}

	/**
	 * @param committed transactions committed
	 * @param outOfOrder committed transactions whose value does not follow the lock's order (a commit after the lease
	 * had passed to another owner, or one that lost its update to such a commit)
	 * @param finalValue the counter's final value (equal to {@code committed} when no update was lost)
	 * @param rolledBack transactions refused at commit by the validation, or rolled back before it by MariaDB's
	 * snapshot isolation
	 * @param notAcquired units that did not get the lock within the wait time
	 */
	record Outcome(int committed, int outOfOrder, int finalValue, int rolledBack, int notAcquired) {

		@Override
		public String toString() {
			return "committed " + this.committed + ", committed out of lock order " + this.outOfOrder
					+ ", lost updates " + (this.committed - this.finalValue)
					+ ", rolled back (at commit, or by snapshot isolation) " + this.rolledBack + ", not acquired "
					+ this.notAcquired;
		}

	}

	/** Appends measurements to {@code target/commit-validation-measurements.txt}. */
	static final class Measurements {

		static synchronized void record(String text) {
			try {
				java.nio.file.Files.writeString(java.nio.file.Path.of("target", "commit-validation-measurements.txt"),
						text + "\n", java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
			}
			catch (java.io.IOException ex) {
				System.out.println("Could not record measurements: " + ex);
			}
		}

	}

}
