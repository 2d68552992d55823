package io.github.dblock.jdbc.lease;

import io.github.dblock.jdbc.sql.CallDeadline;
import io.github.dblock.jdbc.sql.IdempotencyStatements;
import io.github.dblock.jdbc.sql.JdbcLockSupport;
import io.github.dblock.jdbc.sql.LockRows;
import io.github.dblock.jdbc.sql.LockStatements;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import io.github.dblock.idempotency.IdempotencyRecord;
import io.github.dblock.idempotency.IdempotencyStatus;
import org.jspecify.annotations.Nullable;

/**
 * The records of an {@link IdempotencyStore} by key: reading one, renewing and completing a claim, and the caller's
 * transactional connection a completion may join. Every statement is bounded by the statement timeout; failures
 * surface as {@link SQLException} or, through {@link JdbcLockSupport}, {@link org.springframework.dao.DataAccessException}.
 * Thread-safe.
 */
final class IdempotencyRows {

	/** The longest error summary kept in a record. */
	static final int MAX_ERROR_LENGTH = 1000;

	/** The lock data source (unwrapped): the key of the caller's transactional connection. */
	final DataSource dataSource;

	final JdbcLockSupport jdbc;

	final LockStatements sql;

	IdempotencyRows(DataSource dataSource, JdbcLockSupport jdbc, LockStatements sql) {
		this.dataSource = dataSource;
		this.jdbc = jdbc;
		this.sql = sql;
	}

	@Nullable
	Snapshot select(Connection connection, String key, byte[] bytes, int timeout) throws SQLException {
		try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.idempotency.idemSelect, timeout, false)) {
			ps.setBytes(1, bytes);
			@Nullable Snapshot snapshot = null;
			try (ResultSet rs = JdbcLockSupport.query(ps)) {
				if (rs.next()) {
					IdempotencyRecord record = new IdempotencyRecord(key, IdempotencyStatus.valueOf(rs.getString(1)),
							rs.getString(2), rs.getLong(4), rs.getInt(5), instant(rs, 6), instant(rs, 7),
							nullableInstant(rs, 8), instant(rs, 9), rs.getString(10), rs.getString(11), rs.getString(12));
					snapshot = new Snapshot(record, rs.getString(3),
							TimeUnit.MICROSECONDS.toNanos(Math.max(0, rs.getLong(13))), rs.getBoolean(14));
				}
			}
			JdbcLockSupport.commitIfNeeded(connection); // on success only: a failed read reports its own error
			return snapshot;
		}
	}

	/** A {@code NOT NULL} column. */
	private static Instant instant(ResultSet rs, int column) throws SQLException {
		Instant value = nullableInstant(rs, column);
		if (value == null) {
			throw new SQLException("column " + column + " of the idempotency record is NULL, but it is NOT NULL");
		}
		return value;
	}

	@Nullable
	private static Instant nullableInstant(ResultSet rs, int column) throws SQLException {
		LocalDateTime value = rs.getObject(column, LocalDateTime.class);
		return (value != null) ? value.toInstant(ZoneOffset.UTC) : null;
	}

	/**
	 * Renews a claim's running lease: a short transaction that locks the record by primary key
	 * ({@link IdempotencyStatements#idemLockForRenewal}, where any waiting happens), then the owner-checked
	 * {@link IdempotencyStatements#idemRenew}, which reads the server's clock after the wait
	 * ({@link OwnerStatements#renewAfterLocking}).
	 * @return whether the claim still held the record, running and within its lease (now extended)
	 */
	boolean renew(StoredClaim claim, CallDeadline deadline) {
		return OwnerStatements.renewAfterLocking(this.jdbc, deadline, this.sql,
				"renew idempotency key '" + claim.resource + "'", this.sql.idempotency.idemLockForRenewal,
				this.sql.idempotency.idemRenew,
				TimeUnit.NANOSECONDS.toMicros(claim.leaseNanos), claim.resource, claim.ownerToken);
	}

	/**
	 * Binds and runs a completion ({@code SUCCEEDED} or {@code FAILED}) of a claim on a connection.
	 * @param callersTransaction whether the connection is the caller's transaction's, which may have read before
	 * (the statement then runs without MariaDB's snapshot isolation, {@link LockStatements#prepareInTransaction})
	 */
	int complete(Connection connection, String sql, StoredClaim claim, @Nullable String outcome,
			@Nullable String outcomeType, @Nullable String error, boolean callersTransaction) throws SQLException {
		int timeout = this.jdbc.statementTimeoutSeconds();
		try (PreparedStatement ps = callersTransaction ? this.sql.prepareInTransaction(connection, sql, timeout, false)
				: this.sql.prepareBounded(connection, sql, timeout, false)) {
			ps.setLong(1, claim.retentionMicros);
			ps.setString(2, outcome);
			ps.setString(3, outcomeType);
			ps.setString(4, (error != null && error.length() > MAX_ERROR_LENGTH) ? error.substring(0, MAX_ERROR_LENGTH)
					: error);
			ps.setBytes(5, LockRows.bytes(claim.resource));
			ps.setString(6, claim.ownerToken);
			return ps.executeUpdate();
		}
	}

	record Snapshot(IdempotencyRecord record, @Nullable String ownerToken, long leaseRemainingNanos,
			boolean retentionOver) {

		/**
		 * The same condition as {@link IdempotencyStatements#idemTakeOver}, on this committed state: also a running claim of this very call,
		 * whose claim committed although its reply was lost.
		 */
		boolean takeable(String owner) {
			return switch (this.record.status()) {
				case FAILED -> true;
				case RUNNING -> this.leaseRemainingNanos <= 0 || owner.equals(this.ownerToken);
				case SUCCEEDED -> this.retentionOver;
			};
		}

	}

	/** The connection of an active Spring transaction on the lock data source (autocommit off), or {@code null}. */
	@Nullable
	Connection boundTransactionalConnection() {
		return this.jdbc.boundTransactionalConnection(this.dataSource);
	}

}
