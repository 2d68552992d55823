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
			md.append("- **Uncontended latency (1).** A LEASE cycle is exactly the two-write baseline plus the "
					+ "library's bookkeeping, so its floor is two durable commits. PESSIMISTIC is one transaction "
					+ "(three statements, one commit). Against the peers, the ratio is bounded by the same floor: "
					+ "ShedLock's uncontended cycle is also two autocommit-style writes (inside its own short "
					+ "transactions), so LEASE cannot be 2 × faster than it without dropping a durable write; the "
					+ "only way below two flushes is to not write on release (for example, releasing by letting a "
					+ "short lease run out), which would trade latency for availability.\n");
		}
		if (report.missed("2")) {
			any = true;
			md.append("- **One hot lock inside one JVM (2).** Local waiters already queue on a fair in-JVM lock and "
					+ "do not poll, but every hand-over between two threads of the same JVM still costs a release "
					+ "write and an acquire write on the database (two log flushes), the same work "
					+ "`JdbcLockRegistry` does. The design change that closes the gap is a JVM-local hand-off: when a "
					+ "local thread is queued at release time, keep the row and pass the lease to it with one "
					+ "conditional `UPDATE … SET fencing_token = fencing_token + 1 … WHERE owner_token = ?` (one "
					+ "flush instead of two, and the fencing token still increases per holder), bounded by a "
					+ "maximum number of consecutive local hand-offs (or a time budget) after which the row is "
					+ "released so other nodes get their turn.\n");
		}
		if (report.missed("3")) {
			any = true;
			md.append("- **One hot lock across processes (3).** A waiter in another JVM learns that the lock is "
					+ "free only by polling with back-off (10 ms doubling to 200 ms, jittered), so a process that "
					+ "releases and immediately re-acquires usually wins again, and the other process's waits grow "
					+ "towards the back-off cap: that is what the p99 wait shows. Closing it needs a server-side "
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
