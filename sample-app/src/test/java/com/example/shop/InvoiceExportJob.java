package com.example.shop;

import io.github.dblock.DistributedLock;
import io.github.dblock.OnLockFailure;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

@Component
public class InvoiceExportJob {

	// Every instance schedules it; one runs it, the others skip the tick (metric outcome=skipped).
	@Scheduled(cron = "0 */5 * * * *")
	// The minimum hold keeps a fast run from letting a slower instance run the same tick again; it must fit
	// in the lease time.
	@DistributedLock(resource = "invoice-export", waitTime = "0", leaseTime = "2m", minHoldTime = "1m",
			onFailure = OnLockFailure.SKIP)
	public void exportInvoices() {
		// export the invoices
	}

}
