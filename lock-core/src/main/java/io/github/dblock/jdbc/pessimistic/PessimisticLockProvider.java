package io.github.dblock.jdbc.pessimistic;

import io.github.dblock.jdbc.sql.BoundedConnections;
import io.github.dblock.jdbc.sql.CallDeadline;
import io.github.dblock.jdbc.sql.JdbcLockSupport;
import io.github.dblock.jdbc.sql.LockDialect;
import io.github.dblock.jdbc.sql.LockRows;
import io.github.dblock.jdbc.sql.LockStatements;
import io.github.dblock.jdbc.sql.LockTable;
import io.github.dblock.jdbc.sql.SqlErrors;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import javax.sql.DataSource;

import io.github.dblock.LockLimitExceededException;
import io.github.dblock.LockMode;
import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.spi.TransactionalLockProvider;
import io.github.dblock.wait.Backoff;
import io.github.dblock.wait.WaitLoop;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.dao.DataAccessException;
import org.springframework.dao.TransientDataAccessResourceException;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The {@link LockMode#PESSIMISTIC} provider: an InnoDB exclusive row lock on the resource's row, held by a
 * transaction until it ends.
 * <p>
 * Acquisition is a locking read by primary key that waits in the server's lock queue (bounded by the wait time
 * rounded up to whole seconds: {@code SET STATEMENT innodb_lock_wait_timeout} on MariaDB, the session variable or
 * {@code NOWAIT} on MySQL), then, with {@link Fencing#DURABLE}, an owner-recording {@code UPDATE} whose lease
 * condition keeps the mode exclusive with LEASE holders of the same resource. The lock joins the Spring-managed
 * transaction active on the lock data source; otherwise it takes a connection of its own and holds it with an open
 * transaction until release ({@code COMMIT}), at most {@code maxConnections} such locks held or awaited per JVM.
 * A missing row is created by a separate autocommit statement, never inside the locking transaction. The statements
 * and the reasons for their shape: docs/DESIGN.md, "PESSIMISTIC".
 * <p>
 * A holder whose connection dies has lost the lock at once (the server ends its transaction) and learns it at
 * release ({@link io.github.dblock.LockLostException}). No free slot within the wait time throws
 * {@link LockLimitExceededException}; a waiter on its own connection retries a broken connection until its deadline;
 * other failures surface as {@link DataAccessException}. Thread-safe.
 */
public class PessimisticLockProvider implements TransactionalLockProvider {

	private static final Log logger = LogFactory.getLog(PessimisticLockProvider.class);

	private final DataSource dataSource;

	private final JdbcLockSupport jdbc;

	private final LockRows rows;

	/** The acquisitions on connections of their own. */
	private final OwnConnectionLocks ownConnections;

	/** The row lock and its fencing token. */
	private final PessimisticFencing locking;

	/** Creating missing rows, and reading a busy one's holder. */
	private final PessimisticRows lockRows;

	private final TransactionTemplate transactions;

	private final int maxConnections;

	private final Semaphore connections;

	private volatile Fencing fencing = Fencing.DURABLE;

	/** The holders' sessions: the held row locks, the idle bound. */
	private final HolderSessions sessions;

	/**
	 * Creates a provider.
	 * @param dataSource the data source holding the lock table
	 * @param table the lock table
	 * @param dialect how to bound a lock wait on this server
	 * @param transactionManager the transaction manager of the lock data source, for
	 * {@link #inTransaction(LockRequest, Supplier)}
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
		LockStatements sql = LockStatements.of(table, dialect);
		this.rows = new LockRows(sql);
		this.locking = new PessimisticFencing(this.jdbc, sql, this.rows);
		this.lockRows = new PessimisticRows(this.jdbc, sql, this.rows);
		this.transactions = new TransactionTemplate(transactionManager);
		this.maxConnections = maxConnections;
		this.connections = new Semaphore(maxConnections);
		this.sessions = new HolderSessions(this.jdbc, this.connections);
		this.ownConnections = new OwnConnectionLocks(this.jdbc, this.rows, this.locking, this.lockRows, this.sessions,
				this.connections, maxConnections, new WaitLoop(backoff, logger), () -> this.fencing == Fencing.SERVER_CLOCK);
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
			this.sessions.setIdleTimeoutSeconds(0);
			return;
		}
		if (idleTimeout.isNegative() || idleTimeout.compareTo(Duration.ofDays(365)) > 0) {
			throw new IllegalArgumentException("The PESSIMISTIC idle timeout must be between 1 s and 365 days, was "
					+ idleTimeout);
		}
		this.sessions.setIdleTimeoutSeconds((int) ((idleTimeout.toNanos() + TimeUnit.SECONDS.toNanos(1) - 1)
				/ TimeUnit.SECONDS.toNanos(1)));
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
	public <T> T inTransaction(LockRequest request, Supplier<T> work) {
		// joining an active transaction borrows nothing
		TransactionBeginBound bound = TransactionSynchronizationManager.isActualTransactionActive()
				? TransactionBeginBound.NONE : TransactionBeginBound.start(
						this.jdbc.acquisitionDeadline(request).connectionWaitNanos(),
						BoundedConnections.poolWaitNanos(this.dataSource));
		try {
			return this.transactions.execute((status) -> {
				bound.began();
				return work.get();
			});
		}
		catch (RuntimeException ex) {
			if (bound.end()) {
				throw bound.exceeded(request.resource(), ex);
			}
			throw ex;
		}
		finally {
			bound.end();
		}
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

	/** A lost or unobtainable connection ({@code SqlErrors.isConnectionFailure}, anywhere in the causes). */
	@Override
	public boolean isRetryableAttemptFailure(RuntimeException failure) {
		return SqlErrors.isConnectionFailure(failure);
	}

	/**
	 * Only a database that could not be connected to at all ({@code SqlErrors.isUnreachable}: refused, unknown host,
	 * SQLSTATE 08001/08004); a pool with no free connection in time, a reply that did not come or a broken connection
	 * make {@code execute} report the lock not acquired, with the failure as its cause.
	 */
	@Override
	public boolean isUnreachableFailure(RuntimeException failure) {
		return SqlErrors.isUnreachable(failure);
	}

	/**
	 * Makes sure the resource's row exists (as far as this JVM knows: a hint kept for a minute), on a connection of its
	 * own that goes back to the pool at once, so that the acquisition in the transaction that begins next does not take
	 * a second connection for it.
	 * @return {@code null}, or the description of other nodes creating the same new row when it could not be created
	 * within the wait time
	 */
	@Override
	public @Nullable String prepareOutsideTransaction(LockRequest request) throws InterruptedException {
		return this.lockRows.ensureRow(request, this.jdbc.acquisitionDeadline(request)) ? null
				: "other nodes creating the same new lock row";
	}

	@Override
	public AcquireResult acquire(LockRequest request) throws InterruptedException {
		Connection transactional = boundTransactionalConnection();
		if (transactional != null) {
			return acquireInTransaction(transactional, request);
		}
		return this.ownConnections.acquire(request);
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
		CallDeadline deadline = this.jdbc.acquisitionDeadline(request);
		if (!this.lockRows.ensureRow(request, deadline)) {
			return AcquireResult.busy("other nodes creating the same new lock row");
		}
		for (int attempt = 0;; attempt++) {
			String owner = UUID.randomUUID().toString();
			PessimisticFencing.Locking result;
			try {
				// the caller's connection: its reads are bounded, by the call's deadline, for our statements only
				int previousReads = connection.getNetworkTimeout();
				deadline.boundLockWaitReads(connection);
				try {
					result = this.locking.lockRow(connection, request, owner, this.fencing == Fencing.SERVER_CLOCK); // ensureRow made sure the row exists
					if (result.token() != null) {
						this.sessions.boundIdleSessionOfTransaction(connection);
					}
				}
				finally {
					JdbcLockSupport.restoreReads(connection, previousReads);
				}
			}
			catch (SQLException ex) {
				throw this.jdbc.translate("lock '" + request.resource() + "' in the current transaction", ex);
			}
			Long token = result.token();
			if (token != null) {
				return AcquireResult.acquired(this.sessions.rowLock(null, owner, token, 0));
			}
			if (result.rowLocked()) {
				return AcquireResult.busy(this.lockRows.describeBusy(request, deadline));
			}
			// no row matched: the row is missing (deleted since we saw it) or held under a lease
			LockRows.Peek peek = this.lockRows.peek(request, deadline);
			if (peek == null) {
				this.lockRows.forget(request.resource());
				throw new TransientDataAccessResourceException("The lock row of '" + request.resource()
						+ "' was deleted while this transaction tried to lock it; retry the transaction");
			}
			if (peek.leaseRemainingNanos() <= 0 && attempt < PessimisticRows.MAX_CREATION_RACES) {
				continue; // the lease ended meanwhile; this transaction holds the row lock, so a new attempt is harmless
			}
			return AcquireResult.busy(peek.holderDescription() + " (held under a lease: inside a transaction the"
					+ " attempt ends at once, since its row lock would keep the holder from releasing)");
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
		 * {@code PessimisticFencing.MAX_CLOCK_CATCH_UP_MICROS} (100 ms) (a LEASE take's block) the acquisition waits, holding the row, for the clock
		 * to pass it; further ahead (a clock step back) the token is the stored one + 1, which a holder that dies before
		 * its release leaves to be handed out again. The default.
		 */
		DURABLE,

		/**
		 * Nothing is written: the token is the server's UTC clock in µs when the locking read evaluated the row, after
		 * the grant (see {@code Read.clockAfterGrant}, or a second locking read when that cannot be trusted), once it
		 * exceeds the stored token (waited for as with {@link #DURABLE}); a clock step back beyond
		 * {@code PessimisticFencing.MAX_CLOCK_CATCH_UP_MICROS} (100 ms), and any minimum hold time, use {@link #DURABLE}'s write. Guarantee (2) of
		 * {@link #DURABLE}, and greater than every token written before it. Not ordered against LEASE or OPTIMISTIC
		 * on the same resource: their statements compute the token from the stored counter and the clock at their
		 * start, which can precede this holder's clock read while they waited for its row lock. The row's holder and
		 * acquisition time are not updated.
		 */
		SERVER_CLOCK

	}

}
