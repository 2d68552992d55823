package io.github.dblock.jdbc;

import io.github.dblock.spi.Backoff;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import io.github.dblock.LockMode;
import io.github.dblock.LockType;
import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.spi.ReadWriteLockProvider;
import io.github.dblock.spi.WaitLoop;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.dao.DataAccessException;

/**
 * The {@link LockMode#LEASE} provider: a lease row per resource in the lock table, written with the database
 * server's clock.
 * <p>
 * One acquisition attempt:
 * <ol>
 * <li>{@code UPDATE} the resource's row to the new owner token, holder description, a fencing token of
 * {@code GREATEST(fencing_token + 1024, <server time in µs>)} (the end of a block of 1,024 tokens: the taker uses the
 * first, local successors the next ones, see {@link io.github.dblock.spi.HandOffLock#handOff()}) and an expiry of
 * {@code UTC_TIMESTAMP(6) + lease},
 * on condition that the current lease has expired ({@code expires_at <= UTC_TIMESTAMP(6)}). The row is matched
 * by primary key, the new owner token is unique, so the matched-row count is 1 exactly when the lock was taken,
 * whether or not the driver reports found rows. The fencing token comes back in the same round trip through
 * {@code LAST_INSERT_ID(expr)}, which the server returns in its OK packet.</li>
 * <li>If no row matched, {@code SELECT} the row to learn its holder and how long its lease still runs.</li>
 * <li>If there is no row yet (a never-seen resource), {@code INSERT} it. When several nodes insert the same
 * new resource at once, all but one get a duplicate-key error and go back to step 1.</li>
 * </ol>
 * If a {@link LockMode#PESSIMISTIC} holder's transaction has the row locked, step 1 waits for it, at most for
 * the query timeout, and then counts as busy. On MariaDB every statement is bounded by the server
 * ({@code SET STATEMENT max_statement_time = n FOR ...}) rather than by the driver's query timeout, which costs a timer
 * thread wake-up per statement in Connector/J; the bound is the same.
 * <p>
 * Between attempts the provider sleeps with exponential backoff and jitter, never past the holder's lease end
 * (as read in step 2) nor past the caller's deadline. An uncontended acquisition of a known resource costs one
 * statement; release is one owner-checked {@code UPDATE} that clears the owner, ends the lease and sets the row's
 * fencing token back from the end of the reserved block to the last token the lease handed out (never lower), so
 * that takes faster than one per 1,024 µs do not push the counter ahead of the server clock, on which PESSIMISTIC
 * tokens and a re-created row's tokens rely. Rows are never deleted by a release.
 * <p>
 * Renewal: when the caller gave no lease time of its own ({@link LockRequest#renew()}), a shared scheduler renews
 * the lease every third of the lease time with {@code UPDATE ... SET expires_at = UTC_TIMESTAMP(6) + lease WHERE
 * resource = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6)}, in a short transaction after a
 * {@code SELECT ... FOR UPDATE} of the row by primary key, so that the update reads the server's clock only after any
 * wait for the row lock (the server fixes it when a statement starts), the first time when two thirds of the lease
 * are left (at once for a take that waited behind a row lock or got its reply late). If that matches nothing (the
 * lease had expired, or another owner took it), or if the database stays unreachable until the lease must be presumed
 * expired by this JVM's clock, the lock is marked lost: {@link HeldLock#isLost()} turns true, the
 * {@link HeldLock#onLost(Runnable) callbacks} run, renewal stops, and release changes nothing in the database.
 * Renewal stops when the lock is released. Call {@link #close()} to stop the scheduler.
 * <p>
 * A minimum hold time keeps the lease until {@code acquired_at + minHoldTime} on release
 * ({@code expires_at = GREATEST(UTC_TIMESTAMP(6), acquired_at + INTERVAL ? MICROSECOND)}).
 * <p>
 * Every statement runs in autocommit (a renewal in a short transaction of its own) on a connection taken directly
 * from the data source, never in the caller's transaction, so a lock is visible to other nodes as soon as it is taken and a business rollback
 * cannot undo it. Single-statement, primary-key transactions see the latest committed row whatever the
 * connection's isolation level, so no isolation change (and no extra round trip) is needed. Deadlocks and lock
 * wait timeouts are retried; other errors surface as {@link org.springframework.dao.DataAccessException}.
 * <p>
 * Read/write locks ({@link LockType#READ}, {@link LockType#WRITE}) are leases too, in tables of their own
 * ({@code <table>_rw}, {@code <table>_rw_hold}), renewed on the same scheduler: see {@code ReadWriteLeases}.
 * <p>
 * Waiters on other nodes: one at a time makes itself the next in line in the row ({@code waiting_owner}, with an
 * announcement that runs out, {@code waiting_until}); the holder's release hands the lease straight to it, and its
 * next attempt takes the row as its owner, so no other node and no thread of the releasing JVM can take the lock in
 * between. While the lease it waits for is young (a chain of local hand-offs in the holder's JVM, which ends within
 * 10 ms while another node waits) it tries every couple of milliseconds, with statements that write nothing. A
 * waiter that gives up takes itself out of line and frees a lease handed to it meanwhile; one that dies holds the
 * lock up for the rest of its announcement plus a second at most.
 * <p>
 * Broken connections (a restarted server, a killed connection, a pool that cannot connect) are retried with
 * backoff until the caller's deadline. One owner token serves the whole acquisition, and the take also matches a
 * row that already carries it, so a take that committed just before its connection broke is taken over by the
 * next attempt instead of leaving a lease nobody knows about. A release whose connection broke is retried while
 * the lease is still valid; finding the row no longer ours then means the first release did commit.
 * <p>
 * Thread-safe.
 */
public class LeaseLockProvider implements ReadWriteLockProvider, AutoCloseable {

	private static final Log logger = LogFactory.getLog(LeaseLockProvider.class);


	/**
	 * Fencing tokens reserved by each take: the holder uses the first, and up to {@code TOKEN_BLOCK - 1} local
	 * successors the next ones (see {@link io.github.dblock.spi.HandOffLock#handOff()}); the take ({@link LockStatements#leaseTake}) writes it
	 * as the constant 1024.
	 */
	static final int TOKEN_BLOCK = 1024;

	/** How long one JVM may keep passing a lease between its own threads before releasing it in the database. */
	static final long HAND_OFF_BUDGET_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

	/**
	 * The same while another node wants the lock too ({@link #contended}): its threads wait for the whole chain, so
	 * chains are kept short and the lock changes node about every 10 ms instead of every 200 ms. A change of node costs
	 * the release (which hands the lease to the waiter next in line), that waiter's next poll (at most
	 * {@link LeaseAcquisition#NEXT_IN_LINE_POLL_NANOS} away) and its take: a couple of milliseconds on a server that flushes its log
	 * at every commit. (Before the hand-over, a change of node left the lock idle until the other node's next poll at
	 * the first back-off step, and 50 ms chains were the better trade.)
	 */
	private static final long CONTENDED_HAND_OFF_BUDGET_NANOS = TimeUnit.MILLISECONDS.toNanos(10);


	/**
	 * Resources another node wanted in the last second: an acquisition here had to wait for another owner, or a
	 * release found a waiter's announcement. Takes of these get the short hand-off budget.
	 */
	private final KnownRows contended = new KnownRows(TimeUnit.SECONDS.toNanos(1));

	private final JdbcLockSupport jdbc;

	private final Backoff backoff;

	private final LockRows rows;

	/** Every statement, in the configured dialect or the one detected from the first connection. */
	private final LockStatements sql;

	private final ReadWriteLeases readWrite;

	/** The waits for exclusive leases. */
	private final LeaseAcquisition acquisition;

	/** The data source as given (not unwrapped): the key a transaction manager may bind its connection to. */
	private final DataSource dataSource;

	/** Whether commit-time validation must write the row (Galera, multi-primary group replication). */
	private volatile boolean multiPrimary;

	/** Started on first use: {@link #renewals()}. */
	@Nullable
	private volatile ScheduledExecutorService renewals;

	/**
	 * Creates a provider.
	 * @param dataSource the data source holding the lock table; a {@code TransactionAwareDataSourceProxy} is
	 * unwrapped, so lock statements never join a Spring-managed transaction
	 * @param table the lock table
	 * @param statementTimeout upper bound of every statement's query timeout (JDBC resolution: whole seconds,
	 * at least one)
	 * @param initialBackoff first pause between attempts while waiting, positive
	 * @param maxBackoff longest pause between attempts while waiting, at least {@code initialBackoff}
	 */
	public LeaseLockProvider(DataSource dataSource, LockTable table, Duration statementTimeout, Duration initialBackoff,
			Duration maxBackoff) {
		this(dataSource, table, null, statementTimeout, initialBackoff, maxBackoff);
	}

	/**
	 * Creates a provider for a server family known in advance (for example {@code distributed-lock.dialect} behind a
	 * proxy that reports another version).
	 * @param dataSource the data source holding the lock table; a {@code TransactionAwareDataSourceProxy} is
	 * unwrapped, so lock statements never join a Spring-managed transaction
	 * @param table the lock table
	 * @param dialect the server family; {@link LockDialect#MARIADB} bounds every statement on the server instead of
	 * with the driver's query timeout (see the class comment), also those of the semaphores and idempotency records
	 * built on this provider; {@code null} to detect it from the first connection's metadata
	 * @param statementTimeout upper bound of every statement's query timeout (JDBC resolution: whole seconds,
	 * at least one)
	 * @param initialBackoff first pause between attempts while waiting, positive
	 * @param maxBackoff longest pause between attempts while waiting, at least {@code initialBackoff}
	 * @throws IllegalArgumentException unless {@code 0 < initialBackoff <= maxBackoff}
	 */
	public LeaseLockProvider(DataSource dataSource, LockTable table, @Nullable LockDialect dialect,
			Duration statementTimeout, Duration initialBackoff, Duration maxBackoff) {
		this.backoff = new Backoff(initialBackoff, maxBackoff);
		this.jdbc = new JdbcLockSupport(dataSource, statementTimeout);
		this.sql = LockStatements.of(table, dialect);
		this.rows = new LockRows(this.sql);
		this.readWrite = new ReadWriteLeases(this.jdbc, this.sql, this.backoff, this::renewals, this);
		this.acquisition = new LeaseAcquisition(this.jdbc, this.sql, this.rows, new WaitLoop(this.backoff, logger),
				this.contended, this::leased);
		this.dataSource = dataSource;
	}

	/**
	 * Whether the lock database is a multi-primary cluster (Galera, group replication in multi-primary mode), found by
	 * the start-up topology check. Commit-time validation then writes the lock row instead of only locking it: a
	 * locking read is not certified across the cluster, so a take on another node would still commit, while two
	 * writes to the same row cannot both certify. The write makes the row's lease one microsecond longer per
	 * validated commit. Thread-safe; set during configuration.
	 * @param multiPrimary {@code true} on a multi-primary cluster
	 */
	public void setMultiPrimary(boolean multiPrimary) {
		this.multiPrimary = multiPrimary;
	}

	/** Whether commit-time validation writes the lock row (see {@link #setMultiPrimary(boolean)}). */
	public boolean isMultiPrimary() {
		return this.multiPrimary;
	}

	/** The pauses between attempts. */
	Backoff backoff() {
		return this.backoff;
	}

	/** The statement commit-time validation runs in the application's transaction (tests). */
	String commitCheckSql() {
		return this.multiPrimary ? this.sql.leaseTouchRow : this.sql.leaseLockRow;
	}

	/** The statements commit-time validation runs in the application's transaction for a write lock, in order (tests). */
	java.util.List<String> readWriteCommitCheckSql() {
		return this.readWrite.commitCheckSql();
	}

	/**
	 * The key under which a transaction manager bound a connection of the lock's database to this thread: the data
	 * source as given, or the one behind its {@code TransactionAwareDataSourceProxy} (a
	 * {@code DataSourceTransactionManager} binds to that one); {@code null} if none is bound.
	 */
	@Nullable
	private DataSource transactionKey() {
		if (org.springframework.transaction.support.TransactionSynchronizationManager
			.getResource(this.dataSource) != null) {
			return this.dataSource;
		}
		DataSource target = JdbcLockSupport.unwrap(this.dataSource);
		return (target != this.dataSource && org.springframework.transaction.support.TransactionSynchronizationManager
			.getResource(target) != null) ? target : null;
	}

	/**
	 * Runs the commit check of a lease on the transaction's connection (see {@link #commitCheckSql()}).
	 * @return whether the row is still the lease's (and now locked, or written, by the transaction)
	 */
	boolean lockRowInTransaction(ExclusiveLease lock) {
		return inTransaction("check lock '" + lock.resource + "' at commit", (connection, timeout) -> {
			boolean write = this.multiPrimary;
			try (PreparedStatement ps = this.sql.prepareInTransaction(connection,
					write ? this.sql.leaseTouchRow : this.sql.leaseLockRow, timeout, true)) {
				ps.setBytes(1, LockRows.bytes(lock.resource));
				ps.setString(2, lock.ownerToken);
				if (write) {
					return ps.executeUpdate() == 1; // a real change: 1 with found rows or affected rows alike
				}
				try (java.sql.ResultSet rows = JdbcLockSupport.query(ps)) {
					return rows.next();
				}
			}
		});
	}

	/**
	 * Whether the current thread runs an active transaction on this provider's data source (a connection of it bound
	 * to the thread, not in autocommit). No SQL runs. Used by the commit checks of exclusive and write leases.
	 */
	boolean inTransactionOfItsDatabase() {
		DataSource key = transactionKey();
		Connection connection = (key != null) ? this.jdbc.boundTransactionalConnection(key) : null;
		if (connection == null) {
			return false; // no transaction on the lock's database, or one in autocommit
		}
		org.springframework.jdbc.datasource.DataSourceUtils.releaseConnection(connection, key);
		return true;
	}

	/**
	 * Runs a commit check on the connection of the current thread's transaction on this provider's data source.
	 * @param task what is done, for messages
	 * @param check the statements; given the connection and the statement timeout in seconds
	 * @return what the check returned
	 * @throws IllegalStateException if there is no such transaction
	 * @throws DataAccessException if a statement failed
	 */
	boolean inTransaction(String task, TransactionCheck check) {
		DataSource key = transactionKey();
		Connection connection = (key != null) ? this.jdbc.boundTransactionalConnection(key) : null;
		if (key == null || connection == null) {
			throw new IllegalStateException("No transaction on the lock data source for the commit check (" + task + ")");
		}
		try {
			return check.run(connection, this.jdbc.statementTimeoutSeconds());
		}
		catch (SQLException ex) {
			throw this.jdbc.translate(task, ex);
		}
		finally {
			org.springframework.jdbc.datasource.DataSourceUtils.releaseConnection(connection, key);
		}
	}

	/** Statements of a commit check, run on the application's transactional connection. */
	@FunctionalInterface
	interface TransactionCheck {

		/**
		 * @param connection the transaction's connection (not to be closed or committed)
		 * @param timeoutSeconds the statement timeout, in seconds
		 * @return whether the lock is still held
		 */
		boolean run(Connection connection, int timeoutSeconds) throws SQLException;

	}

	@Override
	public LockMode mode() {
		return LockMode.LEASE;
	}

	@Override
	public AcquireResult acquire(LockRequest request) throws InterruptedException {
		return this.acquisition.acquire(request);
	}


	/**
	 * Takes the read or write lock of a resource (see {@code ReadWriteLeases} for the algorithm and the writer
	 * preference policy); renewed like an exclusive lease when the request asks for it.
	 */
	@Override
	public AcquireResult acquire(LockRequest request, LockType type) throws InterruptedException {
		return this.readWrite.acquire(request, type);
	}





	/**
	 * The server family this provider's statements are for: the configured one, else the one detected from the first
	 * connection ({@code null} until then).
	 */
	@Nullable
	LockDialect dialect() {
		return this.sql.dialect();
	}

	/** A lock just taken: starts its renewal if the request asks for it. */
	private HeldLock leased(LockRequest request, String owner, long blockEnd, long sentAt, boolean contended) {
		ExclusiveLease lease = new ExclusiveLease(this, request.resource(), owner, blockEnd, request.leaseTime().toNanos(),
				request.renew(), request.minHoldMicros(), sentAt + request.leaseTime().toNanos(),
				contended ? CONTENDED_HAND_OFF_BUDGET_NANOS : HAND_OFF_BUDGET_NANOS);
		if (request.renew()) {
			lease.startRenewal(renewals());
		}
		return lease.current;
	}

	/**
	 * The shared renewal scheduler: two daemon threads for every held lock of this provider (and the permits of a
	 * {@link JdbcSemaphoreProvider} and the running claims of an {@link IdempotencyStore} built on it), started on
	 * first use; a {@link RenewalScheduler}, so that scheduling a renewal per acquisition wakes no thread.
	 */
	ScheduledExecutorService renewals() {
		ScheduledExecutorService executor = this.renewals;
		if (executor == null) {
			synchronized (this) {
				executor = this.renewals;
				if (executor == null) {
					AtomicInteger count = new AtomicInteger();
					executor = new RenewalScheduler(2, (task) -> {
						Thread thread = new Thread(task, "distributed-lock-renewal-" + count.incrementAndGet());
						thread.setDaemon(true);
						return thread;
					});
					this.renewals = executor;
				}
			}
		}
		return executor;
	}

	/** Stops renewing leases; held locks then expire at the end of their current lease. */
	@Override
	public void close() {
		ScheduledExecutorService executor = this.renewals;
		if (executor != null) {
			executor.shutdownNow();
		}
	}

	/** Releases in the database, and records in the lock whether a waiter on another node announced itself. */
	boolean release(ExclusiveLease lock, CallDeadline deadline) {
		return this.jdbc.execute("release lock '" + lock.resource + "'", deadline, (connection) -> {
			try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.leaseRelease,
					this.jdbc.statementTimeoutSeconds(), true)) {
				ps.setLong(1, lock.lastHandedOut());
				for (int i = 2; i <= 5; i++) {
					ps.setLong(i, lock.minHoldMicros);
				}
				ps.setBytes(6, LockRows.bytes(lock.resource));
				ps.setString(7, lock.ownerToken);
				int matched = ps.executeUpdate();
				JdbcLockSupport.commitIfNeeded(connection);
				if (matched == 1) {
					lock.announcedWaitNanos = this.rows.announcedWaitNanos(ps);
					if (lock.announcedWaitNanos > 0 || lock.announcedWaitNanos == LockRows.HANDED_OVER) {
						this.contended.add(lock.resource);
					}
				}
				return matched == 1;
			}
		});
	}

	boolean renew(ExclusiveLease lock, CallDeadline deadline) {
		return renewFor(lock, lock.leaseNanos, "renew", deadline);
	}

	/** A deadline for one renewal or release of a lease starting now ({@link JdbcLockSupport#callDeadline()}). */
	CallDeadline callDeadline() {
		return this.jdbc.callDeadline();
	}

	/**
	 * Runs {@link LockStatements#leaseRenew}: the lease ends {@code leaseNanos} from now on the server's clock. One
	 * short transaction of two statements: a locking read of the row by primary key
	 * ({@link LockStatements#leaseLockForRenewal}), which does any waiting (behind a commit check or a PESSIMISTIC
	 * holder of the resource), then the owner-checked update, which starts once the row is this transaction's and so
	 * judges the lease by the server's clock after the wait: the server fixes {@code UTC_TIMESTAMP()} when a statement
	 * starts, and a single statement that waited would extend a lease that ended meanwhile. Neither statement reads
	 * consistently (no read view, so MariaDB's snapshot isolation does not apply). Each statement's timeout and reply
	 * end by the deadline.
	 */
	private boolean renewFor(ExclusiveLease lock, long leaseNanos, String task, CallDeadline deadline) {
		byte[] key = LockRows.bytes(lock.resource);
		return this.jdbc.execute(task + " lock '" + lock.resource + "'", deadline,
				(connection) -> JdbcLockSupport.inShortTransaction(connection, (c) -> {
					try (PreparedStatement ps = this.sql.prepareBounded(c, this.sql.leaseLockForRenewal,
							timeoutWithin(deadline), false)) {
						ps.setBytes(1, key);
						JdbcLockSupport.query(ps).close();
					}
					deadline.boundReads(c); // what the wait for the row left of the deadline
					try (PreparedStatement ps = this.sql.prepareBounded(c, this.sql.leaseRenew, timeoutWithin(deadline),
							false)) {
						ps.setLong(1, TimeUnit.NANOSECONDS.toMicros(leaseNanos));
						ps.setBytes(2, key);
						ps.setString(3, lock.ownerToken);
						return ps.executeUpdate() == 1;
					}
				}));
	}

	/**
	 * A statement timeout that ends a reply margin before the deadline: the statement timeout, or less once part of
	 * the deadline is spent (at least 1 s).
	 */
	private int timeoutWithin(CallDeadline deadline) {
		return this.jdbc.queryTimeoutSeconds(
				deadline.remainingNanos() - TimeUnit.MILLISECONDS.toNanos(JdbcLockSupport.NETWORK_MARGIN_MILLIS));
	}

	/**
	 * Sets an explicit lease to end {@code leaseTime} from now on the server's clock (the renewal statement with the
	 * given lease): only while this hold is the lease's current one and the lease has not ended.
	 */
	boolean extend(ExclusiveLease.Hold hold, Duration leaseTime) {
		ExclusiveLease lock = hold.lease;
		if (lock.renewing) {
			throw new IllegalStateException("Lock '" + lock.resource + "' is renewed automatically while held; only a "
					+ "lock taken with a lease time of its own can be extended");
		}
		if (leaseTime == null || leaseTime.isNegative() || leaseTime.isZero()) {
			throw new IllegalArgumentException("The lease time must be positive, was " + leaseTime);
		}
		if (lock.current != hold || lock.lost || lock.released) {
			return false;
		}
		long sentAt = System.nanoTime();
		boolean extended = renewFor(lock, leaseTime.toNanos(), "extend", this.jdbc.callDeadline());
		if (extended) {
			// by this JVM's clock from before the statement was sent, so it errs early like the take
			lock.validUntilNanos = sentAt + leaseTime.toNanos();
		}
		return extended;
	}

}
