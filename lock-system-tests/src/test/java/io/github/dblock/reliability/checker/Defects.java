package io.github.dblock.reliability.checker;

import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import io.github.dblock.LockMode;
import io.github.dblock.LockType;
import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockProvider;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.spi.ReadWriteLockProvider;

/**
 * Test-only switches that re-introduce a defect into one node ({@link Workload.Settings#defect()}), to show that the
 * checker catches it.
 */
final class Defects {

	private Defects() {
	}

	/**
	 * The switch of the given name, for a worker process ({@link CheckerWorker}): the name of one of this class's
	 * factory methods.
	 * @throws IllegalArgumentException for an unknown name
	 */
	static Function<LockProvider, LockProvider> named(String name) {
		return switch (name) {
			case "leaseHeldWithoutTheDatabase" -> leaseHeldWithoutTheDatabase();
			case "tokenNotAdvanced" -> tokenNotAdvanced();
			case "shedLockHeldWithoutTheDatabase" -> shedLockHeldWithoutTheDatabase();
			case "renewalDroppedSilently" -> renewalDroppedSilently();
			default -> throw new IllegalArgumentException("No defect switch named '" + name + "'");
		};
	}

	/**
	 * Every third exclusive LEASE acquisition is reported held without asking the database: a lease with a token
	 * from this JVM's clock in microseconds (like the server's), valid for its lease time, whose release does
	 * nothing. READ/WRITE and the other acquisitions go to the real provider.
	 */
	static Function<LockProvider, LockProvider> leaseHeldWithoutTheDatabase() {
		return (provider) -> {
			ReadWriteLockProvider real = (ReadWriteLockProvider) provider;
			AtomicInteger calls = new AtomicInteger();
			return replacingExclusive(real, (request) -> {
				if (calls.incrementAndGet() % 3 != 0) {
					return real.acquire(request);
				}
				long token = System.currentTimeMillis() * 1_000 + calls.get() % 1_000;
				return heldWithoutTheDatabase(request, token);
			});
		};
	}

	/**
	 * Exclusive LEASE acquisitions report the token of this node's previous acquisition of the resource instead of
	 * their own (as if the token were not advanced); the lock itself is the real one. READ/WRITE go to the real
	 * provider.
	 */
	static Function<LockProvider, LockProvider> tokenNotAdvanced() {
		return (provider) -> {
			ReadWriteLockProvider real = (ReadWriteLockProvider) provider;
			java.util.Map<String, Long> previous = new java.util.concurrent.ConcurrentHashMap<>();
			return replacingExclusive(real, (request) -> {
				AcquireResult result = real.acquire(request);
				HeldLock lock = result.lock();
				if (lock == null) {
					return result;
				}
				Long earlier = previous.put(request.resource(), lock.fencingToken());
				long token = (earlier != null) ? earlier : lock.fencingToken();
				return AcquireResult.acquired(new ForwardingHeldLock(lock) {

					@Override
					public long fencingToken() {
						return token;
					}

				});
			});
		};
	}

	/**
	 * Every ShedLock acquisition (a request whose holder is the ShedLock adapter's) is reported held without asking
	 * the database, as if the adapter skipped the take: a lease valid for its {@code lockAtMostFor} by this JVM's
	 * clock, whose release does nothing. Every other acquisition goes to the real provider.
	 */
	static Function<LockProvider, LockProvider> shedLockHeldWithoutTheDatabase() {
		return (provider) -> {
			ReadWriteLockProvider real = (ReadWriteLockProvider) provider;
			return replacingExclusive(real, (request) -> {
				if (!request.holder().endsWith("(ShedLock)")) {
					return real.acquire(request);
				}
				return heldWithoutTheDatabase(request, 0);
			});
		};
	}

	/**
	 * Exclusive LEASE acquisitions that ask for a renewed lease take a lease of 50 ms that is not renewed, and never
	 * tell their {@code onLost} listeners: the hold ends on the server under its holder, silently. The other
	 * acquisitions go to the real provider.
	 */
	static Function<LockProvider, LockProvider> renewalDroppedSilently() {
		return (provider) -> {
			ReadWriteLockProvider real = (ReadWriteLockProvider) provider;
			return replacingExclusive(real, (request) -> {
				if (!request.renew()) {
					return real.acquire(request);
				}
				AcquireResult result = real.acquire(new LockRequest(request.resource(),
						java.time.Duration.ofMillis(50), false, request.minHoldTime(), request.deadlineNanos(),
						request.holder()));
				HeldLock lock = result.lock();
				if (lock == null) {
					return result;
				}
				return AcquireResult.acquired(new ForwardingHeldLock(lock) {

					@Override
					public boolean isLost() {
						return false; // the holder never learns
					}

					@Override
					public void onLost(Runnable callback) {
						// never told
					}

					@Override
					public boolean extend(java.time.Duration leaseTime) {
						throw new UnsupportedOperationException("The dropped renewal's lease is not extended");
					}

				});
			});
		};
	}

	/** A held lock that forwards every call to the real one; a switch overrides what it breaks. */
	private static class ForwardingHeldLock implements HeldLock {

		private final HeldLock lock;

		ForwardingHeldLock(HeldLock lock) {
			this.lock = lock;
		}

		@Override
		public long fencingToken() {
			return this.lock.fencingToken();
		}

		@Override
		public String ownerToken() {
			return this.lock.ownerToken();
		}

		@Override
		public long validUntilNanos() {
			return this.lock.validUntilNanos();
		}

		@Override
		public boolean isTransactionBound() {
			return this.lock.isTransactionBound();
		}

		@Override
		public boolean isLost() {
			return this.lock.isLost();
		}

		@Override
		public void onLost(Runnable callback) {
			this.lock.onLost(callback);
		}

		@Override
		public boolean extend(java.time.Duration leaseTime) {
			return this.lock.extend(leaseTime);
		}

		@Override
		public boolean release() {
			return this.lock.release();
		}

	}

	/** What a switch does instead of an exclusive acquisition. */
	@FunctionalInterface
	private interface ExclusiveAcquisition {

		AcquireResult acquire(LockRequest request) throws InterruptedException;

	}

	/** The real provider, but for its exclusive acquisitions, which go to {@code acquisition}. */
	private static ReadWriteLockProvider replacingExclusive(ReadWriteLockProvider real,
			ExclusiveAcquisition acquisition) {
		return new ReadWriteLockProvider() {

			@Override
			public LockMode mode() {
				return real.mode();
			}

			@Override
			public AcquireResult acquire(LockRequest request) throws InterruptedException {
				return acquisition.acquire(request);
			}

			@Override
			public AcquireResult acquire(LockRequest request, LockType type) throws InterruptedException {
				return real.acquire(request, type);
			}

		};
	}

	/**
	 * A lock reported held without asking the database: the given token, valid for the request's lease time by this
	 * JVM's clock, and a release that changes nothing.
	 */
	private static AcquireResult heldWithoutTheDatabase(LockRequest request, long token) {
		long validUntil = System.nanoTime() + request.leaseTime().toNanos();
		String owner = UUID.randomUUID().toString();
		return AcquireResult.acquired(new HeldLock() {

			@Override
			public long fencingToken() {
				return token;
			}

			@Override
			public String ownerToken() {
				return owner;
			}

			@Override
			public long validUntilNanos() {
				return validUntil;
			}

			@Override
			public boolean release() {
				return true;
			}

		});
	}

}
