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
 * The {@link LockMode#LEASE} provider: a row per resource in the lock table naming its owner, lease end and fencing
 * token on the database server's clock, taken by an owner-checked {@code UPDATE} by primary key in autocommit on a
 * connection of its own, never in the caller's transaction (a business rollback cannot undo a lock). Read/write locks
 * ({@link LockType#READ}, {@link LockType#WRITE}) are leases too, in tables of their own ({@code ReadWriteLeases}).
 * <p>
 * An uncontended take of a known resource costs one statement, a release one. Without a lease time of the caller's
 * own ({@link LockRequest#renew()}) a shared scheduler renews the lease every third of it; a renewal that finds the
 * lease ended, or a database unreachable until this JVM's clock presumes it ended, marks the lock lost
 * ({@link HeldLock#isLost()}, {@link HeldLock#onLost(Runnable)}). Waits back off with jitter, never past the holder's
 * lease end nor the caller's deadline; a waiter on another node puts itself next in line, and a release hands the
 * lease straight to it. Broken connections are retried until the deadline; other errors surface as
 * {@link org.springframework.dao.DataAccessException}.
 * <p>
 * The statements and why they are shaped so: docs/DESIGN.md, "The LEASE algorithm" and "The LEASE lifecycle".
 * Thread-safe; {@link #close()} stops the renewal scheduler.
 */
public class LeaseLockProvider implements ReadWriteLockProvider, AutoCloseable {

	private static final Log logger = LogFactory.getLog(LeaseLockProvider.class);


	/**
	 * Fencing tokens reserved by each take: the holder uses the first, and up to {@code TOKEN_BLOCK - 1} local
	 * successors the next ones (see {@link io.github.dblock.spi.HandOffLock#handOff()}); the take ({@link LeaseStatements#leaseTake}) writes it
	 * as the constant 1024.
	 */
	static final int TOKEN_BLOCK = 1024;

	/**
	 * {@link ExclusiveLease#HAND_OFF_BUDGET_NANOS} while another node wants the lock too ({@link #contended}): its
	 * threads wait for the whole chain, so chains are kept short and the lock changes node about every 10 ms instead of
	 * every 200 ms. A change of node costs the release (which hands the lease to the waiter next in line), that
	 * waiter's next poll (at most {@link LeaseAcquisition#NEXT_IN_LINE_POLL_NANOS} away) and its take: a couple of
	 * milliseconds on a server that flushes its log at every commit.
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
		return this.multiPrimary ? this.sql.lease.leaseTouchRow : this.sql.lease.leaseLockRow;
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
					write ? this.sql.lease.leaseTouchRow : this.sql.lease.leaseLockRow, timeout, true)) {
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
				contended ? CONTENDED_HAND_OFF_BUDGET_NANOS : ExclusiveLease.HAND_OFF_BUDGET_NANOS);
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
			try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.lease.leaseRelease,
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
	 * Runs {@link LeaseStatements#leaseRenew}: the lease ends {@code leaseNanos} from now on the server's clock. One
	 * short transaction of two statements: a locking read of the row by primary key
	 * ({@link LeaseStatements#leaseLockForRenewal}), which does any waiting (behind a commit check or a PESSIMISTIC
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
					try (PreparedStatement ps = this.sql.prepareBounded(c, this.sql.lease.leaseLockForRenewal,
							timeoutWithin(deadline), false)) {
						ps.setBytes(1, key);
						JdbcLockSupport.query(ps).close();
					}
					deadline.boundReads(c); // what the wait for the row left of the deadline
					try (PreparedStatement ps = this.sql.prepareBounded(c, this.sql.lease.leaseRenew, timeoutWithin(deadline),
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
