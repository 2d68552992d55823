package io.github.dblock.process;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.CommitCheckCounter;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Commit-time validation across three worker JVMs ({@link CommitCheckWorker}) that increment one counter under a
 * LEASE lock with random pauses past the lease: sorted by fencing token, the committed values must increase strictly
 * (no commit after the lease passed to another owner) with validation; without it, the number that do not is
 * reported.
 */
class CrossProcessCommitValidationTests {

	private static final Pattern RESULT = Pattern.compile("RESULT rolled-back=(\\d+) not-acquired=(\\d+)");

	private static final int PROCESSES = 3;

	private static final int THREADS = 2;

	private static final int UNITS = 10;

	private static final long LEASE_MILLIS = 80;

	private static HikariDataSource pool;

	@BeforeAll
	static void tables() {
		pool = TestDatabase.get().newDataSource(2);
		LockNodes.migrateOnce(pool);
		CommitCheckCounter.createTables();
	}

	@AfterAll
	static void close() {
		pool.close();
	}

	@Test
	void threeProcessesCommitOnlyUnderTheLockWithValidationAndNotWithout() throws Exception {
		int[] on = run(true);
		int[] off = run(false);
		String report = "commit-time validation across " + PROCESSES + " JVMs (" + THREADS + " threads x " + UNITS
				+ " units each, lease " + LEASE_MILLIS + " ms, 30% of units pause past it): on: committed " + on[0]
				+ ", out of lock order " + on[1] + ", lost updates " + on[2]
				+ ", rolled back (at commit, or by snapshot isolation) " + on[3] + "; off: committed " + off[0] + ", out of lock order " + off[1] + ", lost updates " + off[2];
		System.out.println(report);
		io.github.dblock.CommitValidationContentionTestsAccess.record(report);
		assertThat(on[1]).isZero();
		assertThat(on[2]).isZero();
		assertThat(on[0] + on[3] + on[4]).isEqualTo(PROCESSES * THREADS * UNITS);
	}

	/** @return committed, out of order, lost updates, rolled back, not acquired */
	private int[] run(boolean validate) throws Exception {
		JdbcTemplate jdbc = new JdbcTemplate(pool);
		String name = CommitCheckCounter.newCounter(jdbc, "xp-commit-");
		List<Process> workers = new ArrayList<>();
		for (int p = 0; p < PROCESSES; p++) {
			workers.add(WorkerProcesses.start(CommitCheckWorker.class, "contend", name, String.valueOf(validate),
					String.valueOf(THREADS), String.valueOf(UNITS), String.valueOf(LEASE_MILLIS)));
		}
		int rolledBack = 0;
		int notAcquired = 0;
		for (Process worker : workers) {
			String output = WorkerProcesses.outputOf(worker, Duration.ofMinutes(4));
			Matcher result = RESULT.matcher(output);
			assertThat(result.find()).as(output).isTrue();
			rolledBack += Integer.parseInt(result.group(1));
			notAcquired += Integer.parseInt(result.group(2));
		}
		CommitCheckCounter.Tally tally = CommitCheckCounter.Tally.of(jdbc, name);
		return new int[] { tally.committed(), tally.outOfOrder(), tally.lostUpdates(), rolledBack, notAcquired };
	}

}
