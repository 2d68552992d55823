package io.github.dblock.engine;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.dblock.LockMode;
import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockProvider;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.spi.TransactionalLockProvider;
import org.jspecify.annotations.Nullable;

/**
 * A LEASE provider kept in memory, for testing the engine without a database: one row per resource with an owner
 * token, an expiry by {@link System#nanoTime()} and a fencing counter, guarded by the provider's monitor. It counts
 * what the engine asked of it (acquisitions, releases, waiters at once), which is how the tests see that re-entry and
 * hand-off need no round trip and that at most one thread of a JVM asks for a resource. Hand-off passes the lease on
 * with the next token, as the JDBC provider's token block does. Thread-safe.
 */
final class InMemoryLockProvider implements LockProvider {

	private final Map<String, Row> rows = new HashMap<>();

	final AtomicInteger acquisitions = new AtomicInteger();

	final AtomicInteger releases = new AtomicInteger();

	final AtomicInteger handOffs = new AtomicInteger();

	/** Threads inside {@link #acquire} now, and the most there ever were at once. */
	private int waiting;

	private int mostWaiting;

	@Override
	public LockMode mode() {
		return LockMode.LEASE;
	}

	@Override
	public AcquireResult acquire(LockRequest request) throws InterruptedException {
		this.acquisitions.incrementAndGet();
		synchronized (this) {
			this.waiting++;
			this.mostWaiting = Math.max(this.mostWaiting, this.waiting);
			try {
				while (true) {
					Row row = this.rows.computeIfAbsent(request.resource(), (key) -> new Row());
					long now = System.nanoTime();
					if (row.owner == null || now - row.expiresAt >= 0) {
						row.owner = UUID.randomUUID().toString();
						row.fencing++;
						row.expiresAt = now + request.leaseTime().toNanos();
						return AcquireResult.acquired(new Lease(request.resource(), row.owner, row.fencing, row.expiresAt));
					}
					long remaining = request.remainingNanos();
					if (remaining <= 0) {
						return AcquireResult.busy(row.holder);
					}
					TimeUnit.NANOSECONDS.timedWait(this, Math.min(remaining, row.expiresAt - now + 1));
				}
			}
			finally {
				this.waiting--;
			}
		}
	}

	/** The most threads that were inside {@link #acquire} at the same time. */
	synchronized int mostWaiting() {
		return this.mostWaiting;
	}

	/** The current owner token of the resource, {@code null} when free or expired. */
	synchronized @Nullable String owner(String resource) {
		Row row = this.rows.get(resource);
		return (row == null || System.nanoTime() - row.expiresAt >= 0) ? null : row.owner;
	}

	private static final class Row {

		@Nullable String owner;

		String holder = "in-memory holder";

		long fencing;

		long expiresAt;

	}

	private final class Lease implements HeldLock {

		private final String resource;

		private final String owner;

		private final long token;

		private final long validUntil;

		Lease(String resource, String owner, long token, long validUntil) {
			this.resource = resource;
			this.owner = owner;
			this.token = token;
			this.validUntil = validUntil;
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
			return this.validUntil;
		}

		@Override
		public boolean release() {
			InMemoryLockProvider provider = InMemoryLockProvider.this;
			synchronized (provider) {
				provider.releases.incrementAndGet();
				Row row = provider.rows.get(this.resource);
				if (row == null || !this.owner.equals(row.owner) || System.nanoTime() - row.expiresAt >= 0) {
					return false;
				}
				row.owner = null;
				provider.notifyAll();
				return true;
			}
		}

		@Override
		public @Nullable HeldLock handOff() {
			InMemoryLockProvider provider = InMemoryLockProvider.this;
			synchronized (provider) {
				Row row = provider.rows.get(this.resource);
				if (row == null || !this.owner.equals(row.owner) || System.nanoTime() - row.expiresAt >= 0) {
					return null;
				}
				provider.handOffs.incrementAndGet();
				row.fencing++;
				return new Lease(this.resource, this.owner, row.fencing, row.expiresAt);
			}
		}

		@Override
		public long handOffCourtesyNanos() {
			return 0;
		}

		@Override
		public boolean canServe(LockRequest request) {
			return true;
		}

	}

	/**
	 * A PESSIMISTIC provider kept in memory: a row lock per resource, held until release, granted to waiters in their
	 * arrival order (as InnoDB's queue does), with the next token of the resource. It counts the threads waiting in it
	 * at once; {@link #spareConnections} is what {@link #canWaitInDatabase()} answers. Thread-safe.
	 */
	static final class RowLocks implements TransactionalLockProvider {

		/** Per resource: the holder's ticket first, then the waiters' in arrival order. */
		private final Map<String, ArrayDeque<Object>> queues = new HashMap<>();

		private final Map<String, Long> tokens = new HashMap<>();

		private int waiting;

		private int mostWaiting;

		volatile boolean spareConnections = true;

		@Override
		public LockMode mode() {
			return LockMode.PESSIMISTIC;
		}

		@Override
		public synchronized AcquireResult acquire(LockRequest request) throws InterruptedException {
			ArrayDeque<Object> queue = this.queues.computeIfAbsent(request.resource(), (key) -> new ArrayDeque<>());
			Object ticket = new Object();
			queue.addLast(ticket);
			this.mostWaiting = Math.max(this.mostWaiting, ++this.waiting);
			boolean granted = false;
			try {
				while (queue.peekFirst() != ticket) {
					long remaining = request.remainingNanos();
					if (remaining <= 0) {
						return AcquireResult.busy("in-memory row holder");
					}
					TimeUnit.NANOSECONDS.timedWait(this, remaining);
				}
				granted = true;
				grantedInTransaction();
				long token = this.tokens.merge(request.resource(), 1L, Long::sum);
				return AcquireResult.acquired(new RowLock(request.resource(), ticket, token));
			}
			finally {
				this.waiting--;
				if (!granted) {
					queue.remove(ticket);
					notifyAll();
				}
			}
		}

		/** The threads waiting in {@link #acquire} now. */
		synchronized int waiting() {
			return this.waiting;
		}

		/** The most threads that waited in {@link #acquire} at the same time. */
		synchronized int mostWaiting() {
			return this.mostWaiting;
		}

		@Override
		public boolean canWaitInDatabase() {
			return this.spareConnections;
		}

		@Override
		public void announceNextAttempt(String resource, java.time.Duration nextAttemptWithin) {
		}

		@Override
		public boolean isRetryableAttemptFailure(RuntimeException failure) {
			return false;
		}

		/**
		 * Transactions open now whose thread has not been granted a row lock in them (each holds a pooled connection,
		 * in a real provider, while it waits), and the most there ever were at once.
		 */
		private int waitingTransactions;

		private int mostWaitingTransactions;

		/** Calls of {@link #prepareOutsideTransaction}, and those made while a transaction of the thread was open. */
		final AtomicInteger prepared = new AtomicInteger();

		final AtomicInteger preparedInsideTransaction = new AtomicInteger();

		private final ThreadLocal<Boolean> inTransaction = ThreadLocal.withInitial(() -> false);

		private final ThreadLocal<Boolean> grantedInTransaction = ThreadLocal.withInitial(() -> false);

		@Override
		public <T> T inTransaction(LockRequest request, java.util.function.Supplier<T> work) {
			synchronized (this) {
				this.mostWaitingTransactions = Math.max(this.mostWaitingTransactions, ++this.waitingTransactions);
			}
			this.inTransaction.set(true);
			this.grantedInTransaction.set(false);
			try {
				return work.get();
			}
			finally {
				this.inTransaction.set(false);
				if (!this.grantedInTransaction.get()) {
					synchronized (this) {
						this.waitingTransactions--;
					}
				}
			}
		}

		/** Counts a grant inside a transaction; called under the provider's monitor. */
		private void grantedInTransaction() {
			if (this.inTransaction.get() && !this.grantedInTransaction.get()) {
				this.grantedInTransaction.set(true);
				this.waitingTransactions--;
			}
		}

		@Override
		public @Nullable String prepareOutsideTransaction(LockRequest request) {
			this.prepared.incrementAndGet();
			if (this.inTransaction.get()) {
				this.preparedInsideTransaction.incrementAndGet();
			}
			return null;
		}

		/** The most transactions that waited for a row lock at the same time. */
		synchronized int mostWaitingTransactions() {
			return this.mostWaitingTransactions;
		}

		private final class RowLock implements HeldLock {

			private final String resource;

			private final Object ticket;

			private final long token;

			RowLock(String resource, Object ticket, long token) {
				this.resource = resource;
				this.ticket = ticket;
				this.token = token;
			}

			@Override
			public long fencingToken() {
				return this.token;
			}

			@Override
			public String ownerToken() {
				return this.ticket.toString();
			}

			@Override
			public long validUntilNanos() {
				return System.nanoTime() + TimeUnit.HOURS.toNanos(1);
			}

			@Override
			public boolean release() {
				RowLocks provider = RowLocks.this;
				synchronized (provider) {
					boolean held = provider.queues.get(this.resource).peekFirst() == this.ticket;
					provider.queues.get(this.resource).remove(this.ticket);
					provider.notifyAll();
					return held;
				}
			}

		}

	}

}
