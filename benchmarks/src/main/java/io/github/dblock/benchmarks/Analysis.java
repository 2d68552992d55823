package io.github.dblock.benchmarks;

/** The explanations of the report: what limits each missed target and what would close the gap. */
final class Analysis {

	private Analysis() {
	}

	static String text(Report report) {
		StringBuilder md = new StringBuilder("## Where targets are missed, and why\n\n");
		boolean any = false;
		if (report.missed("1")) {
			any = true;
			md.append("- **Uncontended latency (1).** Statements per uncontended cycle, counted with a statement-counting "
					+ "data source: LEASE 2 autocommit `UPDATE`s (2 commits), the same as the two-write baseline; "
					+ "PESSIMISTIC `START TRANSACTION`, the locking `UPDATE`, `COMMIT` (1 commit), the same as the "
					+ "plain JDBC baseline; ShedLock an `UPDATE` to lock and one to unlock, each in its own Spring "
					+ "transaction (2 commits, plus an `INSERT IGNORE` the first time a provider sees a name); "
					+ "`JdbcLockRegistry` an `UPDATE` and an `INSERT` in one transaction and a `DELETE` in another "
					+ "(2 commits). On a server that flushes its log at every commit the flush dominates, so every "
					+ "lease-style lock converges on two flushes per cycle and LEASE cannot be twice as fast as a peer "
					+ "that also pays two: the ratio to the peers is bounded by their extra round trips, which only "
					+ "show where round trips, not flushes, dominate (fast storage, or a server across a network). "
					+ "Going below two flushes means not writing on release (letting a short lease run out), which "
					+ "trades latency for availability. For PESSIMISTIC the statements are identical to its baseline; "
					+ "a gap between the two is JVM-side work per call (owner UUID, holder description, the driver's "
					+ "query-timeout timer, the JVM-local lock) or, when it is in milliseconds, the noise of a shared "
					+ "machine.\n");
		}
		if (report.missed("2")) {
			any = true;
			md.append("- **One hot lock inside one JVM (2).** LEASE hands a lock to the next waiting thread of the "
					+ "same JVM in memory (no statement; the take reserved a block of fencing tokens, so each holder "
					+ "still gets its own, higher token), for at most 200 ms or 1,024 holders per take before the lease "
					+ "goes back to the database, after which its queued threads hold back for one retry pause so "
					+ "that other nodes get a turn. What is left is the critical section "
					+ "itself and that pause: with a 1 ms hold no lock completes more than about 1,000 sections a "
					+ "second, the pause after each 200 ms chain halves that when no other node wants the lock, and "
					+ "a peer paying two log flushes (1 to 2 ms here) per hand-over reaches about a third of it. "
					+ "Pausing only when another node is known to wait would need waiters to register in the table "
					+ "(a schema change). PESSIMISTIC has no such hand-off: every "
					+ "change of holder is a transaction on the server (its waiters queue there, not in the JVM).\n");
		}
		if (report.missed("3")) {
			any = true;
			md.append("- **One hot lock across processes (3).** A waiter in another JVM learns that the lock is "
					+ "free only by polling with back-off (10 ms doubling to 200 ms, jittered), so a process that "
					+ "releases and re-acquires at once often wins again (the split of completed sections below shows "
					+ "how uneven it gets), and the other process's waits grow towards the back-off cap: that is what "
					+ "the p99 wait shows. The in-JVM hand-off adds to it by design: a JVM keeps a hot lease for up to "
					+ "200 ms (or 1,024 holders) before giving other nodes a turn. Closing it needs a server-side "
					+ "wait instead of polling: waiting on the row lock (`SELECT … FOR UPDATE` with a bounded "
					+ "`innodb_lock_wait_timeout`, as PESSIMISTIC does) gives FIFO hand-over by the server with no "
					+ "polling delay; for LEASE, a short blocking probe of that kind before sleeping would wake the "
					+ "waiter at the release instead of at its next poll.\n");
		}
		if (report.missed("5")) {
			any = true;
			md.append("- **Table size (5).** Every statement is a primary-key lookup; a slower large table means "
					+ "its pages did not fit the buffer pool on this run (reads from disk), not a scan.\n");
		}
		if (report.missed("6")) {
			any = true;
			md.append("- **Annotation overhead (6).** The measured cost includes SpEL evaluation of the resource "
					+ "template on every call; caching parsed expressions is already done, so the rest is "
					+ "evaluation and proxy dispatch.\n");
		}
		if (report.missed("7")) {
			any = true;
			md.append("- **Memory (7).** A non-zero count of resources with JVM-local state after every lock was "
					+ "released would be a leak in `LocalLocks`; a retained size above the noise without it points "
					+ "at a cache.\n");
		}
		if (report.missed("8")) {
			any = true;
			md.append("- **Crash recovery (8).** A LEASE waiter sleeps until the lease end it read, plus jitter; a "
					+ "PESSIMISTIC waiter depends on the server noticing the dead connection (immediate for a "
					+ "killed process on the same host, up to TCP keep-alive for a lost host).\n");
		}
		if (!any) {
			md.append("Every target was met in this run.\n");
		}
		return md.append('\n').toString();
	}

}
