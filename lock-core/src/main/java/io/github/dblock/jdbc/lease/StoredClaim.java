package io.github.dblock.jdbc.lease;

import io.github.dblock.jdbc.sql.CallDeadline;
import io.github.dblock.jdbc.sql.JdbcLockSupport;
import io.github.dblock.jdbc.sql.LockRows;
import java.sql.Connection;
import java.sql.SQLException;

import io.github.dblock.LockLostException;
import io.github.dblock.idempotency.IdempotencyProvider;
import io.github.dblock.idempotency.IdempotencyStatus;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * A claimed key: this caller runs the work. Renewed on the shared scheduler until it is completed. Exactly one of
 * {@link #succeed} and {@link #fail} (or {@link #release()}, which fails it) must be called, by any thread. The
 * statements are {@link IdempotencyRows}' (its {@link IdempotencyRows#complete} and
 * {@link IdempotencyRows#select}).
 */
final class StoredClaim extends OwnedLease implements IdempotencyProvider.HeldClaim {

	private static final Log logger = LogFactory.getLog(StoredClaim.class);

	private final IdempotencyRows records;

	final long retentionMicros;

	StoredClaim(IdempotencyRows records, String key, String ownerToken, long fencingToken, long leaseNanos,
			long retentionMicros, long validUntilNanos) {
		super(key, ownerToken, fencingToken, leaseNanos, validUntilNanos);
		this.records = records;
		this.retentionMicros = retentionMicros;
	}

	/** The idempotency key. */
	@Override
	public String key() {
		return this.resource;
	}

	@Override
	String describe() {
		return "the claim of idempotency key '" + this.resource + "'";
	}

	@Override
	boolean renewInDatabase(CallDeadline deadline) {
		return this.records.renew(this, deadline);
	}

	/** Giving the key back without an outcome ({@link #release()}) marks it {@code FAILED}. */
	@Override
	boolean releaseInDatabase(CallDeadline deadline) {
		return markFailed("released without an outcome", deadline);
	}

	@Override
	CallDeadline callDeadline() {
		return this.records.jdbc.callDeadline();
	}

	/**
	 * Records the outcome and ends the claim. If a Spring transaction is active on the lock data source (with
	 * autocommit off), the {@code UPDATE} runs in it: the record commits or rolls back together with the
	 * caller's writes, and a rollback then marks the record {@code FAILED} on a connection of its own, so that the
	 * next call runs the work again. Otherwise it runs in autocommit. Renewal stops first (in the transactional
	 * case the row is locked by the {@code UPDATE} until the commit, so nobody can take it over meanwhile).
	 * @param outcome the result as JSON, or {@code null} for none
	 * @param outcomeType the result's Java type name, or {@code null}
	 * @param note an error text kept with a success (for example why the outcome could not be recorded), or
	 * {@code null}
	 * @throws LockLostException if the record no longer belongs to this claim (its lease ended and another
	 * caller took it over, or it was deleted); in a transaction the caller must let it roll back. Outside a
	 * transaction also if the statement failed and a read of the record then shows the claim gone (taken over,
	 * deleted, or past its running lease): the failure is its cause
	 * @throws DataAccessException on a database failure while the record still runs under this claim (or cannot
	 * be read); a statement that failed but committed (its reply was lost) is not one
	 */
	@Override
	public void succeed(@Nullable String outcome, @Nullable String outcomeType, @Nullable String note) {
		finish();
		if (!record(this.records.boundTransactionalConnection(), outcome, outcomeType, note, callDeadline())) {
			throw lost(null);
		}
	}

	private LockLostException lost(@Nullable DataAccessException failure) {
		return new LockLostException(this.resource, this.fencingToken, "Idempotency key '" + this.resource
				+ "' (fencing token " + this.fencingToken + ") was no longer claimed by this call when its outcome "
				+ "was recorded: its running lease had ended (and another caller may have taken it over), or the "
				+ "record was deleted; the work may have run twice"
				+ ((failure != null) ? " (the statement recording it failed: " + failure.getMostSpecificCause() + ")"
						: ""),
				failure);
	}

	/**
	 * After a completion statement outside a transaction failed: what the record says.
	 * @param status the status the statement was writing
	 * @return {@code true} if the record shows this claim's completion (the statement committed after all),
	 * {@code false} if the claim is known to be gone (taken over, deleted, or past its running lease)
	 * @throws DataAccessException {@code failure}, if the record is still running under this claim or cannot be
	 * read
	 */
	@SuppressWarnings("NullAway") // a lambda returns null for ConnectionWork<T extends @Nullable Object>: see pom.xml
	private boolean afterFailedCompletion(IdempotencyStatus status, DataAccessException failure, CallDeadline deadline) {
		if (deadline.passed()) {
			throw failure; // no time left to look: the failure stands
		}
		IdempotencyRows.Snapshot row;
		try {
			row = this.records.jdbc.execute("read idempotency key '" + this.resource + "'", deadline,
					(connection) -> this.records.select(connection, this.resource, LockRows.bytes(this.resource),
							this.records.jdbc.statementTimeoutSeconds()));
		}
		catch (RuntimeException checkFailed) {
			failure.addSuppressed(checkFailed);
			throw failure;
		}
		if (row == null || !this.ownerToken.equals(row.ownerToken())) {
			return false;
		}
		if (row.record().status() == status) {
			return true;
		}
		if (row.record().status() == IdempotencyStatus.RUNNING && row.leaseRemainingNanos() > 0) {
			throw failure;
		}
		return false; // this claim's record, but its running lease is over: anyone may take it over now
	}

	/**
	 * Writes {@code SUCCEEDED}: in the caller's transaction if one is bound (a rollback of it then marks the
	 * record {@code FAILED}), else in autocommit. Renewal has stopped.
	 * @return whether the record still belonged to this claim
	 */
	private boolean record(@Nullable Connection transactional, @Nullable String outcome, @Nullable String outcomeType,
			@Nullable String note, CallDeadline deadline) {
		if (transactional == null) {
			try {
				return this.records.jdbc.execute("record the outcome of idempotency key '" + this.resource
						+ "'", deadline, (connection) -> {
							int rows = this.records.complete(connection, this.records.sql.idempotency.idemSucceed, this, outcome, outcomeType,
									note, false);
							JdbcLockSupport.commitIfNeeded(connection);
							return rows == 1;
						});
			}
			catch (DataAccessException ex) {
				if (!afterFailedCompletion(IdempotencyStatus.SUCCEEDED, ex, deadline)) {
					throw lost(ex);
				}
				return true;
			}
		}
		int matched;
		try {
			// the caller's connection: its reads are bounded, by this call's deadline, for our statement only
			int previousReads = transactional.getNetworkTimeout();
			deadline.boundReads(transactional);
			try {
				matched = this.records.complete(transactional, this.records.sql.idempotency.idemSucceed, this, outcome, outcomeType,
						note, true);
			}
			finally {
				JdbcLockSupport.restoreReads(transactional, previousReads);
			}
		}
		catch (SQLException ex) {
			throw this.records.jdbc.translate("record the outcome of idempotency key '" + this.resource + "'", ex);
		}
		finally {
			DataSourceUtils.releaseConnection(transactional, this.records.dataSource);
		}
		if (matched == 1) {
			TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
				@Override
				public void afterCompletion(int status) {
					if (status == STATUS_ROLLED_BACK) {
						failQuietly("the transaction that recorded the outcome rolled back");
					}
				}
			});
		}
		return matched == 1;
	}

	/**
	 * Ends the claim after its work threw. Outside a transaction on the lock data source this is {@link #fail}.
	 * Inside one, whether the work's writes persist is that transaction's decision (a checked exception, a
	 * {@code noRollbackFor} or a caller catching the exception lets it commit), so the record is completed in it
	 * as {@link #succeed} does, without an outcome and with the error as its note: a commit keeps the writes and
	 * the record together (duplicates then get {@link io.github.dblock.idempotency.AlreadyProcessedException} naming the
	 * error, and the work does not run again), a rollback marks the record {@code FAILED} so that the next call
	 * runs the work again.
	 * @param error what went wrong, cut to {@value IdempotencyRows#MAX_ERROR_LENGTH} characters
	 * @return {@code false} if the record no longer belonged to this claim (nothing was changed)
	 * @throws DataAccessException on a database failure
	 */
	@Override
	public boolean failed(String error) {
		Connection transactional = this.records.boundTransactionalConnection();
		if (transactional == null) {
			return fail(error);
		}
		finish();
		return record(transactional, null, null, "the work threw, and its transaction was left to decide: " + error,
				callDeadline());
	}

	/**
	 * Marks the record {@code FAILED} (in autocommit, never in the caller's transaction), so that the next call
	 * runs the work again, and ends the claim.
	 * @param error what went wrong, cut to {@value IdempotencyRows#MAX_ERROR_LENGTH} characters
	 * @return {@code false} if the record no longer belonged to this claim (nothing was changed), also when the
	 * statement failed and a read of the record then shows the claim gone (taken over, deleted, or past its
	 * running lease)
	 * @throws DataAccessException on a database failure while the record still runs under this claim (or cannot
	 * be read); the record then stays {@code RUNNING} until its lease ends
	 */
	public boolean fail(String error) {
		finish();
		return markFailed(error, callDeadline());
	}

	private boolean markFailed(String error, CallDeadline deadline) {
		try {
			return this.records.jdbc.execute("record the failure of idempotency key '" + this.resource + "'", deadline,
					(connection) -> {
						int rows = this.records.complete(connection, this.records.sql.idempotency.idemFail, this, null, null, error, false);
						JdbcLockSupport.commitIfNeeded(connection);
						return rows == 1;
					});
		}
		catch (DataAccessException ex) {
			return afterFailedCompletion(IdempotencyStatus.FAILED, ex, deadline);
		}
	}

	private void failQuietly(String error) {
		try {
			fail(error);
		}
		catch (RuntimeException ex) {
			logger.warn("Could not mark idempotency key '" + this.resource + "' as failed; it is taken over when its "
					+ "running lease ends", ex);
		}
	}

}
