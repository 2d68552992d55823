package io.github.dblock.sample.report;

import io.github.dblock.LockNotAcquiredException;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

/**
 * Triggers the {@link DailySalesReport} on every instance on the same wall-clock schedule
 * ({@code sample.report.cron}, every 10 seconds by default); the report's lock lets one instance through, and
 * this job logs the others' skips.
 * <p>
 * A cron schedule fires on all instances at the same moment, as a real "every night at 2:00" job does, so the
 * instances really compete for the lock. (With {@code fixedDelay}, each instance would keep its own rhythm
 * from its own start time, and two instances would usually take turns without ever meeting.)
 * <p>
 * The lock sits on a method of another bean, not on the {@code @Scheduled} method itself: the scheduler calls
 * the {@code @Scheduled} method through the proxy, so a {@link LockNotAcquiredException} thrown there would reach
 * the scheduler and be logged as an error. Catching it here makes a skip an ordinary event.
 * <p>
 * Scheduling is switched on by {@link ReportSchedulingConfiguration} ({@code sample.report.enabled}); without it,
 * {@link #runOnce()} can still be called directly.
 */
@Component
public class DailySalesReportJob {

	private static final Log logger = LogFactory.getLog(DailySalesReportJob.class);

	private final DailySalesReport report;

	public DailySalesReportJob(DailySalesReport report) {
		this.report = report;
	}

	/** The scheduled entry point. */
	@Scheduled(cron = "${sample.report.cron:*/10 * * * * *}")
	public void runScheduled() {
		runOnce();
	}

	/**
	 * Generates the report unless another instance is generating it.
	 * @return {@code true} if it ran here, {@code false} if it was skipped
	 */
	public boolean runOnce() {
		try {
			this.report.generate();
			return true;
		}
		catch (LockNotAcquiredException ex) {
			logger.info("Daily sales report skipped, another instance is generating it: lock '" + ex.getResource()
					+ "' is held by " + ((ex.getHolder() != null) ? ex.getHolder() : "an unknown holder"));
			return false;
		}
	}

}
