package io.github.dblock.sample.report;

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
 * When another instance holds the lock, {@link DailySalesReport#generate()} does not run and returns
 * {@code null}: its annotation names the {@link ReportSkippedHandler} bean, which logs who holds the lock. A busy
 * lock is therefore an ordinary event, not an exception reaching the scheduler.
 * <p>
 * Scheduling is switched on by {@link ReportSchedulingConfiguration} ({@code sample.report.enabled}); without it,
 * {@link #runOnce()} can still be called directly.
 */
@Component
public class DailySalesReportJob {

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
		return this.report.generate() != null;
	}

}
