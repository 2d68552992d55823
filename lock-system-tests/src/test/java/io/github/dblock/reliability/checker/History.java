package io.github.dblock.reliability.checker;

import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

import javax.sql.DataSource;

import org.jspecify.annotations.Nullable;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;

/**
 * The history of one checker run: every operation's invocation and completion on this JVM's clock
 * ({@link System#nanoTime()}; a worker process writes each call's duration to {@code checker_op} instead), and what
 * the server recorded on its clock ({@code UTC_TIMESTAMP(6)}) in the tables
 * {@code checker_section} (one row per critical section), {@code checker_fenced} (the highest fencing token written
 * per resource: a write is accepted only when its token is at least the stored one, in one
 * {@code UPDATE … WHERE token <= ?}), {@code checker_commit} (a row written in the critical section's own
 * transaction, for PESSIMISTIC and OPTIMISTIC {@code execute}: the section counts only if it committed) and
 * {@code checker_effect} (the effect of an idempotent call, written in its transaction).
 * <p>
 * A section's entry and exit are each one short transaction on the history pool (never faulted): the fenced write and
 * the section row's entry (or exit) time, so that the order of the entry times is the order of the fenced writes.
 * {@code checker_commit} and {@code checker_effect} are written in the lock's own transactions, so they live on the
 * lock servers and are read back through the lock-side pool, which may be another server than the history's (a
 * Galera run keeps its history on a server outside the cluster, so that a crash of the cluster loses none of it).
 * Thread-safe.
 */
public final class History {

	/** What a critical section holds. */
	public enum Family {

		/** An exclusive lock, any mode. */
		EXCLUSIVE,

		/** A read lock. */
		READ,

		/** A write lock. */
		WRITE,

		/** A semaphore permit. */
		PERMIT

	}

	/**
	 * One critical section as the server recorded it.
	 * @param opId the operation that held it
	 * @param node the node (lock template) that held it
	 * @param resource the resource, semaphore name or key
	 * @param family what was held
	 * @param mode the lock mode and call, for reports
	 * @param token the fencing token
	 * @param enteredAt server time of the entry's fenced write
	 * @param exitedAt server time of the exit's fenced write; {@code null} if the exit was never recorded
	 * @param entryAccepted whether the fenced write at entry was accepted
	 * @param exitAccepted whether the fenced write at exit was accepted; {@code null} if never recorded
	 * @param counted whether the section counts at all: a section run in a transaction of its own (PESSIMISTIC and
	 * OPTIMISTIC {@code execute}) only when that transaction committed; the others always
	 * @param lost whether the library did not confirm the hold to its end: {@code onLost} ran, the handle was no
	 * longer held at the exit, or its release threw (a committed transactional section is never lost)
	 * @param grantedNanos {@link System#nanoTime()} when the library handed the lock to the caller (the acquisition
	 * returned, or the callback or method began); {@code null} if not recorded
	 * @param releasedNanos {@link System#nanoTime()} when the caller gave the lock up (before its release, or when
	 * its callback or method returned); {@code null} if not recorded
	 * @param lostNanos {@link System#nanoTime()} when an {@code onLost} listener of the hold ran; {@code null} if
	 * none ran
	 * @param watched whether the hold is a renewed lease whose {@code onLost} the section listened to, so that the
	 * documented timing of {@code onLost} applies to it
	 */
	public record Section(long opId, String node, String resource, Family family, String mode, long token,
			LocalDateTime enteredAt, @Nullable LocalDateTime exitedAt, boolean entryAccepted,
			@Nullable Boolean exitAccepted, boolean counted, boolean lost, @Nullable Long grantedNanos,
			@Nullable Long releasedNanos, @Nullable Long lostNanos, boolean watched) {

		/** A section without the JVM's timing of its hold. */
		public Section(long opId, String node, String resource, Family family, String mode, long token,
				LocalDateTime enteredAt, @Nullable LocalDateTime exitedAt, boolean entryAccepted,
				@Nullable Boolean exitAccepted, boolean counted, boolean lost) {
			this(opId, node, resource, family, mode, token, enteredAt, exitedAt, entryAccepted, exitAccepted, counted,
					lost, null, null, null, false);
		}

		/** Whether the section has a fencing token of its own (not OPTIMISTIC work, not a token-less adapter). */
		boolean tokened() {
			return this.token != NO_TOKEN && !this.mode.startsWith("OPTIMISTIC");
		}

		/** A section the library called valid from its entry to its exit. */
		boolean clean() {
			return this.counted && !this.lost;
		}

		boolean overlaps(Section other) {
			LocalDateTime myEnd = (this.exitedAt != null) ? this.exitedAt : this.enteredAt;
			LocalDateTime otherEnd = (other.exitedAt != null) ? other.exitedAt : other.enteredAt;
			return this.enteredAt.isBefore(otherEnd) && other.enteredAt.isBefore(myEnd);
		}

		@Override
		public String toString() {
			return "section op=" + this.opId + " " + this.node + " " + this.family + "/" + this.mode + " "
					+ this.resource + " token=" + this.token + " [" + this.enteredAt + " .. " + this.exitedAt
					+ "] entryFence=" + (this.entryAccepted ? "accepted" : "rejected") + " exitFence="
					+ ((this.exitAccepted == null) ? "none" : (this.exitAccepted ? "accepted" : "rejected"))
					+ (this.counted ? "" : " (rolled back: does not count)") + (this.lost ? " (lost)" : "")
					+ ((this.grantedNanos != null) ? " jvm[granted " + this.grantedNanos / 1_000_000 + " ms, released "
							+ ((this.releasedNanos != null) ? this.releasedNanos / 1_000_000 + " ms" : "-") + ", onLost "
							+ ((this.lostNanos != null) ? this.lostNanos / 1_000_000 + " ms" : "never")
							+ (this.watched ? "" : " (not watched)") + "]" : "");
		}

	}

	/**
	 * One call as this JVM saw it.
	 * @param id the operation's id (shared with its section)
	 * @param node the node
	 * @param call what was called, for example {@code "LEASE tryAcquire"} or {@code "close"}
	 * @param resource the resource
	 * @param invokedNanos {@link System#nanoTime()} at invocation
	 * @param completedNanos {@link System#nanoTime()} at completion
	 * @param boundNanos the documented bound of the call; 0 when the call has none
	 * @param outcome {@code ok}, {@code busy}, or the exception's simple name
	 * @param pausedNanos how long the caller's whole JVM stood still during the call (SIGSTOP), measured on that JVM's
	 * clock by a watchdog thread; 0 in a JVM that is never paused
	 */
	public record Op(long id, String node, String call, String resource, long invokedNanos, long completedNanos,
			long boundNanos, String outcome, long pausedNanos) {

		/** A call of a JVM that is never paused. */
		public Op(long id, String node, String call, String resource, long invokedNanos, long completedNanos,
				long boundNanos, String outcome) {
			this(id, node, call, resource, invokedNanos, completedNanos, boundNanos, outcome, 0);
		}

		long tookNanos() {
			return this.completedNanos - this.invokedNanos;
		}

		/** How long the call took while its JVM ran: the bounds are about the library, not a stopped process. */
		long runningNanos() {
			return tookNanos() - this.pausedNanos;
		}

		@Override
		public String toString() {
			return "op=" + this.id + " " + this.node + " " + this.call + " " + this.resource + " took "
					+ (tookNanos() / 1_000_000) + " ms" + ((this.pausedNanos > 0) ? " (" + (this.pausedNanos / 1_000_000)
							+ " ms of it with its JVM stopped)" : "") + ((this.boundNanos > 0) ? " (bound "
							+ (this.boundNanos / 1_000_000) + " ms)" : "") + " -> " + this.outcome;
		}

	}

	/**
	 * A forced release that found the lock held ({@code LockTableAdmin.ForceRelease#wasHeld()}).
	 * @param resource the resource
	 * @param previousToken the row's fencing token before: at least the freed holder's token (a LEASE take
	 * reserves a block of tokens, so it may be up to 1,023 above)
	 * @param previousHolder the row's holder before
	 * @param invokedNanos {@link System#nanoTime()} at invocation
	 * @param completedNanos {@link System#nanoTime()} at completion
	 */
	public record Forced(String resource, long previousToken, String previousHolder, long invokedNanos,
			long completedNanos) {
	}

	/** The effect of an idempotent call that committed: its key and operation. */
	public record Effect(String key, long opId) {
	}

	/**
	 * Everything the checker reads.
	 * @param sections the critical sections
	 * @param ops the calls
	 * @param effects the committed effects of idempotent calls
	 * @param succeededKeys the keys for which some call returned normally
	 * @param permits the permits of each semaphore
	 * @param leftovers what was still held after the run (resource and where)
	 * @param killed the nodes whose process was killed (SIGKILL), with the server time taken just before the signal
	 * @param rowChanges every change of an exclusive lock row of the run, when a trigger recorded them (a server of the
	 * test's own); empty otherwise
	 * @param forced the forced releases that freed a held lock
	 */
	public record Observed(List<Section> sections, List<Op> ops, List<Effect> effects, Set<String> succeededKeys,
			Map<String, Integer> permits, List<String> leftovers, Map<String, LocalDateTime> killed,
			List<RowChange> rowChanges, List<Forced> forced) {

		/** A history in which no process was killed, no row change was recorded and no lock was force-released. */
		public Observed(List<Section> sections, List<Op> ops, List<Effect> effects, Set<String> succeededKeys,
				Map<String, Integer> permits, List<String> leftovers) {
			this(sections, ops, effects, succeededKeys, permits, leftovers, Map.of(), List.of(), List.of());
		}

		/** A history without forced releases. */
		public Observed(List<Section> sections, List<Op> ops, List<Effect> effects, Set<String> succeededKeys,
				Map<String, Integer> permits, List<String> leftovers, Map<String, LocalDateTime> killed,
				List<RowChange> rowChanges) {
			this(sections, ops, effects, succeededKeys, permits, leftovers, killed, rowChanges, List.of());
		}

		/** A history in which no process was killed and no row change was recorded. */
		public Observed(List<Section> sections, List<Op> ops, List<Effect> effects, Set<String> succeededKeys,
				Map<String, Integer> permits, List<String> leftovers, List<Forced> forced) {
			this(sections, ops, effects, succeededKeys, permits, leftovers, Map.of(), List.of(), forced);
		}

	}

	/** The token of a section whose lock does not expose one (ShedLock's {@code SimpleLock}). */
	public static final long NO_TOKEN = -1;

	/**
	 * One change of an exclusive lock row, as a trigger on the lock table recorded it in the changing statement's
	 * transaction, on that statement's clock ({@code UTC_TIMESTAMP(6)} is fixed for a statement and its triggers).
	 * @param id the order of the changes
	 * @param resource the resource
	 * @param at the statement's server time
	 * @param oldOwner the owner before ({@code null}: none, or a new row)
	 * @param oldExpires the lease's end before ({@code null} for a new row)
	 * @param oldWaitingOwner the waiter next in line before, to whom a release may hand the lock
	 * @param newOwner the owner after ({@code null}: released)
	 * @param newToken the row's fencing token after: for a LEASE take, the last token of the block it reserved
	 */
	public record RowChange(long id, String resource, LocalDateTime at, @Nullable String oldOwner,
			@Nullable LocalDateTime oldExpires, @Nullable String oldWaitingOwner, @Nullable String newOwner,
			long newToken) {
	}

	private final AtomicLong ids;

	private final boolean persistOps;

	private final java.util.function.LongBinaryOperator paused;

	private final ConcurrentLinkedQueue<Op> ops = new ConcurrentLinkedQueue<>();

	private final ConcurrentLinkedQueue<Forced> forced = new ConcurrentLinkedQueue<>();

	private final Set<String> succeededKeys = java.util.concurrent.ConcurrentHashMap.newKeySet();

	private final JdbcTemplate jdbc;

	/** On the lock servers: {@code checker_commit} and {@code checker_effect}. */
	private final JdbcTemplate lockJdbc;

	private final TransactionTemplate transactions;

	private final String prefix;

	/**
	 * A history on the given pool (which should not be faulted), for resources starting with {@code prefix}; creates
	 * its tables if missing.
	 */
	public History(DataSource historyPool, String prefix) {
		this(historyPool, historyPool, prefix);
	}

	/**
	 * A history whose records are on {@code historyPool} and whose rows written in the lock's own transactions
	 * ({@code checker_commit}, {@code checker_effect}) are on the lock servers, read through {@code lockPool};
	 * creates the tables of each if missing.
	 */
	public History(DataSource historyPool, DataSource lockPool, String prefix) {
		this(historyPool, lockPool, prefix, 0, false, (from, to) -> 0);
	}

	/**
	 * A history shared by several processes: this one's operation ids start after {@code idBase}, and with
	 * {@code persistOps} every call is also written to {@code checker_op} (with its duration on this JVM's clock, the
	 * only JVM time that means anything to another process), so that it survives a SIGKILL of this process.
	 * @param paused how long this JVM stood still between two of its {@link System#nanoTime()} readings
	 */
	public History(DataSource historyPool, String prefix, long idBase, boolean persistOps,
			java.util.function.LongBinaryOperator paused) {
		this(historyPool, historyPool, prefix, idBase, persistOps, paused);
	}

	private History(DataSource historyPool, DataSource lockPool, String prefix, long idBase, boolean persistOps,
			java.util.function.LongBinaryOperator paused) {
		this.ids = new AtomicLong(idBase);
		this.persistOps = persistOps;
		this.paused = paused;
		this.jdbc = new JdbcTemplate(historyPool);
		this.lockJdbc = (lockPool == historyPool) ? this.jdbc : new JdbcTemplate(lockPool);
		this.transactions = new TransactionTemplate(new DataSourceTransactionManager(historyPool));
		// no snapshot: with MariaDB's innodb_snapshot_isolation a REPEATABLE READ transaction's write of a row changed
		// by another transaction since its snapshot would fail (1020)
		this.transactions.setIsolationLevel(TransactionTemplate.ISOLATION_READ_COMMITTED);
		this.prefix = prefix;
		createTables(this.jdbc);
		if (this.lockJdbc != this.jdbc) {
			createLockSideTables(this.lockJdbc);
		}
	}

	static void createTables(JdbcTemplate jdbc) {
		jdbc.execute("CREATE TABLE IF NOT EXISTS checker_section (op_id BIGINT NOT NULL, run VARCHAR(64) NOT NULL,"
				+ " node VARCHAR(32) NOT NULL, resource VARCHAR(100) NOT NULL, family VARCHAR(16) NOT NULL,"
				+ " mode VARCHAR(48) NOT NULL, token BIGINT NOT NULL, entered_at DATETIME(6) NOT NULL,"
				+ " exited_at DATETIME(6) NULL, entry_accepted BOOLEAN NOT NULL, exit_accepted BOOLEAN NULL,"
				+ " lost BOOLEAN NOT NULL DEFAULT FALSE, transactional BOOLEAN NOT NULL, granted_nanos BIGINT NULL,"
				+ " released_nanos BIGINT NULL, lost_nanos BIGINT NULL, watched BOOLEAN NOT NULL DEFAULT FALSE,"
				+ " PRIMARY KEY (run, op_id))");
		// the JVM's timing of the hold (System.nanoTime()), added to a table created before it was recorded (plain
		// ALTER TABLE: MySQL has no ADD COLUMN IF NOT EXISTS)
		Integer timed = jdbc.queryForObject("SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
				+ "DATABASE() AND TABLE_NAME = 'checker_section' AND COLUMN_NAME = 'granted_nanos'", Integer.class);
		if (timed == null || timed == 0) {
			jdbc.execute("ALTER TABLE checker_section ADD COLUMN granted_nanos BIGINT NULL, ADD COLUMN released_nanos"
					+ " BIGINT NULL, ADD COLUMN lost_nanos BIGINT NULL, ADD COLUMN watched BOOLEAN NOT NULL DEFAULT FALSE");
		}
		jdbc.execute("CREATE TABLE IF NOT EXISTS checker_fenced (resource VARCHAR(100) PRIMARY KEY,"
				+ " token BIGINT NOT NULL, writes BIGINT NOT NULL)");
		createLockSideTables(jdbc);
		jdbc.execute("CREATE TABLE IF NOT EXISTS checker_op (seq BIGINT AUTO_INCREMENT PRIMARY KEY, run VARCHAR(64) NOT"
				+ " NULL, op_id BIGINT NOT NULL, node VARCHAR(32) NOT NULL, pcall VARCHAR(64) NOT NULL, resource"
				+ " VARCHAR(100) NOT NULL, took_nanos BIGINT NOT NULL, bound_nanos BIGINT NOT NULL, outcome VARCHAR(100)"
				+ " NOT NULL, paused_nanos BIGINT NOT NULL, KEY (run))");
	}

	/** The tables written in the lock's own transactions, on the lock servers. */
	private static void createLockSideTables(JdbcTemplate jdbc) {
		jdbc.execute("CREATE TABLE IF NOT EXISTS checker_commit (run VARCHAR(64) NOT NULL, op_id BIGINT NOT NULL,"
				+ " PRIMARY KEY (run, op_id))");
		jdbc.execute("CREATE TABLE IF NOT EXISTS checker_effect (run VARCHAR(64) NOT NULL, op_id BIGINT NOT NULL,"
				+ " idem_key VARCHAR(100) NOT NULL, PRIMARY KEY (run, op_id))");
	}

	/** The prefix of this run's resources, which also names the run in the tables. */
	public String run() {
		return this.prefix;
	}

	/** A new operation id. */
	public long nextId() {
		return this.ids.incrementAndGet();
	}

	/** Records a call. */
	public void op(long id, String node, String call, String resource, long invokedNanos, long completedNanos,
			long boundNanos, String outcome) {
		long pausedNanos = this.paused.applyAsLong(invokedNanos, completedNanos);
		if (this.persistOps) {
			String shortOutcome = (outcome.length() > 100) ? outcome.substring(0, 100) : outcome;
			retried(() -> this.jdbc.update("INSERT INTO checker_op (run, op_id, node, pcall, resource, took_nanos,"
					+ " bound_nanos, outcome, paused_nanos) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", this.prefix, id, node,
					call, resource, completedNanos - invokedNanos, boundNanos, shortOutcome, pausedNanos));
		}
		else {
			this.ops.add(new Op(id, node, call, resource, invokedNanos, completedNanos, boundNanos, outcome,
					pausedNanos));
		}
	}

	/** Records that a call on the key returned normally. */
	public void succeeded(String key) {
		this.succeededKeys.add(key);
	}

	/**
	 * Enters a critical section: the fenced write (unless {@code fenced} is false: OPTIMISTIC work is given the
	 * version it started from, the previous holder's token, so it writes nothing fenced and is checked for exclusion
	 * only) and the section's row, in one transaction of the history pool.
	 * @return whether the fenced write was accepted
	 */
	public boolean enter(long opId, String node, String resource, Family family, String mode, long token,
			boolean transactional, boolean fenced) {
		// outside the transaction: its shared lock on an existing row, upgraded by the UPDATE, would deadlock
		retried(() -> this.jdbc.update("INSERT IGNORE INTO checker_fenced (resource, token, writes) VALUES (?, 0, 0)",
				resource));
		Boolean accepted = retried(() -> this.transactions.execute((status) -> {
			int rows = fenced ? this.jdbc.update("UPDATE checker_fenced SET token = ?, writes = writes + 1 WHERE"
					+ " resource = ? AND token <= ?", token, resource, token) : 0;
			this.jdbc.update("INSERT INTO checker_section (op_id, run, node, resource, family, mode, token, entered_at,"
					+ " entry_accepted, transactional) VALUES (?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(6), ?, ?)", opId,
					this.prefix, node, resource, family.name(), mode, token, rows == 1, transactional);
			return rows == 1;
		}));
		return Boolean.TRUE.equals(accepted);
	}

	/** Leaves a critical section: the fenced write and the exit time, in one transaction of the history pool. */
	public boolean exit(long opId, String resource, long token, boolean fenced) {
		Boolean accepted = retried(() -> this.transactions.execute((status) -> {
			int rows = fenced ? this.jdbc.update("UPDATE checker_fenced SET token = ?, writes = writes + 1 WHERE"
					+ " resource = ? AND token <= ?", token, resource, token) : 0;
			this.jdbc.update("UPDATE checker_section SET exited_at = UTC_TIMESTAMP(6), exit_accepted = ? WHERE run = ?"
					+ " AND op_id = ?", rows == 1, this.prefix, opId);
			return rows == 1;
		}));
		return Boolean.TRUE.equals(accepted);
	}

	/**
	 * Runs a history transaction again when the server chose it as a deadlock victim (it was rolled back whole, so
	 * nothing of it was recorded), up to 5 times; and, for up to 3 minutes, when the server could not be reached or
	 * the connection broke during the transaction (a restart of the server the test owns: the transaction was rolled
	 * back unless the restart came between its commit and the reply), or a Galera node was not in a primary
	 * component.
	 */
	private static <T> T retried(java.util.function.Supplier<T> transaction) {
		long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MINUTES.toNanos(3);
		for (int attempt = 1;; attempt++) {
			try {
				return transaction.get();
			}
			catch (org.springframework.dao.PessimisticLockingFailureException ex) {
				if (attempt >= 5) {
					throw ex;
				}
			}
			catch (org.springframework.dao.DataAccessResourceFailureException
					| org.springframework.dao.RecoverableDataAccessException
					| org.springframework.transaction.CannotCreateTransactionException ex) {
				pause(deadline, ex);
			}
			catch (org.springframework.dao.DataAccessException ex) {
				if (!notInPrimaryComponent(ex)) {
					throw ex;
				}
				pause(deadline, ex);
			}
		}
	}

	private static void pause(long deadline, RuntimeException ex) {
		if (System.nanoTime() > deadline) {
			throw ex;
		}
		try {
			Thread.sleep(200);
		}
		catch (InterruptedException interrupted) {
			Thread.currentThread().interrupt();
			throw ex;
		}
	}

	/**
	 * Whether a Galera node refused the statement because it is not (yet) in a primary component: error 1047
	 * ("WSREP has not yet prepared node for application use") or 1180 ("... not connected to Primary Component"),
	 * as while a crashed cluster is bootstrapped again. The transaction was rolled back.
	 */
	private static boolean notInPrimaryComponent(Throwable ex) {
		for (Throwable cause = ex; cause != null; cause = cause.getCause()) {
			if (cause instanceof java.sql.SQLException sql && (sql.getErrorCode() == 1047 || sql.getErrorCode() == 1180)) {
				return true;
			}
		}
		return false;
	}

	/** Marks a section as not confirmed to its end (by {@code onLost}, {@code isHeld}, or an exception on release). */
	public void lost(long opId) {
		retried(() -> this.jdbc.update("UPDATE checker_section SET lost = TRUE WHERE run = ? AND op_id = ?", this.prefix,
				opId));
	}

	/**
	 * Records the JVM's timing of a section's hold ({@link System#nanoTime()}; {@code null} where unknown) and
	 * whether its {@code onLost} was listened to on a renewed lease. Not in a worker process ({@code persistOps}):
	 * the invariants that read these times compare them across nodes, and each worker process has a clock of its own.
	 */
	public void timing(long opId, @Nullable Long grantedNanos, @Nullable Long releasedNanos, @Nullable Long lostNanos,
			boolean watched) {
		if (this.persistOps) {
			return;
		}
		retried(() -> this.jdbc.update("UPDATE checker_section SET granted_nanos = ?, released_nanos = ?, lost_nanos = ?,"
				+ " watched = ? WHERE run = ? AND op_id = ?", grantedNanos, releasedNanos, lostNanos, watched, this.prefix,
				opId));
	}

	/** Records a forced release that found the lock held. */
	public void forced(String resource, long previousToken, String previousHolder, long invokedNanos,
			long completedNanos) {
		this.forced.add(new Forced(resource, previousToken, previousHolder, invokedNanos, completedNanos));
	}

	/** Writes the commit marker of a transactional section; call on the section's own transaction. */
	public void commitMarker(JdbcTemplate inTransaction, long opId) {
		inTransaction.update("INSERT INTO checker_commit (run, op_id) VALUES (?, ?)", this.prefix, opId);
	}

	/** Writes the effect of an idempotent call; call on the call's own transaction. */
	public void effect(JdbcTemplate inTransaction, long opId, String key) {
		inTransaction.update("INSERT INTO checker_effect (run, op_id, idem_key) VALUES (?, ?, ?)", this.prefix, opId,
				key);
	}

	/** Reads what the server recorded, with the calls of this JVM. */
	public Observed observed(Map<String, Integer> permits, List<String> leftovers) {
		return observed(permits, leftovers, Map.of());
	}

	/**
	 * Reads what the server recorded, with the calls of this JVM and those every process wrote to
	 * {@code checker_op} (each with its duration only: JVM clocks are not compared across processes).
	 */
	public Observed observed(Map<String, Integer> permits, List<String> leftovers, Map<String, LocalDateTime> killed) {
		return observed(permits, leftovers, killed, List.of());
	}

	/** {@link #observed(Map, List, Map)} with the row changes a trigger recorded. */
	public Observed observed(Map<String, Integer> permits, List<String> leftovers, Map<String, LocalDateTime> killed,
			List<RowChange> rowChanges) {
		List<Op> allOps = new ArrayList<>(this.ops);
		this.jdbc.query("SELECT op_id, node, pcall, resource, took_nanos, bound_nanos, outcome, paused_nanos FROM"
				+ " checker_op WHERE run = ? ORDER BY seq", (rs) -> {
					allOps.add(new Op(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getString(4), 0,
							rs.getLong(5), rs.getLong(6), rs.getString(7), rs.getLong(8)));
				}, this.prefix);
		Set<Long> committed = new HashSet<>(
				this.lockJdbc.queryForList("SELECT op_id FROM checker_commit WHERE run = ?", Long.class, this.prefix));
		List<Section> sections = new ArrayList<>();
		this.jdbc.query("SELECT op_id, node, resource, family, mode, token, entered_at, exited_at, entry_accepted,"
				+ " exit_accepted, lost, transactional, granted_nanos, released_nanos, lost_nanos, watched"
				+ " FROM checker_section WHERE run = ? ORDER BY entered_at, op_id",
				(rs) -> {
					long opId = rs.getLong(1);
					Family family = Family.valueOf(rs.getString(4));
					boolean transactional = rs.getBoolean(12);
					boolean counted = !transactional || committed.contains(opId);
					boolean lost = !transactional && rs.getBoolean(11);
					boolean exitAccepted = rs.getBoolean(10);
					Boolean exit = rs.wasNull() ? null : exitAccepted;
					sections.add(new Section(opId, rs.getString(2), rs.getString(3), family, rs.getString(5),
							rs.getLong(6), rs.getObject(7, LocalDateTime.class), rs.getObject(8, LocalDateTime.class),
							rs.getBoolean(9), exit, counted, lost, rs.getObject(13, Long.class),
							rs.getObject(14, Long.class), rs.getObject(15, Long.class), rs.getBoolean(16)));
				}, this.prefix);
		List<Effect> effects = new ArrayList<>();
		this.lockJdbc.query("SELECT idem_key, op_id FROM checker_effect WHERE run = ? ORDER BY op_id",
				(rs) -> {
					effects.add(new Effect(rs.getString(1), rs.getLong(2)));
				}, this.prefix);
		return new Observed(sections, allOps, effects, new HashSet<>(this.succeededKeys), new HashMap<>(permits),
				leftovers, new HashMap<>(killed), List.copyOf(rowChanges), new ArrayList<>(this.forced));
	}

}
