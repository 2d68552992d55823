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
					+ "JDBC baseline; ShedLock an `UPDATE` to lock and one to unlock, each in its own Spring transaction (2 "
					+ "commits, plus an `INSERT IGNORE` the first time a provider sees a name); `JdbcLockRegistry` an "
					+ "`UPDATE` and an `INSERT` in one transaction and a `DELETE` in another (2 commits). Every lease-style "
					+ "lock pays two durable commits per cycle, so LEASE cannot be twice as fast as a peer that pays the "
					+ "same two: the ratio to the peers is bounded by their extra round trips (the `SET autocommit` toggles "
					+ "of their Spring transactions, `JdbcLockRegistry`'s third statement), which weigh the most where a "
					+ "commit is cheap and a round trip is not (a server across a network). Going below two flushes means "
					+ "not writing on release (letting a short lease run out), which trades latency for availability. "
					+ "PESSIMISTIC is taken with `acquire` and given back with `close`, which outside a transaction send "
					+ "exactly the baseline's statements (`START TRANSACTION`, the locking `UPDATE`, `COMMIT`); the rest is "
					+ "the JVM's work around them (owner UUID, holder description, the JVM-local lock, the connection "
					+ "limit's semaphore). Through `execute` (the row \"PESSIMISTIC, execute\") it pays one round trip more "
					+ "per cycle: the Spring transaction (`DataSourceTransactionManager`) begins with "
					+ "`setAutoCommit(false)` and ends with `setAutoCommit(true)`, each a `SET autocommit` round trip that "
					+ "a statement counter does not see (seen in a JDBC-call trace), where the plain loop sends one `START "
					+ "TRANSACTION`; a pool that hands out connections with autocommit off saves both toggles. For LEASE "
					+ "the gap to the two-write baseline is not the number of statements (two autocommit `UPDATE`s per "
					+ "cycle, as the server's general log shows) but their cost. They write more columns (owner, holder, "
					+ "token block, both instants, the waiter columns) through more expressions: sent by plain JDBC, the "
					+ "same two statements measured 1.14 to 1.28 × the baseline's two in an interleaved comparison on this "
					+ "machine. And Connector/J parses the text of every prepared statement on the client (`QueryInfo`), "
					+ "longer for these statements: a profile of the LEASE cycle showed that parse as its largest "
					+ "client-side cost (about 230 µs of client CPU per cycle against 150 for the baseline's). With "
					+ "`cachePrepStmts=true&prepStmtCacheSqlLimit=4096` on the JDBC URL the driver parses each statement "
					+ "once per connection: in an interleaved loop against MariaDB 10.11 the LEASE cycle then took "
					+ "1.25–1.27 × the baseline's instead of 1.30–1.33 × (README, Performance). The JVM-side work per call "
					+ "was cut: scheduling a lease's renewal no longer wakes a scheduler thread (`RenewalScheduler`), and "
					+ "on MariaDB the take and the release are bounded by the server (`SET STATEMENT max_statement_time`) "
					+ "instead of Connector/J's per-statement cancel timer (about a fifth less client CPU per cycle). The "
					+ "rest is the owner UUID, the holder description, the JVM-local lock and the noise of a shared "
					+ "machine: between full runs of this harness on this machine the LEASE ratio has ranged from 1.26 to "
					+ "1.77.\n");
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
					+ "with a flushed commit. The next local thread now waits in the server's row lock queue and is "
					+ "granted the row at the holder's commit (one local waiter per resource; see docs/DESIGN.md, "
					+ "\"PESSIMISTIC: the next local thread waits in the server\"); what remains between two holders is "
					+ "the grant, its reply and the next holder's statements.\n");
		}
		if (report.missed("3")) {
			any = true;
			md.append("- **One hot lock across processes (3).** A LEASE waiter in another JVM puts itself in line in "
					+ "the row, the holder's JVM passes the lease among its own threads for at most 10 ms while another "
					+ "node waits, and its release then hands the lease straight to the waiter, which tries every 1-2 ms "
					+ "meanwhile (see docs/DESIGN.md, \"Hand-over between nodes\"). A change of node still costs the "
					+ "release's and the take's flushed commits and up to one poll step, during which the lock is idle, "
					+ "and a waiting thread of the other JVM waits for the rest of a chain: that is what the p99 wait "
					+ "and the throughput show. With a 1 ms hold no lock completes more than about 1,000 sections a "
					+ "second, so 2 × a peer cannot be met where the peer already does more than half of that. Shorter chains "
					+ "do not buy the p99: in an experiment against MariaDB 10.11 on this machine (2 JVMs × 4 threads, "
					+ "1 ms hold, 8 s), chains of at most 5 ms instead of 10 gave 534–558 sections/s against 589–605 and "
					+ "a p99 of 32–37 ms against 33–35, since every change of node costs the same idle time while more "
					+ "threads queue behind each one. Polling every 0.25–0.5 ms instead of 1–2 ms gave 650–696 "
					+ "sections/s and a p99 of 26–27 ms, at four times the statements per waiting node; the library "
					+ "keeps the slower poll, since a busy poll loads the shared database. A server-side wait (a row "
					+ "lock the holder's JVM keeps during a chain, at the price of a connection per hot lock and "
					+ "waiting node) would remove the poll's delay, which the fast poll already cut to a quarter, so it "
					+ "would not bring the p99 under 20 ms either: what remains is the two flushed commits of every "
					+ "change of node and the threads queued behind it.\n");
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
