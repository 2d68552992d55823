package io.github.dblock.jdbc.lease;

import io.github.dblock.jdbc.sql.CallDeadline;
import io.github.dblock.jdbc.sql.LeaseStatements;
import io.github.dblock.jdbc.sql.LockRows;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.wait.Backoff;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * A lease in the database, held by one owner token: renewed on the shared scheduler, lost once renewal finds it
 * gone or cannot reach the database in time (see {@link RenewableLease}). Within this JVM it passes from thread
 * to thread through {@link Hold}s, each with its own fencing token from the block reserved by the take, while the
 * database row stays unchanged. The leases of {@link LeaseLockProvider}; their statements are
 * {@link HeldExclusiveLeases}'.
 */
final class ExclusiveLease extends RenewableLease {

	private static final Log logger = LogFactory.getLog(ExclusiveLease.class);

	/** How long one JVM may keep passing a lease between its own threads before releasing it in the database. */
	static final long HAND_OFF_BUDGET_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

	/**
	 * Fencing tokens reserved by each take: the holder uses the first, and up to {@code TOKEN_BLOCK - 1} local
	 * successors the next ones (see {@link io.github.dblock.spi.HeldLock#handOff()}); the take ({@link LeaseStatements#leaseTake}) writes it
	 * as the constant 1024.
	 */
	static final int TOKEN_BLOCK = 1024;


	/** The statements this lease runs: renewal, release, extension, commit check. */
	private final HeldExclusiveLeases statements;

	/** The last token of the block the take reserved (the row's fencing token). */
	private final long blockEnd;

	final boolean renewing;

	final long minHoldMicros;

	private final long takenAtNanos = System.nanoTime();

	/** How long this JVM may pass the lease between its own threads (shorter when it had to wait for it). */
	private final long handOffBudgetNanos;

	/** Whether passing the lease on stopped because this JVM had kept it for the whole hand-off budget. */
	private volatile boolean budgetSpent;

	/**
	 * Read by the release: nanoseconds until the next attempt a waiter on another node announced, 0 if none, -1 if
	 * the driver cannot tell.
	 */
	volatile long announcedWaitNanos;

	/** The hold that has the lease now; the only one whose lost-callbacks run. */
	volatile Hold current;

	ExclusiveLease(HeldExclusiveLeases statements, String resource, String ownerToken, long blockEnd, long leaseNanos, boolean renewing,
			long minHoldMicros, long validUntilNanos, long handOffBudgetNanos) {
		super(resource, ownerToken, leaseNanos, validUntilNanos);
		this.statements = statements;
		this.handOffBudgetNanos = handOffBudgetNanos;
		this.blockEnd = blockEnd;
		this.renewing = renewing;
		this.minHoldMicros = minHoldMicros;
		this.current = new Hold(this, blockEnd - TOKEN_BLOCK + 1);
	}

	@Override
	boolean renewInDatabase(CallDeadline deadline) {
		return this.statements.renew(this, deadline);
	}

	@Override
	boolean releaseInDatabase(CallDeadline deadline) {
		return this.statements.release(this, deadline);
	}

	@Override
	CallDeadline callDeadline() {
		return this.statements.callDeadline();
	}

	@Override
	void onLost(String reason) {
		Hold hold = this.current;
		logger.warn("Lost lock '" + this.resource + "' (fencing token " + hold.fencingToken + "): " + reason);
		hold.lostCallbacks.runAll(this.resource);
	}

	/**
	 * The largest fencing token this lease has handed out: the current hold's (a local successor gets the token after
	 * its predecessor's). Once the lease is released or lost no hold is added, so the release writes it back as the
	 * row's token ({@link LeaseStatements#leaseRelease}): the rest of the block the take reserved was never handed out.
	 */
	long lastHandedOut() {
		return this.current.fencingToken;
	}

	/** The next local owner's hold, or {@code null} when the lease must go back to the database now. */
	@Nullable
	synchronized Hold handOff(Hold from) {
		if (from != this.current || this.lost || this.released || !this.renewing || this.minHoldMicros > 0
				|| from.fencingToken >= this.blockEnd || System.nanoTime() - this.validUntilNanos >= 0) {
			return null;
		}
		if (System.nanoTime() - this.takenAtNanos > this.handOffBudgetNanos) {
			this.budgetSpent = true;
			return null;
		}
		Hold next = new Hold(this, from.fencingToken + 1);
		this.current = next;
		return next;
	}

	/** One owner's hold of a {@link ExclusiveLease}: the first taker's, or a local successor's after a hand-off. */
	static final class Hold implements io.github.dblock.spi.TransactionCheckedLock {

		final ExclusiveLease lease;

		private final long fencingToken;

		private final RenewableLease.LostCallbacks lostCallbacks = new RenewableLease.LostCallbacks();

		Hold(ExclusiveLease lease, long fencingToken) {
			this.lease = lease;
			this.fencingToken = fencingToken;
		}

		@Override
		public long fencingToken() {
			return this.fencingToken;
		}

		@Override
		public String ownerToken() {
			return this.lease.ownerToken;
		}

		@Override
		public long validUntilNanos() {
			return this.lease.validUntilNanos;
		}

		@Override
		public boolean isLost() {
			return this.lease.lost;
		}

		@Override
		public void onLost(Runnable callback) {
			this.lostCallbacks.add(callback, this.lease.lost && this.lease.current == this);
		}

		@Override
		public @Nullable HeldLock handOff() {
			Hold next = this.lease.handOff(this);
			if (next != null) {
				this.lostCallbacks.clear(); // this owner is done; its listeners must not hear of a later loss
			}
			return next;
		}

		@Override
		public long handOffCourtesyNanos() {
			Backoff backoff = this.lease.statements.backoff();
			long announced = this.lease.announcedWaitNanos;
			if (announced == LockRows.HANDED_OVER) {
				return 0; // the lease went straight to the waiter next in line: local threads cannot take it anyway
			}
			if (announced < 0) {
				// this driver cannot say whether anybody waits: after a spent time budget assume a waiter polling at the
				// longest back-off (a used-up token block alone just takes the row again)
				return this.lease.budgetSpent ? backoff.max().toNanos() : 0;
			}
			// until the attempt a waiter on another node announced (never longer than its longest pause and margin);
			// nobody announced: no pause, the next local thread takes the row again at once
			return Math.min(announced, backoff.max().toNanos() + backoff.initial().toNanos());
		}

		@Override
		public boolean inTransactionOfItsDatabase() {
			return this.lease.statements.inTransactionOfItsDatabase();
		}

		/**
		 * This hold's lease must still be the row's (owner token, lease not ended) and still this hold's in the JVM: a
		 * lease passed on to a local successor ({@link #handOff()}) keeps its owner token in the row, so a hold that
		 * handed it off, or whose lease is known lost, fails without a statement.
		 */
		@Override
		public boolean lockRowInTransaction() {
			if (this.lease.current != this || this.lease.lost || this.lease.released) {
				return false;
			}
			return this.lease.statements.lockRowInTransaction(this.lease) && this.lease.current == this;
		}

		@Override
		public boolean canServe(LockRequest request) {
			return request.renew() && request.leaseTime().toNanos() == this.lease.leaseNanos
					&& request.minHoldMicros() == 0 && request.resource().equals(this.lease.resource);
		}

		@Override
		public boolean extend(Duration leaseTime) {
			return this.lease.statements.extend(this, leaseTime);
		}

		@Override
		public boolean release() {
			return this.lease.release();
		}

	}

}
