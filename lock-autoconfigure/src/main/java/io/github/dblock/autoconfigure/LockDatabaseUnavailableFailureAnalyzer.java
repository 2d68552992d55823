package io.github.dblock.autoconfigure;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.core.NestedExceptionUtils;

/**
 * Reports a start-up that failed because the lock database could not be reached
 * ({@link LockDatabaseUnavailableException}): the data source URL, the root cause (for example
 * {@code Connection refused}) instead of the outermost wrapper, and what to do. Registered in
 * {@code META-INF/spring.factories}. Stateless and thread-safe.
 */
public class LockDatabaseUnavailableFailureAnalyzer extends AbstractFailureAnalyzer<LockDatabaseUnavailableException> {

	@Override
	protected FailureAnalysis analyze(Throwable rootFailure, LockDatabaseUnavailableException cause) {
		Throwable root = NestedExceptionUtils.getMostSpecificCause(cause);
		String url = (cause.getUrl() != null) ? cause.getUrl() : "(URL unknown: not readable from the DataSource)";
		String description = "Distributed locks could not reach the lock database, which is a start-up dependency: "
				+ "the starter checks the server, its topology and the lock table before the application starts.\n\n"
				+ "    URL:        " + url + "\n"
				+ "    Root cause: " + root.getClass().getName() + ": " + root.getMessage();
		String action = "Start the database, or correct the lock DataSource's URL and credentials "
				+ "(spring.datasource.url, .username, .password; or the pool chosen by @LockDataSource or "
				+ DistributedLockProperties.PREFIX + ".datasource) and check that this host can reach it (firewall, "
				+ "Docker network). To start without the lock database, set " + DistributedLockProperties.PREFIX
				+ ".enabled=false: annotated methods then run without locks (a WARN at start-up lists them) and "
				+ "LockTemplate is not available.";
		return new FailureAnalysis(description, action, cause);
	}

}
