package io.github.dblock.jdbc.optimistic;

import io.github.dblock.jdbc.sql.JdbcLockSupport;
import io.github.dblock.jdbc.sql.KnownRows;
import io.github.dblock.jdbc.sql.LockDialect;
import io.github.dblock.jdbc.sql.LockRows;
import io.github.dblock.jdbc.sql.LockStatements;
import io.github.dblock.jdbc.sql.LockTable;
import io.github.dblock.jdbc.sql.SqlErrors;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.UUID;
import java.util.function.Function;

import javax.sql.DataSource;

import io.github.dblock.LockMode;
import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.spi.WorkLockProvider;
import io.github.dblock.wait.Backoff;
import io.github.dblock.wait.WaitLoop;
import org.jspecify.annotations.Nullable;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The {@link LockMode#OPTIMISTIC} provider: compare-and-set on the resource's fencing token, which serves as its
 * version (it increases with every acquisition in every mode).
 * <p>
 * One attempt, in a new transaction of the lock data source's transaction manager:
 * <ol>
 * <li>read the resource's fencing token with a plain (non-locking) {@code SELECT}, as the transaction's first
 * read, so its snapshot and the version agree;</li>
 * <li>run the work, which writes through the same data source and so in the same transaction;</li>
 * <li>{@code UPDATE ... SET fencing_token = <next> ... WHERE resource = ? AND fencing_token = <read> AND
 * expires_at <= UTC_TIMESTAMP(6)}: one row means nobody committed under this resource since step 1 (and no
 * LEASE or PESSIMISTIC owner holds it), so the transaction commits; zero rows means another node won, so the
 * transaction rolls back.</li>
 * </ol>
 * A commit refused with a deadlock or serialization error (how Galera and group replication report a
 * certification conflict) counts as a conflict too, and so does such an error thrown by a statement of the work:
 * on Galera, another node's commit of rows this transaction has written aborts it, and its next statement fails
 * with 1213 (measured in {@code GaleraClusterTests}). The server has rolled the transaction back in both cases.
 * <p>
 * After a conflict the attempt is repeated, after a pause with backoff and jitter, up to {@code maxAttempts}
 * times and not past the caller's wait time (at least two attempts are always made when {@code maxAttempts}
 * allows). A concurrent compare-and-set on the same row waits for the row lock of the first, then sees the new
 * version and fails, so exactly one of two overlapping attempts commits. The work must be safe to run again and
 * must not be inside an existing transaction (its rollback could not be repeated). Thread-safe.
 */
public class OptimisticLockProvider implements WorkLockProvider {

	private static final org.apache.commons.logging.Log logger = org.apache.commons.logging.LogFactory
		.getLog(OptimisticLockProvider.class);

	private final DataSource dataSource;

	private final JdbcLockSupport jdbc;

	private final LockRows rows;

	private final TransactionTemplate transactions;

	private final WaitLoop waits;

	private final int maxAttempts;

	/** Every statement, in the given dialect or the one of the first connection that bounds one. */
	private final LockStatements sql;

	private final KnownRows knownRows = new KnownRows();

	/**
	 * Creates a provider.
	 * @param dataSource the data source holding the lock table
	 * @param table the lock table
	 * @param transactionManager the transaction manager of the lock data source; each attempt runs in a new
	 * transaction of it
	 * @param statementTimeout query timeout of the lock statements (whole seconds, at least 1)
	 * @param backoff pauses between attempts
	 * @param maxAttempts how many times the work may run, at least 1
	 */
	public OptimisticLockProvider(DataSource dataSource, LockTable table, PlatformTransactionManager transactionManager,
			Duration statementTimeout, Backoff backoff, int maxAttempts) {
		this(dataSource, table, null, transactionManager, statementTimeout, backoff, maxAttempts);
	}

	/**
	 * Creates a provider for a server family known in advance: the one detection path of {@link LockDialect} (the
	 * configured {@code distributed-lock.dialect} first, else the server's, see {@link LockDialect#resolve}).
	 * @param dataSource the data source holding the lock table
	 * @param table the lock table
	 * @param dialect the server family, which bounds the row's peek and insert; {@code null} to detect it from the
	 * first connection's metadata
	 * @param transactionManager the transaction manager of the lock data source; each attempt runs in a new
	 * transaction of it
	 * @param statementTimeout query timeout of the lock statements (whole seconds, at least 1)
	 * @param backoff pauses between attempts
	 * @param maxAttempts how many times the work may run, at least 1
	 * @throws IllegalArgumentException if {@code maxAttempts} is below 1
	 */
	public OptimisticLockProvider(DataSource dataSource, LockTable table, @Nullable LockDialect dialect,
			PlatformTransactionManager transactionManager, Duration statementTimeout, Backoff backoff, int maxAttempts) {
		if (maxAttempts < 1) {
			throw new IllegalArgumentException("maxAttempts must be at least 1, was " + maxAttempts);
		}
		this.dataSource = dataSource;
		this.jdbc = new JdbcLockSupport(dataSource, statementTimeout);
		this.sql = LockStatements.of(table, dialect);
		this.rows = new LockRows(this.sql);
		this.transactions = new TransactionTemplate(transactionManager);
		this.waits = new WaitLoop(backoff, logger);
		this.maxAttempts = maxAttempts;
	}

	@Override
	public LockMode mode() {
		return LockMode.OPTIMISTIC;
	}

	/** Not supported: the work must run in the transaction that checks the version. */
	@Override
	public AcquireResult acquire(LockRequest request) {
		throw new UnsupportedOperationException("OPTIMISTIC locks exist only around a unit of work; use execute");
	}

	@Override
	public <T> Outcome<T> execute(LockRequest request, Function<HeldLock, T> work) throws InterruptedException {
		if (TransactionSynchronizationManager.isActualTransactionActive()) {
			throw new IllegalStateException("OPTIMISTIC lock on '" + request.resource() + "' was requested inside an "
					+ "active transaction; it must run its work in a transaction of its own, so that a conflict can roll "
					+ "the work back and run it again. Call it outside the transaction, or use LEASE or PESSIMISTIC mode.");
		}
		Retries<T> retries = new Retries<>(request, work);
		return this.waits.run(retries::remainingNanos, retries);
	}

	/**
	 * The attempts of one {@link #execute} in the shared {@link WaitLoop}: a conflict (the version moved, or the
	 * server rolled the transaction back for one) is an unsuccessful attempt; any other failure ends the wait, and
	 * no outage is ridden out (the work may have run). The wait time counts as not passed until two attempts were
	 * made, so that at least two are made when {@code maxAttempts} allows.
	 */
	private final class Retries<T> implements WaitLoop.Wait<Attempt<T>, Outcome<T>> {

		private final LockRequest request;

		private final Function<HeldLock, T> work;

		private int made;

		/** Whether the current attempt's work returned (a failure after it is the COMMIT's). */
		private boolean workDone;

		Retries(LockRequest request, Function<HeldLock, T> work) {
			this.request = request;
			this.work = work;
		}

		long remainingNanos() {
			long remaining = this.request.remainingNanos();
			return (this.made < 2) ? Math.max(1, remaining) : remaining;
		}

		@Override
		public Attempt<T> attempt(int attempt) {
			this.made = attempt + 1;
			this.workDone = false;
			ensureRow(this.request.resource());
			return OptimisticLockProvider.this.transactions.execute((status) -> {
				Attempt<T> outcome = attemptInTransaction(this.request, this.work);
				if (!outcome.committed) {
					status.setRollbackOnly();
				}
				this.workDone = true;
				return outcome;
			});
		}

		/**
		 * COMMIT failed with a deadlock/serialization error (a Galera or group replication certification conflict),
		 * or a statement of the work did because another node's commit of the same rows aborted this transaction
		 * (Galera's brute-force abort): the transaction rolled back, so this is a conflict like any other.
		 */
		@Override
		public @Nullable Attempt<T> contended(RuntimeException ex) {
			boolean conflict = this.workDone ? SqlErrors.isTransient(ex) : SqlErrors.isRolledBackConflict(ex);
			return conflict ? new Attempt<>(null, false) : null;
		}

		@Override
		public @Nullable Outcome<T> result(Attempt<T> outcome) {
			if (outcome.committed) {
				return new Outcome<>(outcome.value, true, null);
			}
			return (this.made >= OptimisticLockProvider.this.maxAttempts) ? atDeadline(outcome) : null;
		}

		@Override
		public Outcome<T> atDeadline(Attempt<T> outcome) {
			return new Outcome<>(null, false, "another owner committed first in each of " + this.made
					+ " attempts (distributed-lock.optimistic.max-attempts=" + OptimisticLockProvider.this.maxAttempts
					+ ")");
		}

		@Override
		public String waitingFor() {
			return "running the OPTIMISTIC work of '" + this.request.resource() + "'";
		}

		// rides out no failure (WaitLoop.Wait's defaults): one other than a conflict may have come after the work ran

		/** The back-off step, at least the first step even when the wait time has passed. */
		@Override
		public long pauseNanos(Attempt<T> outcome, int attempt, long remainingNanos, Backoff backoff) {
			return backoff.pauseNanos(attempt, 0, Math.max(remainingNanos, backoff.initial().toNanos()));
		}

	}

	private <T> Attempt<T> attemptInTransaction(LockRequest request, Function<HeldLock, T> work) {
		Connection connection = DataSourceUtils.getConnection(this.dataSource);
		try {
			if (connection.getAutoCommit()) {
				throw new IllegalStateException("The transaction manager used for OPTIMISTIC locks does not manage the "
						+ "lock DataSource (its connection is in autocommit); the lock table must be in the data source "
						+ "of the transaction that runs the work");
			}
			int timeout = this.jdbc.statementTimeoutSeconds();
			Long version = readVersion(connection, request.resource(), timeout);
			if (version == null) {
				this.knownRows.forget(request.resource());
				return new Attempt<>(null, false);
			}
			String owner = UUID.randomUUID().toString();
			T value = work.apply(new WorkInProgress(owner, version));
			try (PreparedStatement cas = this.sql.prepareInTransaction(connection, this.sql.optimisticTake, timeout, true)) {
				cas.setString(1, owner);
				cas.setString(2, request.holder());
				cas.setBytes(3, LockRows.bytes(request.resource()));
				cas.setLong(4, version);
				return new Attempt<>(value, cas.executeUpdate() == 1);
			}
		}
		catch (SQLException ex) {
			if (SqlErrors.isTransient(ex)) {
				return new Attempt<>(null, false); // a deadlock or lock wait on the row: another owner won
			}
			throw this.jdbc.translate("compare-and-set lock '" + request.resource() + "'", ex);
		}
		finally {
			DataSourceUtils.releaseConnection(connection, this.dataSource);
		}
	}

	@Nullable
	private Long readVersion(Connection connection, String resource, int timeout) throws SQLException {
		try (PreparedStatement ps = connection.prepareStatement(this.sql.optimisticRead)) {
			ps.setQueryTimeout(timeout);
			ps.setBytes(1, LockRows.bytes(resource));
			try (ResultSet rs = ps.executeQuery()) {
				return rs.next() ? rs.getLong(1) : null;
			}
		}
	}

	/** Creates the row of a never-seen resource before the work's transaction starts. */
	@SuppressWarnings("NullAway") // a lambda returns null for ConnectionWork<T extends @Nullable Object>: see pom.xml
	private void ensureRow(String resource) {
		if (this.knownRows.contains(resource)) {
			return;
		}
		this.jdbc.execute("create the lock row of '" + resource + "'", (connection) -> {
			if (this.rows.peek(connection, resource, this.jdbc.statementTimeoutSeconds()) == null) {
				this.rows.insertFree(connection, resource, this.jdbc.statementTimeoutSeconds());
			}
			return null;
		});
		this.knownRows.add(resource);
	}

	private record Attempt<T>(@Nullable T value, boolean committed) {
	}

	/** The lock as the work sees it: the version it started from. */
	private record WorkInProgress(String ownerToken, long fencingToken) implements HeldLock {

		@Override
		public long validUntilNanos() {
			return Long.MAX_VALUE;
		}

		@Override
		public boolean release() {
			return true;
		}

	}

}
