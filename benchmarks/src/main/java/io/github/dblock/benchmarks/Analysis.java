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
					+ "PESSIMISTIC `START TRANSACTION`, the locking `UPDATE`, `COMMIT` (1 commit), the same as the plain "
					+ "JDBC baseline (on MariaDB; on MySQL the bound on the server's lock wait adds a `SET SESSION "
					+ "innodb_lock_wait_timeout` before the `UPDATE` and one after); ShedLock an `UPDATE` to lock and one "
					+ "to unlock, each in its own Spring transaction (2 commits, plus an `INSERT IGNORE` the first time a "
					+ "provider sees a name); `JdbcLockRegistry` an `UPDATE` and an `INSERT` in one transaction and a "
					+ "`DELETE` in another (2 commits). Every lease-style lock pays two commits per cycle, each a log flush "
					+ "on a server with `innodb_flush_log_at_trx_commit = 1`, so LEASE cannot be twice as fast as a peer "
					+ "that pays the same two: the ratio to the peers is bounded by their extra round trips (the `SET "
					+ "autocommit` toggles of their Spring transactions, `JdbcLockRegistry`'s third statement), which weigh "
					+ "the most where a commit is cheap and a round trip is not (a server across a network). Going below "
					+ "two commits means not writing on release (letting a short lease run out), which trades latency for "
					+ "availability. PESSIMISTIC is taken with `acquire` and given back with `close`; the rest is the JVM's "
					+ "work around its statements (owner UUID, holder description, the JVM-local lock, the connection "
					+ "limit's semaphore). Through `execute`, and so through `@DistributedLock(mode = PESSIMISTIC)` (the "
					+ "row \"PESSIMISTIC, execute\"), it pays one round trip more per cycle, net: the Spring transaction "
					+ "(`DataSourceTransactionManager`) begins with `setAutoCommit(false)` and ends with "
					+ "`setAutoCommit(true)`, each a `SET autocommit` round trip that a statement counter does not see "
					+ "(seen in a JDBC-call trace), where the plain loop sends one `START TRANSACTION`; a pool that hands "
					+ "out connections with autocommit off saves both toggles. It also checks, on a second connection, that "
					+ "the row of a resource not seen in the last minute exists (not measured here: every resource was used "
					+ "before measuring). For LEASE the gap to the two-write baseline is not the number of statements (two, "
					+ "as the server's general log shows) but their cost: they write more columns (owner, holder, token "
					+ "block, both instants, the waiter columns) through more expressions, and Connector/J parses the text "
					+ "of every prepared statement on the client unless `cachePrepStmts` is on, which for these longer "
					+ "statements is the largest client-side cost in a profile (every pool here has it on). Scheduling a lease's renewal wakes no scheduler thread (`RenewalScheduler`), and on MariaDB "
					+ "the take and the release are bounded by the server (`SET STATEMENT max_statement_time`) rather "
					+ "than by Connector/J's per-statement cancel timer. The rest is the owner UUID, the holder description, the "
					+ "JVM-local lock and the noise of a shared machine.\n");
		}
		if (report.missed("2")) {
			any = true;
			md.append("- **One hot lock inside one JVM (2).** LEASE hands a lock to the next waiting thread of the "
					+ "same JVM in memory (no statement; the take reserved a block of fencing tokens, so each holder "
					+ "still gets its own, higher token), for at most 200 ms or 1,024 holders per take before the lease "
					+ "goes back to the database and is taken again at once. With a 1 ms hold no lock completes more "
					+ "than about 1,000 sections a second (the sleep itself takes a little longer than 1 ms), so a "
					+ "target of 3 × (or 5 ×) a peer cannot be met where the peer already does more than a third (a "
					+ "fifth) of that. PESSIMISTIC cannot hand a lock over in memory: it lives in the holder's "
					+ "transaction, which cannot move to another thread, so every change of holder is a transaction "
					+ "with a flushed commit. The next local thread waits in the server's row lock queue and is "
					+ "granted the row at the holder's commit (one local waiter per resource; see docs/DESIGN.md, "
					+ "\"PESSIMISTIC: the next local thread waits in the server\"); what remains between two holders is "
					+ "the grant, its reply and the next holder's statements.\n");
		}
		if (report.missed("3")) {
			any = true;
			md.append("- **One hot lock across processes (3).** A LEASE waiter in another JVM puts itself in line in the "
					+ "row, the holder's JVM passes the lease among its own threads for at most 10 ms while another node "
					+ "waits, and its release then hands the lease straight to the waiter, which tries every 1-2 ms "
					+ "meanwhile (see docs/DESIGN.md, \"Hand-over between nodes\"). A change of node still costs the "
					+ "release's and the take's commits and up to one poll step, during which the lock is idle, and a "
					+ "waiting thread of the other JVM waits for the rest of a chain: that is what the p99 wait and the "
					+ "throughput show. With a 1 ms hold no lock completes more than about 1,000 sections a second, so 2 × "
					+ "a peer cannot be met where the peer already does more than half of that. Shorter chains did not "
					+ "lower the p99 in an experiment, and a four times faster poll (which cuts the poll's delay about as "
					+ "far as a server-side wait would, a row lock the holder's JVM keeps during a chain at the price of a "
					+ "connection per hot lock and waiting node) lowered it by a fifth, not under 20 ms, at four times the "
					+ "statements per waiting node (docs/DESIGN.md, \"Benchmarks\"): what remains is the two commits of "
					+ "every change of node and the threads queued behind it. PESSIMISTIC with `fencing = server-clock` "
					+ "against the minimal `FOR UPDATE` loop: that loop keeps every thread's locking read waiting in the "
					+ "server, `server-clock` one per JVM besides the holder, whose next thread sends its statements "
					+ "once the previous one was granted, so each change of holder inside a JVM adds a wake-up and a "
					+ "round trip that the raw loop overlaps with the holder's commit.\n");
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
