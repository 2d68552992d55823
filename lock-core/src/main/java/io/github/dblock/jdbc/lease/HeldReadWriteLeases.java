package io.github.dblock.jdbc.lease;

import io.github.dblock.jdbc.sql.CallDeadline;
import io.github.dblock.jdbc.sql.JdbcLockSupport;
import io.github.dblock.jdbc.sql.LockRows;
import io.github.dblock.jdbc.sql.LockStatements;
import io.github.dblock.jdbc.sql.ReadWriteStatements;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.concurrent.TimeUnit;

import io.github.dblock.LockLostException;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.spi.TransactionCheckedLock;
import org.jspecify.annotations.Nullable;

/**
 * The held read/write leases of {@link ReadWriteLeases} (see its class comment): their renewal, release, re-read
 * of the holder row after a failed release ({@link LockLostException} or released) and the commit check of a write
 * lease in the application's transaction. Thread-safe; package-private.
 */
final class HeldReadWriteLeases {

	private final JdbcLockSupport jdbc;

	/** Every statement, in the lease provider's dialect. */
	private final LockStatements sql;

	/** Where commit checks run: the transaction of the lease provider's data source, and its cluster topology. */
	private final ApplicationTransactions transactions;

	HeldReadWriteLeases(JdbcLockSupport jdbc, LockStatements sql, ApplicationTransactions transactions) {
		this.jdbc = jdbc;
		this.sql = sql;
		this.transactions = transactions;
	}

	/** The statements of a write lease's commit check, in order (tests). */
	java.util.List<String> commitCheckSql() {
		return java.util.List.of(resourceCheckSql(), this.sql.readWrite.rwLockHold);
	}

	/** The first statement of the commit check: lock the resource's row, by a write on a multi-primary cluster. */
	private String resourceCheckSql() {
		return this.transactions.isMultiPrimary() ? this.sql.readWrite.rwTouchResource : this.sql.readWrite.rwLockResource;
	}

	/**
	 * Runs the commit check of a write lease on the transaction's connection: locks the resource's row by primary key
	 * (on a multi-primary cluster by writing it), which every acquisition of the resource locks first, so that no
	 * competitor is granted before this transaction ends, even once the lease has run out meanwhile, whichever
	 * holder rows its holder query would visit; then locks the lease's holder row if it is still the lease's and live.
	 * Both statements run without MariaDB's snapshot isolation ({@link LockStatements#prepareInTransaction}).
	 * @return whether the holder row is still the lease's and live (and now locked by the transaction)
	 */
	private boolean lockHoldInTransaction(Lease lease) {
		return this.transactions.inTransaction("check the write lock '" + lease.resource + "' at commit",
				(connection, timeout) -> {
					byte[] key = LockRows.bytes(lease.resource);
					try (PreparedStatement ps = this.sql.prepareInTransaction(connection, resourceCheckSql(), timeout,
							false)) {
						ps.setBytes(1, key);
						if (this.transactions.isMultiPrimary()) {
							ps.executeUpdate(); // if the lease is not ours any more, the transaction rolls back anyway
						}
						else {
							JdbcLockSupport.query(ps).close();
						}
					}
					try (PreparedStatement ps = this.sql.prepareInTransaction(connection, this.sql.readWrite.rwLockHold, timeout,
							false)) {
						ps.setBytes(1, key);
						ps.setString(2, lease.ownerToken);
						try (ResultSet rs = JdbcLockSupport.query(ps)) {
							return rs.next();
						}
					}
				});
	}

	/** A lock just taken (or found again), not renewed yet: renewal starts once its grant is known committed. */
	HeldLock leased(LockRequest request, String owner, String kind, long token, long validUntilNanos) {
		return kind.equals(ReadWriteLeases.WRITE)
				? new WriteLease(request.resource(), owner, token, request.leaseTime().toNanos(), request.minHoldMicros(),
						validUntilNanos)
				: new Lease(request.resource(), owner, kind, token, request.leaseTime().toNanos(), request.minHoldMicros(),
						validUntilNanos);
	}

	/**
	 * How long a lease's holder row still runs on the server's clock, by a plain read.
	 * @return microseconds (0 or less: expired), or {@code null} if the row is gone
	 */
	@Nullable
	@SuppressWarnings("NullAway") // a lambda returns null for ConnectionWork<T extends @Nullable Object>: see pom.xml
	private Long ownRemainingMicros(Lease lease, CallDeadline deadline) {
		return this.jdbc.execute("look for the holder row of '" + lease.resource + "'", deadline, (connection) -> {
			try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.readWrite.rwOwnRemaining, this.jdbc.statementTimeoutSeconds(), false)) {
				ps.setBytes(1, LockRows.bytes(lease.resource));
				ps.setString(2, lease.ownerToken);
				try (ResultSet rs = JdbcLockSupport.query(ps)) {
					Long remaining = rs.next() ? rs.getLong(1) : null;
					JdbcLockSupport.commitIfNeeded(connection);
					return remaining;
				}
			}
		});
	}

	/**
	 * Renews a lease in one short transaction of two statements: a locking read of the resource's row by primary key
	 * ({@link ReadWriteStatements#rwLockResource}), then the owner-checked {@link ReadWriteStatements#rwRenew} of its holder
	 * row. The server fixes {@code UTC_TIMESTAMP()} when a statement starts, so the waiting is left to the first
	 * statement: behind the holder's own commit check (which locks the same rows in the same order, so they do not
	 * deadlock) or an acquisition of the resource. The renewal then starts once no reader or writer can be granted
	 * beside it, and judges the lease by the server's clock at that moment: a lease that ended while the renewal
	 * waited is found ended (and the lease lost), never extended beside a competitor granted meanwhile. Neither
	 * statement reads consistently, so the transaction has no read view and MariaDB's snapshot isolation does not
	 * apply. Each statement's timeout and reply end by the renewal's deadline.
	 * @return whether the holder row was still the lease's and live (and is now extended)
	 */
	private boolean renewAfterLockingTheResource(Lease lease, CallDeadline deadline) {
		byte[] key = LockRows.bytes(lease.resource);
		return this.jdbc.execute("renew '" + lease.resource + "'", deadline,
				(connection) -> ShortTransactions.inShortTransaction(connection, (c) -> {
					try (PreparedStatement ps = this.sql.prepareBounded(c, this.sql.readWrite.rwLockResource,
							timeoutWithin(deadline), false)) {
						ps.setBytes(1, key);
						JdbcLockSupport.query(ps).close();
					}
					deadline.boundReads(c); // what the wait for the resource row left of the deadline
					try (PreparedStatement ps = this.sql.prepareBounded(c, this.sql.readWrite.rwRenew, timeoutWithin(deadline),
							false)) {
						ps.setLong(1, TimeUnit.NANOSECONDS.toMicros(lease.leaseNanos));
						ps.setBytes(2, key);
						ps.setString(3, lease.ownerToken);
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

	private int update(String task, String sql, Lease lease, long micros, CallDeadline deadline) {
		return this.jdbc.execute(task + " '" + lease.resource + "'", deadline, (connection) -> {
			try (PreparedStatement ps = this.sql.prepareBounded(connection, sql, this.jdbc.statementTimeoutSeconds(), false)) {
				int index = 1;
				if (micros >= 0) {
					ps.setLong(index++, micros);
				}
				ps.setBytes(index++, LockRows.bytes(lease.resource));
				ps.setString(index, lease.ownerToken);
				int matched = ps.executeUpdate();
				JdbcLockSupport.commitIfNeeded(connection);
				return matched;
			}
		});
	}

	/** One owner's read or write lease: renewed on the shared scheduler, lost once renewal finds it gone. */
	class Lease extends RereadableLease {

		private final String kind;

		private final long minHoldMicros;

		Lease(String resource, String ownerToken, String kind, long fencingToken, long leaseNanos, long minHoldMicros,
				long validUntilNanos) {
			super(resource, ownerToken, fencingToken, leaseNanos, validUntilNanos);
			this.kind = kind;
			this.minHoldMicros = minHoldMicros;
		}

		@Override
		boolean renewInDatabase(CallDeadline deadline) {
			return renewAfterLockingTheResource(this, deadline);
		}

		@Override
		CallDeadline callDeadline() {
			return HeldReadWriteLeases.this.jdbc.callDeadline();
		}

		/** A release with a minimum hold keeps the holder row, and its owner, until the hold ends. */
		@Override
		boolean releaseKeepsOwner() {
			return this.minHoldMicros > 0;
		}

		@Override
		boolean releaseStatement(CallDeadline deadline) {
			LockStatements sql = HeldReadWriteLeases.this.sql;
			return (this.minHoldMicros > 0)
					? update("release", sql.readWrite.rwReleaseKeeping, this, this.minHoldMicros, deadline) == 1
					: update("release", sql.readWrite.rwRelease, this, -1, deadline) == 1;
		}

		@Override
		@Nullable
		Long remainingMicrosInDatabase(CallDeadline deadline) {
			return ownRemainingMicros(this, deadline);
		}

		@Override
		String describe() {
			return "the " + kindName() + " lock '" + this.resource + "'";
		}

		private String kindName() {
			return ReadWriteLeases.READ.equals(this.kind) ? "read" : "write";
		}

		@Override
		public String toString() {
			return kindName() + " lease of '" + this.resource + "' (fencing token " + fencingToken() + ")";
		}

	}

	/**
	 * A write lease, which can be checked in the application's transaction at its commit (see the class comment).
	 * A lease known lost or released fails the check without a statement.
	 */
	private final class WriteLease extends Lease implements TransactionCheckedLock {

		WriteLease(String resource, String ownerToken, long fencingToken, long leaseNanos, long minHoldMicros,
				long validUntilNanos) {
			super(resource, ownerToken, ReadWriteLeases.WRITE, fencingToken, leaseNanos, minHoldMicros, validUntilNanos);
		}

		@Override
		public boolean inTransactionOfItsDatabase() {
			return HeldReadWriteLeases.this.transactions.inTransactionOfItsDatabase();
		}

		@Override
		public boolean lockRowInTransaction() {
			if (this.lost || this.released) {
				return false;
			}
			return lockHoldInTransaction(this);
		}

	}

}
