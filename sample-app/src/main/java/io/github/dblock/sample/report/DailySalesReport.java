package io.github.dblock.sample.report;

import java.time.Duration;
import java.time.LocalDateTime;
import java.util.Map;
import java.util.Objects;

import io.github.dblock.DistributedLock;
import io.github.dblock.sample.SampleProperties;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

/**
 * The daily sales report: counts today's orders and records the run in the {@code report_run} table.
 * <p>
 * It runs on at most one application instance at a time: {@link #generate()} holds the lock
 * {@code report:daily-sales} and does not wait for it ({@code waitTime = "0"}). If another instance is
 * generating the report, the call fails at once with {@link io.github.dblock.LockNotAcquiredException} and the
 * method body does not run; {@link DailySalesReportJob} turns that into a log line.
 */
@Component
public class DailySalesReport {

	private static final Log logger = LogFactory.getLog(DailySalesReport.class);

	private final JdbcTemplate jdbc;

	private final Duration workTime;

	private final String instance;

	public DailySalesReport(JdbcTemplate jdbc, SampleProperties properties,
			@Value("${distributed-lock.node-name:sample-app}") String instance) {
		this.jdbc = jdbc;
		this.workTime = properties.getReport().getWorkTime();
		this.instance = instance;
	}

	/**
	 * Generates the report, unless another instance is generating it right now.
	 * <p>
	 * The lease time is set well above the time a report takes: if this instance died while holding the lock,
	 * the others would be blocked for at most that long. The minimum hold time keeps the lock for half the
	 * schedule's period even after a fast report, so an instance whose clock or scheduler runs a few seconds late
	 * does not run the same tick again.
	 * @return the recorded run, or {@code null} if another instance holds the lock (see {@link ReportSkippedHandler})
	 */
	@DistributedLock(resource = "report:daily-sales", waitTime = "0", leaseTime = "1m",
			minHoldTime = "${sample.report.min-hold:5s}", failureHandler = "reportSkippedHandler")
	public ReportRun generate() {
		LocalDateTime started = LocalDateTime.now();
		Map<String, Object> today = this.jdbc.queryForMap("SELECT COUNT(*) AS orders, COALESCE(SUM(quantity), 0) AS units "
				+ "FROM purchase WHERE purchased_at >= CURRENT_DATE");
		// COUNT and COALESCE(SUM, 0) are never NULL
		int orders = ((Number) Objects.requireNonNull(today.get("orders"))).intValue();
		int units = ((Number) Objects.requireNonNull(today.get("units"))).intValue();
		pretendToWork();
		LocalDateTime ended = LocalDateTime.now();
		this.jdbc.update("INSERT INTO report_run (report, instance, started_at, ended_at, orders, units) "
				+ "VALUES ('daily-sales', ?, ?, ?, ?, ?)", this.instance, started, ended, orders, units);
		ReportRun run = new ReportRun(this.instance, started, ended, orders, units);
		logger.info("Daily sales report by " + this.instance + ": " + orders + " orders, " + units + " units today ("
				+ Duration.between(started, ended).toMillis() + " ms)");
		return run;
	}

	private void pretendToWork() {
		try {
			Thread.sleep(this.workTime.toMillis());
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Report interrupted", ex);
		}
	}

	/**
	 * One run of the report, as recorded in {@code report_run}.
	 *
	 * @param instance the application instance that ran it ({@code distributed-lock.node-name})
	 * @param started when it started
	 * @param ended when it ended
	 * @param orders orders placed today
	 * @param units units sold today
	 */
	public record ReportRun(String instance, LocalDateTime started, LocalDateTime ended, int orders, int units) {

	}

}
