package io.github.dblock.test.nodes;

import java.time.Duration;
import java.util.Map;

import javax.sql.DataSource;

import io.github.dblock.jdbc.lease.JdbcSemaphoreProvider;
import io.github.dblock.jdbc.lease.LeaseLockProvider;
import io.github.dblock.semaphore.SemaphoreTemplate;
import io.github.dblock.wait.Backoff;

/**
 * Builds {@link SemaphoreTemplate}s that behave like separate application nodes on the shared test database (each
 * with its own providers and renewal scheduler), meeting only in the semaphore tables.
 */
public final class SemaphoreNodes {

	private SemaphoreNodes() {
	}

	/** A node with defaults wait 0 and a renewed lease of {@code defaultLease}, and the given configured pools. */
	public static SemaphoreTemplate node(String name, DataSource dataSource, Duration defaultLease,
			Map<String, Integer> configured) {
		LockNodes.migrateOnce(dataSource);
		Backoff backoff = new Backoff(Duration.ofMillis(5), Duration.ofMillis(50));
		LeaseLockProvider renewals = new LeaseLockProvider(dataSource, LockNodes.TABLE, Duration.ofSeconds(5),
				backoff.initial(), backoff.max());
		JdbcSemaphoreProvider provider = new JdbcSemaphoreProvider(dataSource, LockNodes.TABLE, Duration.ofSeconds(5),
				backoff, renewals, configured);
		provider.createConfiguredPools();
		return new SemaphoreTemplate(provider, Duration.ZERO, defaultLease, name);
	}

	/** A node with defaults wait 0 and a renewed lease of 30 s, without configured pools. */
	public static SemaphoreTemplate node(String name, DataSource dataSource) {
		return node(name, dataSource, Duration.ofSeconds(30), Map.of());
	}

}
