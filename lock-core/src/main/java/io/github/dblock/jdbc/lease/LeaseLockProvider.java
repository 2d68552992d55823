package io.github.dblock.jdbc.lease;

import io.github.dblock.jdbc.sql.JdbcLockSupport;
import io.github.dblock.jdbc.sql.KnownRows;
import io.github.dblock.jdbc.sql.LockDialect;
import io.github.dblock.jdbc.sql.LockRows;
import io.github.dblock.jdbc.sql.LockStatements;
import io.github.dblock.jdbc.sql.LockTable;
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
import io.github.dblock.wait.Backoff;
import io.github.dblock.wait.WaitLoop;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * The {@link LockMode#LEASE} provider: a row per resource in the lock table names its owner, lease end and fencing
 * token, on the server's UTC clock; it is taken and released in autocommit on a connection of its own, never in the
 * caller's transaction. Read/write locks ({@link LockType}) are leases too, in tables of their own. A lease without a
 * lease time of the caller's own is renewed every third of it; a renewal that finds it ended marks the lock lost
 * ({@link HeldLock#isLost()}). Broken connections are retried until the deadline; other errors surface as
 * {@link org.springframework.dao.DataAccessException}. Thread-safe; {@link #close()} stops the renewal scheduler.
 * See docs/DESIGN.md, "The LEASE algorithm" and "The LEASE lifecycle".
 */
public class LeaseLockProvider implements ReadWriteLockProvider, AutoCloseable {

	private static final Log logger = LogFactory.getLog(LeaseLockProvider.class);

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

	/** The application's transaction on the lock's data source, for commit checks. */
	private final ApplicationTransactions transactions;

	/** The statements on leases already taken. */
	private final HeldExclusiveLeases held;

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
	 * with the driver's query timeout, also those of the semaphores and idempotency records
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
		this.transactions = new ApplicationTransactions(this.jdbc, dataSource);
		this.held = new HeldExclusiveLeases(this.jdbc, this.sql, this.rows, this.backoff, this.transactions,
				this.contended);
		this.readWrite = new ReadWriteLeases(this.jdbc, this.sql, this.backoff, this::renewals, this.transactions);
		this.acquisition = new LeaseAcquisition(this.jdbc, this.sql, this.rows, new WaitLoop(this.backoff, logger),
				this.contended, this::leased);
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
		this.transactions.setMultiPrimary(multiPrimary);
	}

	/** Whether commit-time validation writes the lock row (see {@link #setMultiPrimary(boolean)}). */
	public boolean isMultiPrimary() {
		return this.transactions.isMultiPrimary();
	}

	/** The statement commit-time validation runs in the application's transaction (tests). */
	String commitCheckSql() {
		return this.transactions.isMultiPrimary() ? this.sql.lease.leaseTouchRow : this.sql.lease.leaseLockRow;
	}

	/** The statements commit-time validation runs in the application's transaction for a write lock, in order (tests). */
	java.util.List<String> readWriteCommitCheckSql() {
		return this.readWrite.commitCheckSql();
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
		ExclusiveLease lease = new ExclusiveLease(this.held, request.resource(), owner, blockEnd, request.leaseTime().toNanos(),
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

}
