package io.github.dblock.jdbc.lease;

import io.github.dblock.spi.HeldLock;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

/**
 * A {@link RenewableLease} held by one owner with one fencing token, exposed as a {@link HeldLock}: a read or write
 * lease, a semaphore permit, an idempotency claim. A loss is logged with {@link #describe()} and runs the callbacks
 * registered through {@link #onLost(Runnable)} once. Thread-safe.
 */
abstract class OwnedLease extends RenewableLease implements HeldLock {

	private static final Log logger = LogFactory.getLog(OwnedLease.class);

	final long fencingToken;

	private final LostCallbacks lostCallbacks = new LostCallbacks();

	OwnedLease(String resource, String ownerToken, long fencingToken, long leaseNanos, long validUntilNanos) {
		super(resource, ownerToken, leaseNanos, validUntilNanos);
		this.fencingToken = fencingToken;
	}

	@Override
	public long fencingToken() {
		return this.fencingToken;
	}

	@Override
	public String ownerToken() {
		return this.ownerToken;
	}

	@Override
	public long validUntilNanos() {
		return this.validUntilNanos;
	}

	@Override
	public boolean isLost() {
		return this.lost;
	}

	@Override
	public void onLost(Runnable callback) {
		this.lostCallbacks.add(callback, this.lost);
	}

	@Override
	void onLost(String reason) {
		logger.warn("Lost " + describe() + " (fencing token " + this.fencingToken + "): " + reason);
		this.lostCallbacks.runAll(this.resource);
	}

}
