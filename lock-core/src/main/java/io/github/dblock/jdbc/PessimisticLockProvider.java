package io.github.dblock.jdbc;

import io.github.dblock.spi.Backoff;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import javax.sql.DataSource;

import io.github.dblock.LockLimitExceededException;
import io.github.dblock.LockMode;
import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockProvider;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.spi.TransactionalLockProvider;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.dao.DataAccessException;
import org.springframework.dao.TransientDataAccessResourceException;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The {@link LockMode#PESSIMISTIC} provider: an InnoDB exclusive row lock on the resource's row, held by a
 * transaction.
 * <p>
 * Acquisition is a locking read by primary key ({@code SELECT ... FOR UPDATE}) that waits in the server's lock queue
 * for the row and locks it until the transaction ends, then (with {@link Fencing#DURABLE}) an {@code UPDATE ... WHERE
 * resource = ? AND expires_at <= UTC_TIMESTAMP(6)} that records the owner and sets the fencing token to the server
 * clock read after the grant (returned in the same round trip through {@code LAST_INSERT_ID(expr)}; see
 * {@link Fencing} for the guarantee). The lease condition makes the mode exclusive with {@link LockMode#LEASE}
 * holders of the same resource; the expiry it writes is "now" plus the minimum hold time (usually zero), so once this
 * transaction ends the row is free for every mode, or after the minimum hold time.
 * <p>
 * The wait is bounded by the server: MariaDB runs the statement as
 * {@code SET STATEMENT innodb_lock_wait_timeout = n FOR UPDATE ...}; MySQL uses {@code FOR UPDATE NOWAIT} for a
 * zero wait and otherwise sets the session's {@code innodb_lock_wait_timeout} around the statement (resetting it
 * to the server default afterwards). The timeout is the wait time rounded up to whole seconds. Waiting for a
 * holder's transaction never polls; a row held under a lease (a LEASE-mode owner, or a PESSIMISTIC holder's minimum
 * hold time) is retried with backoff on a connection of its own, and a missing row is polled for while it is
 * created (see below). Inside a transaction a row held under a lease is reported busy at once: the locking
 * statement that found it leased still locked the row until that transaction ends, which would keep a LEASE holder
 * from renewing or releasing it. ({@code LockTemplate.execute} outside any transaction waits nevertheless, by making
 * each attempt a transaction of its own.)
 * <p>
 * Which transaction holds the lock:
 * <ul>
 * <li>If a Spring-managed transaction is active on the lock data source (its connection bound to the thread,
 * autocommit off), the lock joins it and ends when it commits or rolls back; no connection is added.</li>
 * <li>Otherwise the provider takes a connection of its own, runs {@code START TRANSACTION} and keeps both until
 * release ({@code COMMIT}). At most {@code maxConnections} such locks may be held or awaited per JVM; a caller
 * beyond that waits for a slot within its wait time (a fair-less {@link Semaphore}), and gets
 * {@link LockLimitExceededException} when none freed in time (at once with a wait time of zero).</li>
 * </ul>
 * A missing row is created as a free row by a separate autocommit statement, never inside the locking
 * transaction, and the locking statement does not run again until the row exists: an {@code UPDATE} of a missing
 * key holds a gap lock that blocks every node's insert of it (concurrent creators get a duplicate-key error and
 * carry on). Inside a caller's transaction the row is made to exist (as far as this JVM knows: a hint kept for a
 * minute) before the locking statement, so that normally no gap lock is left in that transaction; a row deleted
 * meanwhile ends the attempt with a transient error. Creating a row commits it also on a connection whose
 * autocommit is off. If the holder's connection drops or its process dies, the server ends the transaction and the
 * lock is free at once; the holder learns it at release, which then reports the lock lost. A waiter on a connection
 * of its own whose connection breaks (server restart, killed connection) tries again on a new connection until its
 * deadline; a waiter inside the caller's transaction cannot, since that transaction is gone. Thread-safe.
 */
public class PessimisticLockProvider implements TransactionalLockProvider {

	private static final Log logger = LogFactory.getLog(PessimisticLockProvider.class);

	/** ER_LOCK_WAIT_TIMEOUT (MySQL and MariaDB, also MariaDB's NOWAIT) and ER_LOCK_NOWAIT (MySQL). */
	private static final int LOCK_WAIT_TIMEOUT = 1205;

	private static final int LOCK_NOWAIT = 3572;

	/** Quick re-attempts after a row lock that may belong to another statement rather than a holder. */
	private static final int MAX_LOCKED_RETRIES = 3;

	/**
	 * How far the stored token may be ahead of the server clock for an acquisition to wait, holding the row, until
	 * the clock passes it (see {@link #awaitClockPast}). A LEASE take leaves the token up to about a millisecond
	 * ahead; more means that the server clock stepped back, and the acquisition then writes the stored token + 1.
	 */
	static final long MAX_CLOCK_CATCH_UP_MICROS = 100_000;

	/** Bound on immediate re-attempts of a locking statement that met a free row with a stale clock. */
	private static final int MAX_CREATION_RACES = 5;

	/**
	 * How long a caller with a shorter wait time keeps trying to create a missing row while other nodes' locking
	 * statements hold the gap where it goes (see {@link #createRow}).
	 */
	private static final long CREATION_PATIENCE_NANOS = TimeUnit.MILLISECONDS.toNanos(250);

	private final DataSource dataSource;

	private final JdbcLockSupport jdbc;

	private final LockRows rows;

	private final LockDialect dialect;

	private final Backoff backoff;

	private final TransactionTemplate transactions;

	private final int maxConnections;

	private final Semaphore connections;

	/**
	 * The durable write, run once the row is ours: records the owner and sets the token to the server clock when that
	 * exceeds the stored token (else leaves it, see {@link #writeToken}).
	 */
	private final String lockSql;

	/**
	 * The locking read (both settings): stored token, whether free and the server clock in µs, both as of the
	 * statement's start; then the µs from the statement's start to the evaluation of the row ({@code SYSDATE(6) -
	 * NOW(6)}) and {@code expires_at} in µs, from which {@link Read#clockAfterGrant} derives a clock read after the
	 * grant.
	 */
	private final String clockReadSql;

	/** Sets the token to {@code GREATEST(fencing_token + ?, <server µs>)} on a row this transaction holds. */
	private final String retokenSql;

	private volatile Fencing fencing = Fencing.DURABLE;

	private final KnownRows knownRows = new KnownRows();

	/** The holder's session idle bound in whole seconds ({@code wait_timeout}), 0 for the server's own. */
	private volatile int idleTimeoutSeconds;

	/**
	 * Creates a provider.
	 * @param dataSource the data source holding the lock table
	 * @param table the lock table
	 * @param dialect how to bound a lock wait on this server
	 * @param transactionManager the transaction manager of the lock data source, for
	 * {@link #inTransaction(Supplier)}
	 * @param statementTimeout added to the lock wait for each statement's query timeout (whole seconds, at least 1)
	 * @param backoff pauses while a LEASE-mode owner holds the row
	 * @param maxConnections how many locks this JVM may hold or await on connections of their own, at least 1
	 */
	public PessimisticLockProvider(DataSource dataSource, LockTable table, LockDialect dialect,
			PlatformTransactionManager transactionManager, Duration statementTimeout, Backoff backoff, int maxConnections) {
		if (maxConnections < 1) {
			throw new IllegalArgumentException("maxConnections must be at least 1, was " + maxConnections);
		}
		this.dataSource = dataSource;
		this.jdbc = new JdbcLockSupport(dataSource, statementTimeout);
		this.rows = new LockRows(table);
		this.dialect = dialect;
		this.backoff = backoff;
		this.transactions = new TransactionTemplate(transactionManager);
		this.maxConnections = maxConnections;
		this.connections = new Semaphore(maxConnections);
		String t = table.quoted();
		this.lockSql = "UPDATE " + t + " SET owner_token = ?, holder = ?, fencing_token = LAST_INSERT_ID(GREATEST("
				+ "fencing_token, " + LockRows.SERVER_MICROS + ")), acquired_at = UTC_TIMESTAMP(6),"
				+ " expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND WHERE resource = ? AND " + LockRows.FREE;
		this.clockReadSql = "SELECT fencing_token, " + LockRows.FREE + ", " + LockRows.SERVER_MICROS
				+ ", TIMESTAMPDIFF(MICROSECOND, NOW(6), SYSDATE(6)),"
				+ " TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', expires_at) FROM " + t + " WHERE resource = ? FOR UPDATE";
		this.retokenSql = "UPDATE " + t + " SET fencing_token = LAST_INSERT_ID(GREATEST(fencing_token + ?, "
				+ LockRows.SERVER_MICROS + ")) WHERE resource = ?";
	}

	@Override
	public LockMode mode() {
		return LockMode.PESSIMISTIC;
	}

	/**
	 * Bounds how long the server keeps a holder's transaction, and so the row lock, while the holder's session sends
	 * nothing: a holder that hung, or whose process died or network went silent without the connection closing (the
	 * server otherwise notices only after its {@code wait_timeout}, 8 hours by default, or a TCP keepalive). The
	 * holder's session gets {@code SET SESSION wait_timeout = n} (MySQL and MariaDB) for as long as it holds the lock;
	 * once it has been silent for n seconds the server closes it, rolls its transaction back and grants the row to the
	 * next waiter; the holder's release then throws {@code LockLostException}. The trade-off: a holder whose work
	 * sends no statement on that session for longer (for a lock on a connection of its own: the whole hold; for a lock
	 * that joined a transaction: the longest pause between the transaction's statements) loses the lock although it is
	 * alive, and the session's previous value is restored at the release, which costs a round trip at acquisition and
	 * one at release. Call during configuration.
	 * @param idleTimeout the bound, rounded up to whole seconds; {@code null} or zero for the server's own
	 * {@code wait_timeout} (no statement, no cost)
	 * @throws IllegalArgumentException if negative or longer than a year (the server's maximum)
	 */
	public void setIdleTimeout(@Nullable Duration idleTimeout) {
		if (idleTimeout == null || idleTimeout.isZero()) {
			this.idleTimeoutSeconds = 0;
			return;
		}
		if (idleTimeout.isNegative() || idleTimeout.compareTo(Duration.ofDays(365)) > 0) {
			throw new IllegalArgumentException("The PESSIMISTIC idle timeout must be between 1 s and 365 days, was "
					+ idleTimeout);
		}
		this.idleTimeoutSeconds = (int) ((idleTimeout.toNanos() + TimeUnit.SECONDS.toNanos(1) - 1)
				/ TimeUnit.SECONDS.toNanos(1));
	}

	/**
	 * Chooses how fencing tokens are handed out (see {@link Fencing}). Call during configuration.
	 * @param fencing the setting; {@code null} for {@link Fencing#DURABLE}
	 */
	public void setFencing(@Nullable Fencing fencing) {
		this.fencing = (fencing != null) ? fencing : Fencing.DURABLE;
	}

	/** The fencing setting in use, never {@code null}. */
	public Fencing fencing() {
		return this.fencing;
	}

	/** Applies the idle bound to a holder's session (see {@link #setIdleTimeout}); no statement when unset. */
	private void boundIdleSession(Connection connection) throws SQLException {
		int seconds = this.idleTimeoutSeconds;
		if (seconds > 0) {
			try (PreparedStatement ps = connection.prepareStatement("SET SESSION wait_timeout = ?")) {
				ps.setInt(1, seconds);
				ps.execute();
			}
		}
	}

	/** Gives a holder's session the server's own {@code wait_timeout} back; quiet, the connection may be broken. */
	private void restoreIdleSession(@Nullable Connection connection) {
		if (connection == null || this.idleTimeoutSeconds == 0) {
			return;
		}
		try {
			execute(connection, "SET SESSION wait_timeout = @@GLOBAL.wait_timeout");
		}
		catch (SQLException ex) {
			logger.debug("Could not restore wait_timeout on a lock connection", ex);
		}
	}

	/**
	 * Applies the idle bound to the caller's transaction's session once it holds the lock, restored when the
	 * transaction completes (its connection is still bound then).
	 */
	private void boundIdleSessionOfTransaction(Connection connection) {
		if (this.idleTimeoutSeconds == 0) {
			return;
		}
		try {
			boundIdleSession(connection);
		}
		catch (SQLException ex) {
			throw this.jdbc.translate("bound the idle time of the lock's transaction", ex);
		}
		org.springframework.transaction.support.TransactionSynchronizationManager.registerSynchronization(
				new org.springframework.transaction.support.TransactionSynchronization() {
					@Override
					public void afterCompletion(int status) {
						restoreIdleSession(connection);
					}
				});
	}

	/** How many locks this provider may hold or await on connections of their own at once. */
	public int getMaxConnections() {
		return this.maxConnections;
	}

	/** How many locks of this provider currently hold or await a connection of their own. */
	public int connectionsInUse() {
		return this.maxConnections - this.connections.availablePermits();
	}

	/**
	 * {@code true} inside a Spring transaction on the lock data source (the waiter uses the transaction's connection,
	 * not one of the cap, and InnoDB sees its waits, so deadlocks between transactions are detected), and otherwise
	 * while more than half of {@code maxConnections} is free: a local thread waiting in the server behind a local
	 * holder costs a connection, and the other half stays for holders of other resources. Best effort: waiters of
	 * different resources may check at the same moment.
	 */
	@Override
	public boolean canWaitInDatabase() {
		if (this.connections.availablePermits() * 2 > this.maxConnections) {
			return true;
		}
		Connection transactional = boundTransactionalConnection();
		if (transactional == null) {
			return false;
		}
		org.springframework.jdbc.datasource.DataSourceUtils.releaseConnection(transactional, this.dataSource);
		return true;
	}

	@Override
	public <T> T inTransaction(Supplier<T> work) {
		return this.transactions.execute((status) -> work.get());
	}

	/**
	 * Announces the next attempt in the row ({@link LockRows#announceWaiter}) in an autocommit statement on a
	 * connection taken directly from the data source, with a query timeout of {@code nextAttemptWithin} rounded up to
	 * whole seconds; it changes a row only while a lease on it runs. A failure is logged at debug level.
	 */
	@Override
	@SuppressWarnings("NullAway") // a lambda returns null for ConnectionWork<T extends @Nullable Object>: see pom.xml
	public void announceNextAttempt(String resource, Duration nextAttemptWithin) {
		try {
			this.jdbc.execute("announce a waiter for lock '" + resource + "'", (connection) -> {
				this.rows.announceWaiter(connection, resource, nextAttemptWithin.toNanos(),
						this.jdbc.queryTimeoutSeconds(nextAttemptWithin.toNanos()));
				return null;
			});
		}
		catch (DataAccessException ex) {
			logger.debug("Could not announce a waiter for lock '" + resource + "'", ex);
		}
	}

	/** A lost or unobtainable connection ({@code JdbcLockSupport.isConnectionFailure}, anywhere in the causes). */
	@Override
	public boolean isRetryableAttemptFailure(RuntimeException failure) {
		return JdbcLockSupport.isConnectionFailure(failure);
	}

	@Override
	public AcquireResult acquire(LockRequest request) throws InterruptedException {
		Connection transactional = boundTransactionalConnection();
		if (transactional != null) {
			return acquireInTransaction(transactional, request);
		}
		return acquireOnOwnConnection(request);
	}

	/** The connection of an active Spring transaction on the lock data source, or {@code null}. */
	@Nullable
	private Connection boundTransactionalConnection() {
		return this.jdbc.boundTransactionalConnection(this.dataSource);
	}

	/**
	 * Locks the row in the caller's transaction. A locking statement that found the row held under a lease (a
	 * LEASE-mode owner, or a PESSIMISTIC holder's minimum hold time) has nevertheless locked the row until the
	 * transaction ends: InnoDB keeps the lock of a row an {@code UPDATE} read, matched or not, and a rollback to a
	 * savepoint does not release it. Waiting in the transaction would keep a LEASE holder from renewing and releasing
	 * (its release failed after the statement timeout), so the wait could only end when the lease ran out under a
	 * holder that was still working. So a row held under a lease is reported busy at once. Rolling the transaction
	 * back to wait outside it is not done: whether anything else ran in it (the caller's work, another transaction
	 * manager's connection bound beforehand, a listener or an observation handler writing through the data source)
	 * cannot be told for sure, and a {@code ROLLBACK} would discard it.
	 */
	private AcquireResult acquireInTransaction(Connection connection, LockRequest request) throws InterruptedException {
		if (!ensureRow(request)) {
			return AcquireResult.busy("other nodes creating the same new lock row");
		}
		for (int attempt = 0;; attempt++) {
			String owner = UUID.randomUUID().toString();
			Locking result;
			try {
				// the caller's connection: its reads are bounded for our statements only
				int previousReads = JdbcLockSupport.boundReads(connection,
						waitSeconds(request) + this.jdbc.statementTimeoutSeconds());
				try {
					result = lockRow(connection, request, owner); // ensureRow made sure the row exists
				}
				finally {
					JdbcLockSupport.restoreReads(connection, previousReads);
				}
			}
			catch (SQLException ex) {
				throw this.jdbc.translate("lock '" + request.resource() + "' in the current transaction", ex);
			}
			if (result.token != null) {
				boundIdleSessionOfTransaction(connection);
				return AcquireResult.acquired(new RowLock(null, owner, result.token, 0));
			}
			if (result.rowLocked) {
				return AcquireResult.busy(describeBusy(request));
			}
			// no row matched: the row is missing (deleted since we saw it) or held under a lease
			LockRows.Peek peek = peek(request);
			if (peek == null) {
				this.knownRows.forget(request.resource());
				throw new TransientDataAccessResourceException("The lock row of '" + request.resource()
						+ "' was deleted while this transaction tried to lock it; retry the transaction");
			}
			if (peek.leaseRemainingNanos() <= 0 && attempt < MAX_CREATION_RACES) {
				continue; // the lease ended meanwhile; this transaction holds the row lock, so a new attempt is harmless
			}
			return AcquireResult.busy(peek.holderDescription() + " (held under a lease: inside a transaction the"
					+ " attempt ends at once, since its row lock would keep the holder from releasing)");
		}
	}

	/**
	 * On a connection of its own, a broken connection ended the attempt's transaction on the server (nothing of it
	 * is left behind), so the attempt is simply made again on a new connection while the wait time lasts: a waiter
	 * rides out a server restart or a killed connection.
	 */
	private AcquireResult acquireOnOwnConnection(LockRequest request) throws InterruptedException {
		for (int outages = 0;; outages++) {
			try {
				return acquireOnOwnConnectionOnce(request);
			}
			catch (DataAccessException ex) {
				boolean slow = JdbcLockSupport.isTimeout(ex);
				if (!slow && !JdbcLockSupport.isConnectionFailure(ex)) {
					throw ex;
				}
				if (request.remainingNanos() <= 0) {
					if (!JdbcLockSupport.isUnreachable(ex)) {
						return AcquireResult.timedOut(null, ex); // reached, but no answer in time: not acquired
					}
					throw ex;
				}
				if (outages == 0) {
					logger.warn("Lost the connection to the lock database while acquiring '" + request.resource()
							+ "'; retrying until the wait time ends: " + ex.getMostSpecificCause());
				}
				TimeUnit.NANOSECONDS.sleep(this.backoff.pauseNanos(outages, 0, request.remainingNanos()));
			}
		}
	}

	private AcquireResult acquireOnOwnConnectionOnce(LockRequest request) throws InterruptedException {
		// a caller with a wait time waits for a slot within it, instead of failing while the slots are all in use
		if (!this.connections.tryAcquire(request.remainingNanos(), TimeUnit.NANOSECONDS)) {
			throw new LockLimitExceededException(request.resource(), this.maxConnections);
		}
		Connection connection = null;
		boolean held = false;
		int previousReads = 0;
		try {
			// every reply of the acquisition is due by the caller's deadline plus one statement timeout plus the margin,
			// also when the connection itself came late
			long replyDeadline = this.jdbc.replyDeadlineNanos(request.remainingNanos());
			connection = this.jdbc.rawConnection(this.jdbc.connectionTimeoutNanos(request.remainingNanos()));
			previousReads = connection.getNetworkTimeout();
			JdbcLockSupport.boundReadsUntilDeadline(connection, replyDeadline);
			boundIdleSession(connection);
			int lockedRetries = 0;
			int freeRetries = 0;
			for (int attempt = 0;; attempt++) {
				String owner = UUID.randomUUID().toString();
				if (attempt > 0) {
					// a later attempt's statements, and the peek after them, reply by the call's bound
					JdbcLockSupport.boundReadsUntilDeadline(connection, replyDeadline);
				}
				execute(connection, "START TRANSACTION");
				Locking result = lockRow(connection, request, owner);
				if (result.token != null) {
					held = true;
					this.knownRows.add(request.resource());
					return AcquireResult.acquired(new RowLock(connection, owner, result.token, previousReads));
				}
				execute(connection, "ROLLBACK");
				if (result.rowLocked) {
					// Other statements hold row locks for an instant too (the duplicate-key check of a node creating the
					// row, a LEASE statement in flight); a no-wait attempt would report busy although nobody holds the
					// lock. So look again a few times, a few milliseconds apart, before saying busy.
					if (lockedRetries++ < MAX_LOCKED_RETRIES) {
						TimeUnit.MILLISECONDS.sleep(1 + java.util.concurrent.ThreadLocalRandom.current().nextInt(3));
						continue;
					}
					return AcquireResult.busy(describeBusy(request));
				}
				LockRows.Peek peek = this.rows.peek(connection, request.resource(), this.jdbc.statementTimeoutSeconds());
				if (peek == null) {
					if (!createRow(connection, request)) {
						return AcquireResult.busy("other nodes creating the same new lock row");
					}
					continue;
				}
				if (peek.leaseRemainingNanos() <= 0 && freeRetries++ < MAX_CREATION_RACES) {
					// the statement matched nothing although the row is free: its clock (fixed when it started)
					// predated the write that created or freed the row, typically another node's creation of a new
					// row. Now that the row is known to exist, the next attempt re-runs such a statement at once.
					this.knownRows.add(request.resource());
					continue;
				}
				if (!sleepBeforeRetry(request, attempt, peek, connection)) {
					return AcquireResult.busy(peek.holderDescription());
				}
			}
		}
		catch (SQLException ex) {
			throw this.jdbc.translate("lock '" + request.resource() + "'", JdbcLockSupport.onClosedConnection(connection, ex));
		}
		finally {
			if (!held) {
				if (connection != null) {
					try {
						execute(connection, "ROLLBACK");
					}
					catch (SQLException ex) {
						// the connection is discarded below; the server ends its transaction
					}
				}
				restoreIdleSession(connection);
				closeQuietly(connection, false, previousReads);
				this.connections.release();
			}
		}
	}

	/**
	 * Sleeps before the next attempt on a row held by a LEASE-mode owner; false when the deadline has passed. Given a
	 * connection outside any transaction (no row lock of ours on the row) and a lease still running, first announces
	 * the waiter to the LEASE holder's JVM, so that its own queued threads hold back for this one (see
	 * {@link LockRows#announceWaiter}).
	 */
	private boolean sleepBeforeRetry(LockRequest request, int attempt, LockRows.Peek peek,
			@Nullable Connection autocommit) throws InterruptedException {
		long remaining = request.remainingNanos();
		if (remaining <= 0) {
			return false;
		}
		long pause = this.backoff.pauseNanos(attempt, peek.leaseRemainingNanos(), remaining);
		if (autocommit != null && peek.leaseRemainingNanos() > 0 && pause < remaining) {
			try {
				this.rows.announceWaiter(autocommit, request.resource(), pause + this.backoff.initial().toNanos(),
						this.jdbc.statementTimeoutSeconds());
			}
			catch (SQLException ex) {
				logger.debug("Could not announce a waiter for lock '" + request.resource() + "'", ex);
			}
		}
		TimeUnit.NANOSECONDS.sleep(pause);
		return true;
	}

	/**
	 * Takes the row lock and hands out the fencing token, on the connection inside its open transaction. The row is
	 * taken by a locking read ({@link #clockReadSql}) that waits in the row's lock queue, bounded by the caller's
	 * remaining wait time, and writes nothing. Every clock the token comes from is read by a later statement, so
	 * after the row was granted, hence after the previous holder (alive or dead) read its own: {@code UTC_TIMESTAMP(6)}
	 * is fixed when a statement starts, and the waiting statement may have started before the previous holder's.
	 * @return the token; {@link Locking#NOT_MATCHED} for a missing row (the transaction keeps a gap lock) or one
	 * held under a lease (it keeps the row lock) until the caller rolls it back; {@link Locking#ROW_LOCKED} when
	 * the wait ended
	 * @throws SQLException on any other failure
	 * @throws InterruptedException if interrupted while waiting or catching up with the clock
	 */
	private Locking lockRow(Connection connection, LockRequest request, String owner)
			throws SQLException, InterruptedException {
		int waitSeconds = waitSeconds(request);
		int timeout = waitSeconds + this.jdbc.statementTimeoutSeconds();
		boolean clock = this.fencing == Fencing.SERVER_CLOCK && request.minHoldMicros() == 0;
		@Nullable Read read;
		try {
			if (this.dialect == LockDialect.MYSQL && waitSeconds == 0) {
				read = run(connection, this.clockReadSql + " NOWAIT", false,
						(ps) -> Optional.ofNullable(lockingRead(ps, request, timeout))).orElse(null);
			}
			else {
				read = withLockWait(connection, waitSeconds, this.clockReadSql, false,
						(ps) -> Optional.ofNullable(lockingRead(ps, request, timeout))).orElse(null);
			}
		}
		catch (SQLException ex) {
			if (Thread.currentThread().isInterrupted()) {
				throw new InterruptedException("interrupted while waiting for the row lock of '" + request.resource() + "'");
			}
			if (isLockUnavailable(ex)) {
				return Locking.ROW_LOCKED;
			}
			throw ex;
		}
		if (read == null) {
			return Locking.NOT_MATCHED;
		}
		if (!clock) {
			return writeToken(connection, request, owner, timeout, read.stored());
		}
		long afterGrant = read.clockAfterGrant();
		if (afterGrant < 0) {
			return clockToken(connection, request, owner, timeout); // the clock of a second read
		}
		if (read.expiresMicros() > afterGrant) {
			return Locking.NOT_MATCHED; // held under a lease, judged by a clock read after the grant
		}
		if (afterGrant > read.stored()) {
			return new Locking(afterGrant, false);
		}
		afterGrant = awaitClockPast(connection, request, timeout);
		return (afterGrant >= 0) ? new Locking(afterGrant, false)
				: writeTokenAfterAStepBack(connection, request, owner, timeout);
	}

	/** Runs the waiting locking read: what it read, or {@code null} for a missing row. */
	private static @Nullable Read lockingRead(PreparedStatement ps, LockRequest request, int timeout)
			throws SQLException {
		ps.setQueryTimeout(timeout);
		ps.setBytes(1, LockRows.bytes(request.resource()));
		long sent = System.nanoTime();
		try (java.sql.ResultSet rs = JdbcLockSupport.query(ps)) {
			long tookMicros = TimeUnit.NANOSECONDS.toMicros(System.nanoTime() - sent);
			return rs.next() ? new Read(rs.getLong(1), rs.getLong(3), rs.getLong(4), rs.getLong(5), tookMicros) : null;
		}
	}

	/**
	 * What the waiting locking read saw, all server figures in µs.
	 * @param stored the committed token (read under the granted row lock)
	 * @param startClock the server's UTC clock when the statement started, possibly before the previous holder read
	 * its own
	 * @param sinceStart {@code SYSDATE(6) - NOW(6)}: from the statement's start to the evaluation of the row, which
	 * happens after the row lock was granted; both in the session's time zone
	 * @param expiresMicros the row's {@code expires_at}
	 * @param clientMicros how long the statement took as seen by this client (send to reply)
	 */
	private record Read(long stored, long startClock, long sinceStart, long expiresMicros, long clientMicros) {

		/** Tolerance for the rates of the server's and the client's clocks when comparing the two durations. */
		private static final long RATE_TOLERANCE_MICROS = 1_000;

		/**
		 * The server's UTC clock when the row was evaluated, after the grant: {@code startClock + sinceStart}, or -1
		 * when that cannot be trusted and a second statement must read the clock. {@code SYSDATE(6)} is evaluated when
		 * called, but in the session's time zone, so a daylight-saving change between the statement's start and the
		 * evaluation shifts the difference by that change (at least 30 minutes; caught because the difference must lie
		 * between 1 µs and the time the client waited for the reply), and a server started with
		 * {@code --sysdate-is-now} makes it 0 (caught by the lower bound, at the cost of the second read).
		 */
		long clockAfterGrant() {
			if (this.sinceStart < 1 || this.sinceStart > this.clientMicros + RATE_TOLERANCE_MICROS) {
				return -1;
			}
			return this.startClock + this.sinceStart;
		}

	}

	/**
	 * The token of {@link Fencing#DURABLE} (and of any acquisition with a minimum hold time), on a row this transaction
	 * holds: one {@code UPDATE} records the owner, checks the lease with a clock read after the grant and sets the
	 * token to that clock when it exceeds the stored token. If it does not (the stored token is ahead of the clock),
	 * the token is not taken from the counter, since a counter-derived token handed to a holder that dies before its
	 * {@code COMMIT} is rolled back and would be handed out again: the acquisition waits, holding the row, until the
	 * clock passes the stored token ({@link #awaitClockPast}) and sets the token to the clock then. Only when the
	 * clock is further behind than {@link PessimisticLockProvider#MAX_CLOCK_CATCH_UP_MICROS} (it stepped back) is the token the stored one +
	 * 1, as before.
	 * @param stored the token committed in the row, read by the locking read under the row lock
	 */
	private Locking writeToken(Connection connection, LockRequest request, String owner, int timeout, long stored)
			throws SQLException, InterruptedException {
		long token;
		try (PreparedStatement ps = connection.prepareStatement(this.lockSql, Statement.RETURN_GENERATED_KEYS)) {
			ps.setQueryTimeout(timeout);
			ps.setString(1, owner);
			ps.setString(2, request.holder());
			ps.setLong(3, request.minHoldMicros());
			ps.setBytes(4, LockRows.bytes(request.resource()));
			if (ps.executeUpdate() != 1) {
				return Locking.NOT_MATCHED; // held under a lease, judged by a clock read after the grant
			}
			token = this.rows.fencingToken(connection, ps, request.resource(), owner, timeout);
		}
		if (token > stored) {
			return new Locking(token, false);
		}
		boolean caughtUp = awaitClockPast(connection, request, timeout) >= 0;
		return new Locking(retoken(connection, request, timeout, caughtUp ? 0 : 1), false);
	}

	/**
	 * The token of {@link Fencing#SERVER_CLOCK}, on a row this transaction holds: the locking read runs again (it does
	 * not wait: the row is ours) and its clock, read after the grant, is the token when it exceeds the stored token;
	 * nothing is written. A stored token ahead of the clock is waited out as in {@link #writeToken}; when the clock is
	 * further behind, the durable write runs and the token is the stored one + 1.
	 */
	private Locking clockToken(Connection connection, LockRequest request, String owner, int timeout)
			throws SQLException, InterruptedException {
		long stored;
		try (PreparedStatement ps = connection.prepareStatement(this.clockReadSql)) {
			ps.setQueryTimeout(timeout);
			ps.setBytes(1, LockRows.bytes(request.resource()));
			try (java.sql.ResultSet granted = JdbcLockSupport.query(ps)) {
				if (!granted.next() || !granted.getBoolean(2)) {
					return Locking.NOT_MATCHED;
				}
				stored = granted.getLong(1);
				long clock = granted.getLong(3);
				if (clock > stored) {
					return new Locking(clock, false);
				}
			}
		}
		long clock = awaitClockPast(connection, request, timeout);
		if (clock >= 0) {
			return new Locking(clock, false);
		}
		Locking written = writeTokenAfterAStepBack(connection, request, owner, timeout);
		return written;
	}

	/** {@link Fencing#SERVER_CLOCK} with the clock far behind the stored token: the durable write of stored + 1. */
	private Locking writeTokenAfterAStepBack(Connection connection, LockRequest request, String owner, int timeout)
			throws SQLException {
		try (PreparedStatement ps = connection.prepareStatement(this.lockSql)) {
			ps.setQueryTimeout(timeout);
			ps.setString(1, owner);
			ps.setString(2, request.holder());
			ps.setLong(3, request.minHoldMicros());
			ps.setBytes(4, LockRows.bytes(request.resource()));
			if (ps.executeUpdate() != 1) {
				return Locking.NOT_MATCHED;
			}
		}
		return new Locking(retoken(connection, request, timeout, 1), false);
	}

	/**
	 * Waits, holding the row, until the server clock exceeds the row's stored token, reading both with the locking
	 * read (which does not wait: the row is ours) and sleeping for the difference in between.
	 * @return the first clock read above the stored token (µs), or -1 if the token is more than
	 * {@link PessimisticLockProvider#MAX_CLOCK_CATCH_UP_MICROS} ahead of the clock (a step back: the caller writes the stored token + 1)
	 * @throws InterruptedException if interrupted while sleeping
	 */
	private long awaitClockPast(Connection connection, LockRequest request, int timeout)
			throws SQLException, InterruptedException {
		long deadline = System.nanoTime() + TimeUnit.MICROSECONDS.toNanos(MAX_CLOCK_CATCH_UP_MICROS);
		try (PreparedStatement ps = connection.prepareStatement(this.clockReadSql)) {
			ps.setQueryTimeout(timeout);
			ps.setBytes(1, LockRows.bytes(request.resource()));
			while (true) {
				long stored;
				long clock;
				try (java.sql.ResultSet rs = JdbcLockSupport.query(ps)) {
					if (!rs.next()) {
						throw new SQLException("the lock row of '" + request.resource() + "' vanished while locked");
					}
					stored = rs.getLong(1);
					clock = rs.getLong(3);
				}
				if (clock > stored) {
					return clock;
				}
				long gapNanos = TimeUnit.MICROSECONDS.toNanos(stored - clock + 1);
				if (stored - clock >= MAX_CLOCK_CATCH_UP_MICROS || System.nanoTime() + gapNanos - deadline > 0) {
					logger.warn("The fencing token of lock '" + request.resource() + "' is " + (stored - clock)
							+ " µs ahead of the server clock (did the clock step back?); handing out the stored token + 1,"
							+ " which a holder that dies before its release can leave to be handed out again");
					return -1;
				}
				TimeUnit.NANOSECONDS.sleep(gapNanos);
			}
		}
	}

	/**
	 * Sets the held row's token to {@code GREATEST(fencing_token + increment, <server µs>)} and returns it.
	 * @param increment 0 once the clock has passed the stored token (the token is then the clock), 1 after a step back
	 */
	private long retoken(Connection connection, LockRequest request, int timeout, int increment) throws SQLException {
		try (PreparedStatement ps = connection.prepareStatement(this.retokenSql, Statement.RETURN_GENERATED_KEYS)) {
			ps.setQueryTimeout(timeout);
			ps.setInt(1, increment);
			ps.setBytes(2, LockRows.bytes(request.resource()));
			if (ps.executeUpdate() != 1) {
				throw new SQLException("the lock row of '" + request.resource() + "' vanished while locked");
			}
			long token = JdbcLockSupport.lastInsertId(ps);
			if (token <= 0) {
				throw new SQLException("the driver did not return the fencing token of '" + request.resource() + "'");
			}
			return token;
		}
	}

	/**
	 * Creates the free row of a resource found missing, on a connection outside any transaction, and returns once
	 * the row exists: {@code true}, or {@code false} when it could not be created within the caller's wait time
	 * (at least {@link #CREATION_PATIENCE_NANOS}).
	 * <p>
	 * While the row is missing, the locking statement must not run again: an InnoDB {@code UPDATE} of a missing
	 * primary key (REPEATABLE READ) locks the gap where the key would go until its transaction ends, and that gap
	 * lock blocks every node's {@code INSERT} of the row. With a zero wait, nodes that kept alternating between the
	 * two could each block the others' inserts until all gave up, and nobody got a lock that nobody held. So a node
	 * that could not insert looks at the row (a plain read, no lock) and tries the insert again a few milliseconds
	 * later, until the row exists. The gap locks it waits out belong to other nodes' first locking statements, each
	 * held for one round trip.
	 */
	private boolean createRow(Connection connection, LockRequest request) throws SQLException, InterruptedException {
		long patience = Math.max(request.remainingNanos(), CREATION_PATIENCE_NANOS);
		long start = System.nanoTime();
		while (!insertFreeRow(connection, request)
				&& this.rows.peek(connection, request.resource(), this.jdbc.statementTimeoutSeconds()) == null) {
			if (System.nanoTime() - start >= patience) {
				return false;
			}
			TimeUnit.MILLISECONDS.sleep(1 + java.util.concurrent.ThreadLocalRandom.current().nextInt(3));
		}
		this.knownRows.add(request.resource());
		return true;
	}

	/**
	 * Inserts a free row for a never-seen resource in its own autocommit statement: {@code true} once the row exists
	 * (inserted here, or a duplicate key), {@code false} when a lock blocked the insert for the caller's wait time.
	 * The insert waits for a lock when another node has just created and locked the row (its duplicate-key check) or
	 * when another transaction holds the gap where the row goes, so that wait is bounded like the lock wait.
	 */
	@SuppressWarnings("NullAway") // a lambda returns null for BoundedStatement<T extends @Nullable Object>: see pom.xml
	private boolean insertFreeRow(Connection connection, LockRequest request) throws SQLException, InterruptedException {
		try {
			withLockWait(connection, waitSeconds(request), this.rows.insertFreeSql(), false, (ps) -> {
				ps.setQueryTimeout(waitSeconds(request) + this.jdbc.statementTimeoutSeconds());
				ps.setBytes(1, LockRows.bytes(request.resource()));
				ps.executeUpdate();
				return null;
			});
			JdbcLockSupport.commitIfNeeded(connection); // a pool may hand out connections with autocommit off
			return true;
		}
		catch (SQLException ex) {
			if (Thread.currentThread().isInterrupted()) {
				throw new InterruptedException("interrupted while creating the lock row of '" + request.resource() + "'");
			}
			if (JdbcLockSupport.isDuplicateKey(ex)) {
				return true;
			}
			if (isLockUnavailable(ex)) {
				return false;
			}
			throw ex;
		}
	}

	/**
	 * Runs one statement with the server's lock wait limited to {@code waitSeconds}: MariaDB's {@code SET STATEMENT}
	 * prefix, or, on MySQL, the session variable set before and reset after. The statement is registered with
	 * {@link InterruptibleWaits} so that an interrupt cancels the wait.
	 */
	private <T extends @Nullable Object> T withLockWait(Connection connection, int waitSeconds, String sql,
			boolean generatedKeys,
			BoundedStatement<T> action) throws SQLException {
		if (this.dialect == LockDialect.MARIADB) {
			// SET STATEMENT needs a constant: the value is an int computed here, never user input.
			return run(connection, "SET STATEMENT innodb_lock_wait_timeout=" + waitSeconds + " FOR " + sql, generatedKeys,
					action);
		}
		try (PreparedStatement set = connection.prepareStatement("SET SESSION innodb_lock_wait_timeout = ?")) {
			set.setInt(1, Math.max(1, waitSeconds));
			set.execute();
		}
		try {
			return run(connection, sql, generatedKeys, action);
		}
		finally {
			try (Statement reset = connection.createStatement()) {
				reset.execute("SET SESSION innodb_lock_wait_timeout = DEFAULT");
			}
		}
	}

	private static <T extends @Nullable Object> T run(Connection connection, String sql, boolean generatedKeys,
			BoundedStatement<T> action)
			throws SQLException {
		try (PreparedStatement ps = generatedKeys ? connection.prepareStatement(sql, Statement.RETURN_GENERATED_KEYS)
				: connection.prepareStatement(sql);
				InterruptibleWaits.Registration registration = InterruptibleWaits.register(ps)) {
			return action.run(ps);
		}
	}

	/** The caller's remaining wait in whole seconds, rounded up (the unit of {@code innodb_lock_wait_timeout}). */
	private static int waitSeconds(LockRequest request) {
		return (int) Math.min(Integer.MAX_VALUE / 2,
				(request.remainingNanos() + TimeUnit.SECONDS.toNanos(1) - 1) / TimeUnit.SECONDS.toNanos(1));
	}

	@FunctionalInterface
	private interface BoundedStatement<T extends @Nullable Object> {

		T run(PreparedStatement statement) throws SQLException;

	}

	/** Lock wait timeout, NOWAIT refusal, or a query cancelled by its timeout while waiting. */
	static boolean isLockUnavailable(SQLException ex) {
		return ex.getErrorCode() == LOCK_WAIT_TIMEOUT || ex.getErrorCode() == LOCK_NOWAIT
				|| ex instanceof java.sql.SQLTimeoutException;
	}

	/**
	 * Makes sure a row exists before a transaction we do not own locks it (see the class comment); {@code false}
	 * when other nodes' statements kept it from being created (see {@link #createRow}).
	 */
	private boolean ensureRow(LockRequest request) throws InterruptedException {
		if (this.knownRows.contains(request.resource())) {
			return true;
		}
		try (Connection connection = this.jdbc.rawConnection(
				this.jdbc.connectionTimeoutNanos(request.remainingNanos()))) {
			int previousReads = JdbcLockSupport.boundReads(connection,
					waitSeconds(request) + this.jdbc.statementTimeoutSeconds());
			try {
				if (this.rows.peek(connection, request.resource(), this.jdbc.statementTimeoutSeconds()) == null) {
					return createRow(connection, request);
				}
			}
			finally {
				JdbcLockSupport.restoreReads(connection, previousReads);
			}
		}
		catch (SQLException ex) {
			throw this.jdbc.translate("create the lock row of '" + request.resource() + "'", ex);
		}
		this.knownRows.add(request.resource());
		return true;
	}

	@SuppressWarnings("NullAway") // a lambda returns null for ConnectionWork<T extends @Nullable Object>: see pom.xml
	private LockRows.@Nullable Peek peek(LockRequest request) {
		return this.jdbc.execute("read the lock row of '" + request.resource() + "'",
				(connection) -> this.rows.peek(connection, request.resource(), this.jdbc.statementTimeoutSeconds()));
	}

	/** The row is locked by another transaction, whose holder is not committed yet: say who held it last. */
	private String describeBusy(LockRequest request) {
		try {
			LockRows.Peek peek = peek(request);
			String last = (peek != null && peek.holder() != null) ? "; last committed holder: " + peek.holder() : "";
			return "an open transaction holding the row lock" + last;
		}
		catch (RuntimeException ex) {
			return "an open transaction holding the row lock";
		}
	}

	private static void execute(Connection connection, String sql) throws SQLException {
		try (Statement statement = connection.createStatement()) {
			statement.execute(sql);
		}
	}

	private static void closeQuietly(@Nullable Connection connection, boolean rollback, int previousReads) {
		if (connection == null) {
			return;
		}
		try {
			if (rollback) {
				execute(connection, "ROLLBACK");
			}
		}
		catch (SQLException ex) {
			// the connection is discarded below; the server ends its transaction
		}
		JdbcLockSupport.restoreReads(connection, previousReads);
		try {
			connection.close();
		}
		catch (SQLException ex) {
			logger.debug("Could not close lock connection", ex);
		}
	}

	/**
	 * How a PESSIMISTIC acquisition hands out its fencing token.
	 */
	public enum Fencing {

		/**
		 * After the locking read, an {@code UPDATE} records the holder and writes the token: the server's UTC clock in
		 * µs, read by that statement, which starts after the row lock was granted. One durable write per acquisition,
		 * flushed by the {@code COMMIT} that releases the lock. Guarantees: (1) each token is strictly greater than
		 * every committed token of the resource, whatever the holder's mode and whatever the server clock does; (2) it
		 * is strictly greater than the token of every earlier {@code PESSIMISTIC} holder of the resource (either
		 * setting), including holders that died before their release and whose write was rolled back, provided the
		 * server clock never steps back and advances by at least a microsecond between one holder reading it and the
		 * next being granted the row. While the stored token is ahead of the clock by less than
		 * {@link PessimisticLockProvider#MAX_CLOCK_CATCH_UP_MICROS} (a LEASE take's block) the acquisition waits, holding the row, for the clock
		 * to pass it; further ahead (a clock step back) the token is the stored one + 1, which a holder that dies before
		 * its release leaves to be handed out again. The default.
		 */
		DURABLE,

		/**
		 * Nothing is written: the token is the server's UTC clock in µs when the locking read evaluated the row, after
		 * the grant (see {@code Read.clockAfterGrant}, or a second locking read when that cannot be trusted), once it
		 * exceeds the stored token (waited for as with {@link #DURABLE}); a clock step back beyond
		 * {@link PessimisticLockProvider#MAX_CLOCK_CATCH_UP_MICROS}, and any minimum hold time, use {@link #DURABLE}'s write. Guarantee (2) of
		 * {@link #DURABLE}, and greater than every token written before it. Not ordered against LEASE or OPTIMISTIC
		 * on the same resource: their statements compute the token from the stored counter and the clock at their
		 * start, which can precede this holder's clock read while they waited for its row lock. The row's holder and
		 * acquisition time are not updated.
		 */
		SERVER_CLOCK

	}

	/** The outcome of the locking statement. */
	private record Locking(@Nullable Long token, boolean rowLocked) {


		static final Locking ROW_LOCKED = new Locking(null, true);

		static final Locking NOT_MATCHED = new Locking(null, false);

	}

	/**
	 * A held row lock: on this provider's own connection and transaction (released by {@code COMMIT}), or, when
	 * {@code connection} is {@code null}, in a Spring-managed transaction that releases it when it ends.
	 */
	private final class RowLock implements HeldLock {

		@Nullable
		private final Connection connection;

		private final String owner;

		private final long token;

		/** The network timeout of {@link #connection} before the acquisition bounded it, restored at release. */
		private final int previousReads;

		RowLock(@Nullable Connection connection, String owner, long token, int previousReads) {
			this.connection = connection;
			this.owner = owner;
			this.token = token;
			this.previousReads = previousReads;
		}

		@Override
		public long fencingToken() {
			return this.token;
		}

		@Override
		public String ownerToken() {
			return this.owner;
		}

		@Override
		public long validUntilNanos() {
			return Long.MAX_VALUE;
		}

		@Override
		public boolean isTransactionBound() {
			return this.connection == null;
		}

		@Override
		public boolean release() {
			if (this.connection == null) {
				return true;
			}
			try {
				// the COMMIT's reply is awaited for one statement timeout plus the margin, not for as long as the
				// network stays silent
				JdbcLockSupport.boundReads(this.connection, PessimisticLockProvider.this.jdbc.statementTimeoutSeconds());
				execute(this.connection, "COMMIT");
				restoreIdleSession(this.connection);
				closeQuietly(this.connection, false, this.previousReads);
				return true;
			}
			catch (SQLException ex) {
				// The connection failed while the lock was held: the server ended the transaction when it noticed,
				// so another owner may have taken the lock since.
				logger.warn("Pessimistic lock connection failed before release; the lock was lost", ex);
				closeQuietly(this.connection, false, this.previousReads);
				return false;
			}
			finally {
				PessimisticLockProvider.this.connections.release();
			}
		}

	}

}
