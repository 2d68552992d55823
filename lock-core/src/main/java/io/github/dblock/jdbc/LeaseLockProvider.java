package io.github.dblock.jdbc;

import io.github.dblock.spi.Backoff;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import io.github.dblock.LockMode;
import io.github.dblock.LockType;
import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockProvider;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.spi.ReadWriteLockProvider;
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
 * first, local successors the next ones, see {@link HeldLock#handOff()}) and an expiry of
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
 * statement; release is one owner-checked {@code UPDATE} that clears the owner and ends the lease (rows are
 * never deleted by a release, so the fencing token keeps increasing).
 * <p>
 * Renewal: when the caller gave no lease time of its own ({@link LockRequest#renew()}), a shared scheduler renews
 * the lease every third of the lease time with {@code UPDATE ... SET expires_at = UTC_TIMESTAMP(6) + lease WHERE
 * resource = ? AND owner_token = ? AND expires_at > UTC_TIMESTAMP(6)}. If that matches nothing (the lease had
 * expired, or another owner took it), or if the database stays unreachable until the lease must be presumed
 * expired by this JVM's clock, the lock is marked lost: {@link HeldLock#isLost()} turns true, the
 * {@link HeldLock#onLost(Runnable) callbacks} run, renewal stops, and release changes nothing in the database.
 * Renewal stops when the lock is released. Call {@link #close()} to stop the scheduler.
 * <p>
 * A minimum hold time keeps the lease until {@code acquired_at + minHoldTime} on release
 * ({@code expires_at = GREATEST(UTC_TIMESTAMP(6), acquired_at + INTERVAL ? MICROSECOND)}).
 * <p>
 * Every statement runs in autocommit on a connection taken directly from the data source, never in the
 * caller's transaction, so a lock is visible to other nodes as soon as it is taken and a business rollback
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

	/** Bound on immediate re-attempts after a lost race (insert collision, lease ending between statements). */
	private static final int MAX_RACES_PER_ATTEMPT = 4;

	/**
	 * Fencing tokens reserved by each take: the holder uses the first, and up to {@code TOKEN_BLOCK - 1} local
	 * successors the next ones (see {@link HeldLock#handOff()}); the take ({@link LockStatements#leaseTake}) writes it
	 * as the constant 1024.
	 */
	static final int TOKEN_BLOCK = 1024;

	/** How long one JVM may keep passing a lease between its own threads before releasing it in the database. */
	private static final long HAND_OFF_BUDGET_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

	/**
	 * The same while another node wants the lock too ({@link #contended}): its threads wait for the whole chain, so
	 * chains are kept short and the lock changes node about every 10 ms instead of every 200 ms. A change of node costs
	 * the release (which hands the lease to the waiter next in line), that waiter's next poll (at most
	 * {@link #NEXT_IN_LINE_POLL_NANOS} away) and its take: a couple of milliseconds on a server that flushes its log
	 * at every commit. (Before the hand-over, a change of node left the lock idle until the other node's next poll at
	 * the first back-off step, and 50 ms chains were the better trade.)
	 */
	private static final long CONTENDED_HAND_OFF_BUDGET_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

	/**
	 * How often, at most, the waiter next in line tries again while the lease it waits for is younger than
	 * {@link #HAND_OFF_BUDGET_NANOS} (a chain of another JVM that ends soon and hands the lease to it): each try is a
	 * take that matches nothing and a read, neither of which writes.
	 */
	private static final long NEXT_IN_LINE_POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(2);

	/**
	 * How long an announcement as next in line lasts at least; renewed by the waiter's attempts before it runs out.
	 * A waiter that dies while next in line holds the lock up after the release for the rest of it plus a second.
	 */
	private static final long NEXT_IN_LINE_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

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
	private boolean lockRowInTransaction(LeaseLock lock) {
		return inTransaction("check lock '" + lock.resource + "' at commit", (connection, timeout) -> {
			boolean write = this.multiPrimary;
			try (PreparedStatement ps = this.sql.prepareBounded(connection,
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
		// One owner token for the whole wait: if the connection breaks after a take committed, the next attempt
		// matches the row by this token and takes it again instead of waiting for its own unknown lease to end.
		String owner = UUID.randomUUID().toString();
		int outages = 0;
		boolean announced = false;
		boolean acquired = false;
		boolean lookedAgain = false;
		try {
			for (int attempt = 0;; attempt++) {
				Attempt result;
				try {
					if (attempt == 1) {
						this.contended.add(request.resource());
					}
					result = attemptOnce(request, owner, this.contended.contains(request.resource()));
				}
				catch (DataAccessException ex) {
					boolean slow = SqlErrors.isTooSlow(ex);
					if (!slow && !SqlErrors.isConnectionFailure(ex)) {
						throw ex;
					}
					if (request.remainingNanos() <= 0) {
						if (!SqlErrors.isUnreachable(ex)) {
							// the database was reached but did not answer in time (too slow, silent, or the connection broke
							// on the last attempt): not acquired, with the cause
							return AcquireResult.timedOut(null, ex);
						}
						throw ex;
					}
					if (outages++ == 0) {
						logger.warn("Lost the connection to the lock database while acquiring '" + request.resource()
								+ "', or it answered too slowly; retrying until the wait time ends: "
								+ ex.getMostSpecificCause());
					}
					result = Attempt.NONE;
				}
				if (result.lock != null) {
					acquired = true;
					return AcquireResult.acquired(result.lock);
				}
				long remaining = request.remainingNanos();
				if (remaining <= 0) {
					return AcquireResult.busy(result.holderDescription());
				}
				if (Thread.interrupted()) {
					throw new InterruptedException();
				}
				// A lease taken less than a hand-off budget ago may be a chain of this holder's JVM, which ends within the
				// budget (10 ms while contended) and then hands the lease to the waiter next in line: that one polls every
				// couple of milliseconds meanwhile, so that it is there when the chain ends; other waiters poll at the first
				// back-off step, and a longer hold gets the growing back-off.
				boolean young = result.heldForNanos < HAND_OFF_BUDGET_NANOS;
				long pause = this.backoff.pauseNanos(young ? 0 : attempt, result.leaseRemainingNanos, remaining);
				if (result.leaseRemainingNanos > 0 && pause < remaining) {
					boolean nextInLine = result.nextInLine(owner, pause + this.backoff.initial().toNanos())
							|| announceSuccessor(request, owner, pause);
					announced |= nextInLine;
					if (!nextInLine && !lookedAgain) {
						// the announcement found the row released since it was read (freed, or handed to this waiter),
						// or another waiter in line: look once more at once rather than sleep past a free lock
						lookedAgain = true;
						continue;
					}
					lookedAgain = false;
					if (nextInLine && young) {
						pause = Math.min(pause, NEXT_IN_LINE_POLL_NANOS / 2
								+ java.util.concurrent.ThreadLocalRandom.current().nextLong(NEXT_IN_LINE_POLL_NANOS / 2 + 1));
					}
				}
				TimeUnit.NANOSECONDS.sleep(pause);
			}
		}
		finally {
			if (announced && !acquired) {
				withdraw(request, owner);
			}
		}
	}

	/**
	 * Takes the read or write lock of a resource (see {@code ReadWriteLeases} for the algorithm and the writer
	 * preference policy); renewed like an exclusive lease when the request asks for it.
	 */
	@Override
	public AcquireResult acquire(LockRequest request, LockType type) throws InterruptedException {
		return this.readWrite.acquire(request, type);
	}

	/** @param contended whether another node wanted the lock lately (a take then gets the short hand-off budget) */
	private Attempt attemptOnce(LockRequest request, String owner, boolean contended) {
		long leaseMicros = TimeUnit.NANOSECONDS.toMicros(request.leaseTime().toNanos());
		return this.jdbc.execute("acquire lock '" + request.resource() + "'",
				this.jdbc.connectionTimeoutNanos(request.remainingNanos()), (connection) -> {
			int timeout = this.jdbc.queryTimeoutSeconds(request.remainingNanos());
			long replyDeadline = this.jdbc.replyDeadlineNanos(request.remainingNanos());
			Attempt last = Attempt.NONE;
			for (int race = 0; race < MAX_RACES_PER_ATTEMPT; race++) {
				long sentAt = System.nanoTime();
				Long token;
				try {
					this.jdbc.boundReadsUntil(connection, replyDeadline);
					token = take(connection, request, owner, leaseMicros, timeout);
				}
				catch (SQLException ex) {
					if (SqlErrors.isBusy(ex)) {
						// the row is locked by a PESSIMISTIC holder's transaction for longer than this caller waits
						// (query timeout, MariaDB's max_statement_time, or the server's lock wait timeout): busy, not
						// a fault to retry
						return new Attempt(null, "an open transaction holding the row lock", 0);
					}
					throw ex;
				}
				if (token != null) {
					return new Attempt(leased(request, owner, token, sentAt, contended), null, 0);
				}
				this.jdbc.boundReadsUntil(connection, replyDeadline);
				LockRows.Peek peek = this.rows.peek(connection, request.resource(), timeout);
				last = (peek != null) ? new Attempt(null, peek.holderDescription(), peek.leaseRemainingNanos(),
						peek.heldForNanos(), peek) : null;
				if (last != null && last.leaseRemainingNanos > 0) {
					return last;
				}
				if (last == null) {
					this.jdbc.boundReadsUntil(connection, replyDeadline);
					token = insert(connection, request, owner, leaseMicros, timeout);
					if (token != null) {
						return new Attempt(leased(request, owner, token, sentAt, contended), null, 0);
					}
					last = Attempt.NONE;
				}
				// lost a race (another node inserted first, or the lease ended between statements): look again
			}
			return last;
		});
	}

	/**
	 * Makes this waiter the next in line unless another live waiter is (see {@link LockRows#announceSuccessor}), for
	 * at least {@link #NEXT_IN_LINE_NANOS} and past its next attempt after {@code pauseNanos} (plus the initial
	 * back-off as a margin for waking up and reaching the server): the holder's release then hands the lease straight
	 * to it. Only a hint: a failure is logged and the wait goes on.
	 * @return whether this waiter is next in line
	 */
	private boolean announceSuccessor(LockRequest request, String owner, long pauseNanos) {
		try {
			return this.jdbc.execute("announce a waiter for lock '" + request.resource() + "'",
					(connection) -> this.rows.announceSuccessor(connection, request.resource(), owner,
							Math.max(NEXT_IN_LINE_NANOS, pauseNanos + 2 * this.backoff.initial().toNanos()),
							this.jdbc.queryTimeoutSeconds(request.remainingNanos())));
		}
		catch (DataAccessException ex) {
			logger.debug("Could not announce a waiter for lock '" + request.resource() + "'", ex);
			return false;
		}
	}

	/**
	 * A waiter that was next in line gives up: a lease handed to it meanwhile is freed at once, instead of holding
	 * the lock up until it runs out. Runs on a background thread, so that the caller's wait time is not overrun by a
	 * clean-up (a slow pool or a silent connection); a failure is logged, and the lease or announcement then runs out
	 * on its own within about a second.
	 */
	@SuppressWarnings("NullAway") // a lambda returns null for ConnectionWork<T extends @Nullable Object>: see pom.xml
	private void withdraw(LockRequest request, String owner) {
		Runnable withdrawal = () -> {
			try {
				this.jdbc.execute("withdraw a waiter for lock '" + request.resource() + "'", (connection) -> {
					this.rows.withdraw(connection, request.resource(), owner, this.jdbc.statementTimeoutSeconds());
					return null;
				});
			}
			catch (DataAccessException ex) {
				logger.warn("Could not withdraw a waiter for lock '" + request.resource() + "'; a lease handed to it "
						+ "ends within about a second: " + ex.getMostSpecificCause());
			}
		};
		try {
			RenewableLease.BACKGROUND.execute(withdrawal);
		}
		catch (java.util.concurrent.RejectedExecutionException ex) {
			withdrawal.run();
		}
	}

	@Nullable
	private Long take(Connection connection, LockRequest request, String owner, long leaseMicros, int timeout)
			throws SQLException {
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.leaseTake, timeout, true)) {
			ps.setString(1, owner);
			ps.setString(2, request.holder());
			ps.setLong(3, leaseMicros);
			ps.setString(4, owner);
			ps.setString(5, owner);
			ps.setBytes(6, LockRows.bytes(request.resource()));
			ps.setString(7, owner);
			int matched = ps.executeUpdate();
			JdbcLockSupport.commitIfNeeded(connection);
			return (matched == 1) ? this.rows.fencingToken(connection, ps, request.resource(), owner, timeout) : null;
		}
	}

	@Nullable
	private Long insert(Connection connection, LockRequest request, String owner, long leaseMicros, int timeout)
			throws SQLException {
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.leaseInsert, timeout, true)) {
			ps.setBytes(1, LockRows.bytes(request.resource()));
			ps.setString(2, owner);
			ps.setString(3, request.holder());
			ps.setLong(4, leaseMicros);
			ps.executeUpdate();
			JdbcLockSupport.commitIfNeeded(connection);
			return this.rows.fencingToken(connection, ps, request.resource(), owner, timeout);
		}
		catch (SQLException ex) {
			if (JdbcLockSupport.lostInsertRace(connection, ex)) {
				return null;
			}
			throw ex;
		}
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
		LeaseLock lease = new LeaseLock(request.resource(), owner, blockEnd, request.leaseTime().toNanos(),
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
	private boolean release(LeaseLock lock) {
		return this.jdbc.execute("release lock '" + lock.resource + "'", (connection) -> {
			try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.leaseRelease,
					this.jdbc.statementTimeoutSeconds(), true)) {
				for (int i = 1; i <= 4; i++) {
					ps.setLong(i, lock.minHoldMicros);
				}
				ps.setBytes(5, LockRows.bytes(lock.resource));
				ps.setString(6, lock.ownerToken);
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

	private boolean renew(LeaseLock lock) {
		return this.jdbc.execute("renew lock '" + lock.resource + "'", (connection) -> {
			try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.leaseRenew,
					this.jdbc.statementTimeoutSeconds(), true)) {
				ps.setLong(1, TimeUnit.NANOSECONDS.toMicros(lock.leaseNanos));
				ps.setBytes(2, LockRows.bytes(lock.resource));
				ps.setString(3, lock.ownerToken);
				int matched = ps.executeUpdate();
				JdbcLockSupport.commitIfNeeded(connection);
				return matched == 1;
			}
		});
	}

	/**
	 * Sets an explicit lease to end {@code leaseTime} from now on the server's clock (the renewal statement with the
	 * given lease): only while this hold is the lease's current one and the lease has not ended.
	 */
	private boolean extend(Hold hold, Duration leaseTime) {
		LeaseLock lock = hold.lease;
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
		boolean extended = this.jdbc.execute("extend lock '" + lock.resource + "'", (connection) -> {
			try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.leaseRenew,
					this.jdbc.statementTimeoutSeconds(), true)) {
				ps.setLong(1, TimeUnit.NANOSECONDS.toMicros(leaseTime.toNanos()));
				ps.setBytes(2, LockRows.bytes(lock.resource));
				ps.setString(3, lock.ownerToken);
				int matched = ps.executeUpdate();
				JdbcLockSupport.commitIfNeeded(connection);
				return matched == 1;
			}
		});
		if (extended) {
			// by this JVM's clock from before the statement was sent, so it errs early like the take
			lock.validUntilNanos = sentAt + leaseTime.toNanos();
		}
		return extended;
	}

	/** The result of one attempt: a lock, or what was learned about the holder. */
	private record Attempt(@Nullable HeldLock lock, @Nullable String holderDescription, long leaseRemainingNanos,
			long heldForNanos, LockRows.@Nullable Peek peek) {

		static final Attempt NONE = new Attempt(null, null, 0, Long.MAX_VALUE, null);

		Attempt(@Nullable HeldLock lock, @Nullable String holderDescription, long leaseRemainingNanos) {
			this(lock, holderDescription, leaseRemainingNanos, Long.MAX_VALUE, null);
		}

		/** Whether the row, as read by this attempt, has the given owner next in line for at least {@code nanos}. */
		boolean nextInLine(String owner, long nanos) {
			return this.peek != null && this.peek.nextInLine(owner, nanos);
		}

	}

	/**
	 * A lease in the database, held by one owner token: renewed on the shared scheduler, lost once renewal finds it
	 * gone or cannot reach the database in time (see {@link RenewableLease}). Within this JVM it passes from thread
	 * to thread through {@link Hold}s, each with its own fencing token from the block reserved by the take, while the
	 * database row stays unchanged.
	 */
	private final class LeaseLock extends RenewableLease {

		/** The last token of the block the take reserved (the row's fencing token). */
		private final long blockEnd;

		private final boolean renewing;

		private final long minHoldMicros;

		private final long takenAtNanos = System.nanoTime();

		/** How long this JVM may pass the lease between its own threads (shorter when it had to wait for it). */
		private final long handOffBudgetNanos;

		/** Whether passing the lease on stopped because this JVM had kept it for the whole hand-off budget. */
		private volatile boolean budgetSpent;

		/**
		 * Read by the release: nanoseconds until the next attempt a waiter on another node announced, 0 if none, -1 if
		 * the driver cannot tell.
		 */
		private volatile long announcedWaitNanos;

		/** The hold that has the lease now; the only one whose lost-callbacks run. */
		private volatile Hold current;

		LeaseLock(String resource, String ownerToken, long blockEnd, long leaseNanos, boolean renewing,
				long minHoldMicros, long validUntilNanos, long handOffBudgetNanos) {
			super(resource, ownerToken, leaseNanos, validUntilNanos);
			this.handOffBudgetNanos = handOffBudgetNanos;
			this.blockEnd = blockEnd;
			this.renewing = renewing;
			this.minHoldMicros = minHoldMicros;
			this.current = new Hold(this, blockEnd - TOKEN_BLOCK + 1);
		}

		@Override
		boolean renewInDatabase() {
			return LeaseLockProvider.this.renew(this);
		}

		@Override
		boolean releaseInDatabase() {
			return LeaseLockProvider.this.release(this);
		}

		@Override
		void onLost(String reason) {
			Hold hold = this.current;
			logger.warn("Lost lock '" + this.resource + "' (fencing token " + hold.fencingToken + "): " + reason);
			hold.lostCallbacks.runAll(this.resource);
		}

		/** The next local owner's hold, or {@code null} when the lease must go back to the database now. */
		@Nullable
		synchronized Hold handOff(Hold from) {
			if (from != this.current || this.lost || this.released || !this.renewing || this.minHoldMicros > 0
					|| from.fencingToken >= this.blockEnd || System.nanoTime() - this.validUntilNanos >= 0) {
				return null;
			}
			if (System.nanoTime() - this.takenAtNanos > this.handOffBudgetNanos) {
				this.budgetSpent = true;
				return null;
			}
			Hold next = new Hold(this, from.fencingToken + 1);
			this.current = next;
			return next;
		}

	}

	/** One owner's hold of a {@link LeaseLock}: the first taker's, or a local successor's after a hand-off. */
	private final class Hold implements io.github.dblock.spi.TransactionCheckedLock, io.github.dblock.spi.HandOffLock {

		private final LeaseLock lease;

		private final long fencingToken;

		private final RenewableLease.LostCallbacks lostCallbacks = new RenewableLease.LostCallbacks();

		Hold(LeaseLock lease, long fencingToken) {
			this.lease = lease;
			this.fencingToken = fencingToken;
		}

		@Override
		public long fencingToken() {
			return this.fencingToken;
		}

		@Override
		public String ownerToken() {
			return this.lease.ownerToken;
		}

		@Override
		public long validUntilNanos() {
			return this.lease.validUntilNanos;
		}

		@Override
		public boolean isLost() {
			return this.lease.lost;
		}

		@Override
		public void onLost(Runnable callback) {
			this.lostCallbacks.add(callback, this.lease.lost && this.lease.current == this);
		}

		@Override
		public @Nullable HeldLock handOff() {
			Hold next = this.lease.handOff(this);
			if (next != null) {
				this.lostCallbacks.clear(); // this owner is done; its listeners must not hear of a later loss
			}
			return next;
		}

		@Override
		public long handOffCourtesyNanos() {
			Backoff backoff = LeaseLockProvider.this.backoff;
			long announced = this.lease.announcedWaitNanos;
			if (announced == LockRows.HANDED_OVER) {
				return 0; // the lease went straight to the waiter next in line: local threads cannot take it anyway
			}
			if (announced < 0) {
				// this driver cannot say whether anybody waits: after a spent time budget assume a waiter polling at the
				// longest back-off (a used-up token block alone just takes the row again)
				return this.lease.budgetSpent ? backoff.max().toNanos() : 0;
			}
			// until the attempt a waiter on another node announced (never longer than its longest pause and margin);
			// nobody announced: no pause, the next local thread takes the row again at once
			return Math.min(announced, backoff.max().toNanos() + backoff.initial().toNanos());
		}

		@Override
		public boolean inTransactionOfItsDatabase() {
			return LeaseLockProvider.this.inTransactionOfItsDatabase();
		}

		/**
		 * This hold's lease must still be the row's (owner token, lease not ended) and still this hold's in the JVM: a
		 * lease passed on to a local successor ({@link #handOff()}) keeps its owner token in the row, so a hold that
		 * handed it off, or whose lease is known lost, fails without a statement.
		 */
		@Override
		public boolean lockRowInTransaction() {
			if (this.lease.current != this || this.lease.lost || this.lease.released) {
				return false;
			}
			return LeaseLockProvider.this.lockRowInTransaction(this.lease) && this.lease.current == this;
		}

		@Override
		public boolean canServe(LockRequest request) {
			return request.renew() && request.leaseTime().toNanos() == this.lease.leaseNanos
					&& request.minHoldMicros() == 0 && request.resource().equals(this.lease.resource);
		}

		@Override
		public boolean extend(Duration leaseTime) {
			return LeaseLockProvider.this.extend(this, leaseTime);
		}

		@Override
		public boolean release() {
			return this.lease.release();
		}

	}

}
