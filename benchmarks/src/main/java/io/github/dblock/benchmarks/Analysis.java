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
					+ "trades latency for availability. For PESSIMISTIC the SQL statements are those of its baseline, "
					+ "but not the round trips: the benchmark runs it through `LockTemplate.execute`, whose Spring "
					+ "transaction (`DataSourceTransactionManager`) begins with `setAutoCommit(false)` and ends with "
					+ "`setAutoCommit(true)`, each a `SET autocommit` round trip that a statement counter does not see "
					+ "(seen in a JDBC-call trace), where the plain loop sends one `START TRANSACTION`: four round trips "
					+ "against three, about the measured ratio. `acquire`/`close` outside a transaction runs exactly "
					+ "the baseline's three; a pool that hands out connections with autocommit off saves both toggles. "
					+ "The rest is JVM-side work per call (owner UUID, holder description, the driver's query-timeout "
					+ "timer, the JVM-local lock) or the noise of a shared machine.\n");
		}
		if (report.missed("2")) {
			any = true;
			md.append("- **One hot lock inside one JVM (2).** LEASE hands a lock to the next waiting thread of the "
					+ "same JVM in memory (no statement; the take reserved a block of fencing tokens, so each holder "
					+ "still gets its own, higher token), for at most 200 ms or 1,024 holders per take before the lease "
					+ "goes back to the database and is taken again at once. Its queued threads hold back only when a "
					+ "waiter on another node has announced itself in the row (`waiting_until`, read by the release), "
					+ "and only until that waiter's announced attempt; in earlier runs they always held back for the "
					+ "longest retry pause after each 200 ms chain, which halved this scenario with a 1 ms hold. What "
					+ "is left is the critical section itself: with a 1 ms hold no lock completes more than about "
					+ "1,000 sections a second, so a target of 3 × (or 5 ×) a peer cannot be met where the peer already "
					+ "does more than a third (a fifth) of that. PESSIMISTIC has no in-JVM hand-off: the lock lives in "
					+ "the caller's transaction, which cannot move to another thread, so every change of holder is a "
					+ "transaction with a flushed commit on the server, and the JVM's threads take turns through its "
					+ "local queue (one thread asks the database), so the next holder's locking `UPDATE` starts only "
					+ "after the previous commit: plain JDBC does about 2.5 times more cycles a second when its "
					+ "waiters queue in InnoDB instead (granted at the commit, no round trip between holders), which "
					+ "is what PESSIMISTIC would need for 5 × a peer here (see docs/DESIGN.md).\n");
		}
		if (report.missed("3")) {
			any = true;
			md.append("- **One hot lock across processes (3).** PESSIMISTIC used to manage about 100 hand-overs a "
					+ "second between processes, a back-off pause each: a waiter granted the row lock at the holder's "
					+ "commit compared `expires_at` with its own statement-start clock, older than the holder's write "
					+ "whenever the holder's statement had started later, took the free row for leased and backed off "
					+ "while still holding the row lock, so the other process's waiter met the same stale clock. A "
					+ "statement that matches nothing on an existing row now runs once more at once (see docs/DESIGN.md, "
					+ "\"Performance follow-up\"). A LEASE waiter in another JVM still learns that the lock is free "
					+ "only by polling; it announces its next attempt in the row, the holder's JVM keeps chains to 50 ms "
					+ "while another node wants the lock and then holds back until that attempt, and a waiter polls at "
					+ "the first back-off step while the lease is younger than a chain. Its wait is the rest of a chain "
					+ "plus its poll step, and the lock is idle between the end of a chain and the waiter's attempt: "
					+ "that is what the p99 wait and the throughput show. A server-side wait (a row lock the holder's "
					+ "JVM keeps during a chain) would remove the poll, at the price of a connection per hot lock.\n");
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
