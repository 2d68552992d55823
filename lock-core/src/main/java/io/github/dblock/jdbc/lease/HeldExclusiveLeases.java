package io.github.dblock.jdbc.lease;

import io.github.dblock.jdbc.sql.CallDeadline;
import io.github.dblock.jdbc.sql.JdbcLockSupport;
import io.github.dblock.jdbc.sql.KnownRows;
import io.github.dblock.jdbc.sql.LeaseStatements;
import io.github.dblock.jdbc.sql.LockRows;
import io.github.dblock.jdbc.sql.LockStatements;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import io.github.dblock.wait.Backoff;

/**
 * The statements on exclusive leases already taken ({@link ExclusiveLease}): release (with hand-off to the waiter next
 * in line), renewal, extension and the commit check. Each runs on a connection of its own in autocommit, bounded by a
 * {@link CallDeadline}, except the commit check, which runs in the application's transaction. Errors surface as
 * {@link org.springframework.dao.DataAccessException}. Thread-safe.
 */
final class HeldExclusiveLeases {

	private final JdbcLockSupport jdbc;

	private final LockStatements sql;

	private final LockRows rows;

	private final Backoff backoff;

	private final ApplicationTransactions transactions;

	/** Resources another node wanted lately: a release that finds a waiter's announcement adds its resource. */
	private final KnownRows contended;

	HeldExclusiveLeases(JdbcLockSupport jdbc, LockStatements sql, LockRows rows, Backoff backoff,
			ApplicationTransactions transactions, KnownRows contended) {
		this.jdbc = jdbc;
		this.sql = sql;
		this.rows = rows;
		this.backoff = backoff;
		this.transactions = transactions;
		this.contended = contended;
	}

	/** The pauses between attempts. */
	Backoff backoff() {
		return this.backoff;
	}

	/** Whether the current thread runs an active transaction on the lock's data source. No SQL runs. */
	boolean inTransactionOfItsDatabase() {
		return this.transactions.inTransactionOfItsDatabase();
	}

	/**
	 * Runs the commit check of a lease on the transaction's connection (see {@link LeaseLockProvider#commitCheckSql()}).
	 * @return whether the row is still the lease's (and now locked, or written, by the transaction)
	 */
	boolean lockRowInTransaction(ExclusiveLease lock) {
		return this.transactions.inTransaction("check lock '" + lock.resource + "' at commit", (connection, timeout) -> {
			boolean write = this.transactions.isMultiPrimary();
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

	/** Releases in the database, and records in the lock whether a waiter on another node announced itself. */
	boolean release(ExclusiveLease lock, CallDeadline deadline) {
		return this.jdbc.execute("release lock '" + lock.resource + "'", deadline, (connection) -> {
			try (PreparedStatement ps = this.sql.prepareBounded(connection, this.sql.lease.leaseRelease,
					this.jdbc.statementTimeoutSeconds(), true)) {
				ps.setLong(1, lock.lastHandedOut());
				ps.setLong(2, lock.minHoldMicros);
				ps.setString(3, LeaseStatements.HANDED_OVER_HOLDER);
				for (int i = 4; i <= 7; i++) {
					ps.setLong(i, lock.minHoldMicros);
				}
				ps.setBytes(8, LockRows.bytes(lock.resource));
				ps.setString(9, lock.ownerToken);
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
				(connection) -> ShortTransactions.inShortTransaction(connection, (c) -> {
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
