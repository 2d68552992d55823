package io.github.dblock.jdbc.lease;

import io.github.dblock.jdbc.sql.CallDeadline;
import io.github.dblock.jdbc.sql.JdbcLockSupport;
import io.github.dblock.jdbc.sql.LockStatements;
import java.util.concurrent.TimeUnit;

import io.github.dblock.spi.LockRequest;
import org.jspecify.annotations.Nullable;

/**
 * The permits of a {@link JdbcSemaphoreProvider} once taken: each a lease on its holder row, renewed after locking the
 * pool's row, released by an owner-checked delete, and re-read by a plain read when an outcome is unknown. Every
 * statement runs on a connection of its own within a {@link CallDeadline}. Thread-safe.
 */
final class HeldPermits {

	private final JdbcLockSupport jdbc;

	private final LockStatements sql;

	private final SemaphorePools pools;

	HeldPermits(JdbcLockSupport jdbc, LockStatements sql, SemaphorePools pools) {
		this.jdbc = jdbc;
		this.sql = sql;
		this.pools = pools;
	}

	/** A permit just taken (or found again), not renewed yet: renewal starts once its take is known committed. */
	Permit permit(LockRequest request, String owner, long token, long validUntilNanos) {
		return new Permit(request.resource(), owner, token, request.leaseTime().toNanos(), validUntilNanos);
	}

	/**
	 * How long a permit's holder row still runs on the server's clock, by a plain read.
	 * @return microseconds (0 or less: expired), or {@code null} if the row is gone
	 */
	@Nullable
	@SuppressWarnings("NullAway") // a lambda returns null for ConnectionWork<T extends @Nullable Object>: see pom.xml
	private Long ownRemainingMicros(Permit permit, CallDeadline deadline) {
		return this.jdbc.execute("look for the holder row of a permit of semaphore '" + permit.resource + "'", deadline,
				(connection) -> {
					Long remaining = this.pools.queryLong(connection, this.sql.semaphore.semOwnRemaining, this.jdbc.statementTimeoutSeconds(),
							permit.resource, permit.ownerToken);
					JdbcLockSupport.commitIfNeeded(connection);
					return remaining;
				});
	}

	private int ownerStatement(String sql, String task, Permit permit, CallDeadline deadline) {
		return OwnerStatements.execute(this.jdbc, deadline, this.sql,
				task + " a permit of semaphore '" + permit.resource + "'", sql, permit.resource, permit.ownerToken);
	}

	/** One held permit: a lease on a holder row, renewed on the shared scheduler. */
	final class Permit extends RereadableLease {

		Permit(String name, String ownerToken, long fencingToken, long leaseNanos, long validUntilNanos) {
			super(name, ownerToken, fencingToken, leaseNanos, validUntilNanos);
		}

		@Override
		String describe() {
			return "a permit of semaphore '" + this.resource + "'";
		}

		@Override
		boolean renewInDatabase(CallDeadline deadline) {
			// the pool row first, as an acquisition attempt locks it before the holder rows (see semRenew)
			return OwnerStatements.renewAfterLocking(HeldPermits.this.jdbc, deadline,
					HeldPermits.this.sql, "renew a permit of semaphore '" + this.resource + "'",
					HeldPermits.this.sql.semaphore.semLockPool, HeldPermits.this.sql.semaphore.semRenew,
					TimeUnit.NANOSECONDS.toMicros(this.leaseNanos), this.resource, this.ownerToken);
		}

		@Override
		CallDeadline callDeadline() {
			return HeldPermits.this.jdbc.callDeadline();
		}

		@Override
		boolean releaseStatement(CallDeadline deadline) {
			return ownerStatement(HeldPermits.this.sql.semaphore.semRelease, "release", this, deadline) == 1;
		}

		@Override
		@Nullable
		Long remainingMicrosInDatabase(CallDeadline deadline) {
			return ownRemainingMicros(this, deadline);
		}

		@Override
		String lostConsequence() {
			return "another owner may have been admitted in its place";
		}

	}

}
