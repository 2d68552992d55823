package io.github.dblock.sample.report;

import io.github.dblock.LockFailureHandler;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.stereotype.Component;

/**
 * What {@link DailySalesReport#generate()} returns when another instance holds the report's lock: nothing, after
 * logging who holds it. Named in the method's {@code @DistributedLock(failureHandler = "reportSkippedHandler")}.
 */
@Component("reportSkippedHandler")
public class ReportSkippedHandler implements LockFailureHandler {

	private static final Log logger = LogFactory.getLog(ReportSkippedHandler.class);

	@Override
	@Nullable
	public Object handle(LockFailure failure) {
		String holder = failure.exception().getHolder();
		logger.info("Daily sales report skipped, another instance is generating it: lock '" + failure.resource()
				+ "' is held by " + ((holder != null) ? holder : "an unknown holder"));
		return null;
	}

}
