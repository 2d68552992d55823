package io.github.dblock.testing.autoconfigure;

import io.github.dblock.CurrentLock;
import io.github.dblock.DistributedLock;
import io.github.dblock.LockHandle;

/** Code under test: a method that runs under a lock per invoice and reports the lock it ran under. */
public class InvoiceService {

	/**
	 * Settles an invoice under {@code invoice:<id>}, without waiting for a busy lock.
	 * @return the lock it ran under
	 */
	@DistributedLock(resource = "invoice:#{#id}", waitTime = "0")
	public LockHandle settle(String id) {
		return CurrentLock.get("invoice:" + id).orElseThrow();
	}

}
