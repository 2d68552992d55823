package io.github.dblock.engine;

import java.util.concurrent.TimeUnit;

import io.github.dblock.LockLimitExceededException;
import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.spi.TransactionalLockProvider;

/**
 * How the owner of a resource's local gate gets the lock: the lease the previous local holder handed off, or the
 * provider's. Stateless; called by the gate's owner.
 */
final class DatabaseAcquisition {

	private DatabaseAcquisition() {
	}

	/**
	 * The gate owner gets the lock: the lease the previous local holder handed off if it was taken in the mode the
	 * call asks for and suits the request (no round trip), else from the database, after holding back for other
	 * nodes' waiters if a hand-off chain asked for it. A lease of another mode is never passed off as this mode's
	 * hold: a PESSIMISTIC caller handed a LEASE would hold no row lock until its commit.
	 */
	static AcquireResult obtain(LocalLock entry, LockCall call, LockRequest lockRequest) throws InterruptedException {
		LeaseHandOff.Parked parked = entry.handOff.takeParked();
		if (parked != null) {
			HeldLock handedOff = parked.lock();
			if (parked.mode() == call.mode() && !handedOff.isLost() && handedOff.canServe(lockRequest)) {
				return AcquireResult.acquired(handedOff); // handed off by the previous local holder: no round trip
			}
			parked.releaseQuietly(call.resource());
		}
		long courtesy = entry.handOff.takeCourtesyNanos();
		if (courtesy > 0) {
			// this JVM just kept the lock for a whole hand-off budget: give other nodes' waiters their turn
			TimeUnit.NANOSECONDS.sleep(Math.min(courtesy, lockRequest.remainingNanos()));
		}
		return askDatabase(entry, call, lockRequest);
	}

	/**
	 * Asks the provider for the lock. A PESSIMISTIC holder of this JVM lets the next local thread wait in the
	 * database, on a connection of its own, while the provider can spare one
	 * ({@link TransactionalLockProvider#canWaitInDatabase()}); otherwise, and when the provider refuses for its
	 * cap ({@link LockLimitExceededException}) while a local holder of the resource still has a connection to give
	 * back, that thread waits in the JVM for the local holder, as every local waiter did before, rather than fail.
	 */
	private static AcquireResult askDatabase(LocalLock entry, LockCall call, LockRequest lockRequest)
			throws InterruptedException {
		PessimisticConnections connections = entry.connections;
		while (true) {
			long seen = connections.releases();
			TransactionalLockProvider transactional = Capabilities.transactional(call.provider());
			if (entry.pessimisticHold() != null && transactional != null && !transactional.canWaitInDatabase()) {
				if (!connections.awaitRelease(seen, lockRequest)) {
					return AcquireResult.busy(entry.localHolder());
				}
				continue;
			}
			try {
				return call.provider().acquire(lockRequest);
			}
			catch (LockLimitExceededException ex) {
				if (connections.noConnectionToComeBack(seen)) {
					throw ex; // no local holder of this resource will give a connection back
				}
				if (!connections.awaitRelease(seen, lockRequest)) {
					return AcquireResult.busy(entry.localHolder());
				}
			}
		}
	}

}
