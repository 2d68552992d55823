package io.github.dblock.engine;

import java.util.concurrent.TimeUnit;

import io.github.dblock.spi.LockRequest;

/**
 * The bookkeeping of a resource's PESSIMISTIC holds in this JVM: how many hold a connection of the provider's own, and
 * how often one has ended or given its connection back, for a local thread that waits in the JVM because the provider
 * could not spare it a connection. Thread-safe (its monitor, which is notified at each end).
 */
final class PessimisticConnections {

	/** PESSIMISTIC holds on connections of the provider's own that have not given their connection back yet. */
	private int ownConnections;

	/** How often a PESSIMISTIC holder has cleared its fields or given its connection back. */
	private long releases;

	/** How often a PESSIMISTIC holder has ended or given its connection back so far. */
	synchronized long releases() {
		return this.releases;
	}

	/**
	 * Whether no local PESSIMISTIC holder will give a connection back to a thread that has seen {@code seen}
	 * releases: nothing ended since, and no holder has a connection of the provider's own.
	 */
	synchronized boolean noConnectionToComeBack(long seen) {
		return this.releases == seen && this.ownConnections == 0;
	}

	/**
	 * Waits until a PESSIMISTIC hold has ended or given its connection back since {@code seen}.
	 * @return whether one did before the request's deadline
	 */
	synchronized boolean awaitRelease(long seen, LockRequest request) throws InterruptedException {
		while (this.releases == seen) {
			long remaining = request.remainingNanos();
			if (remaining <= 0) {
				return false;
			}
			TimeUnit.NANOSECONDS.timedWait(this, remaining);
		}
		return true;
	}

	/** Counts a new PESSIMISTIC hold on a connection of the provider's own. */
	synchronized void connectionTaken() {
		this.ownConnections++;
	}

	/** Counts the end of a PESSIMISTIC hold (its holder fields cleared) and wakes threads waiting for one. */
	synchronized void holdEnded() {
		this.releases++;
		notifyAll();
	}

	/**
	 * Counts the end of a PESSIMISTIC hold on a connection of the provider's own (the connection is back) and wakes
	 * threads waiting for one.
	 */
	synchronized void connectionReturned() {
		this.ownConnections--;
		this.releases++;
		notifyAll();
	}

}
