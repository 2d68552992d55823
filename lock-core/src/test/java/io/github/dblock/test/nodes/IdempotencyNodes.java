package io.github.dblock.test.nodes;

import java.time.Duration;

import javax.sql.DataSource;

import io.github.dblock.idempotency.IdempotencyTemplate;
import io.github.dblock.idempotency.OnDuplicate;
import io.github.dblock.jdbc.lease.IdempotencyStore;
import io.github.dblock.jdbc.lease.LeaseLockProvider;
import io.github.dblock.wait.Backoff;
import tools.jackson.databind.json.JsonMapper;

/**
 * Builds {@link IdempotencyTemplate}s that behave like separate application nodes on the test database: each has its
 * own store and renewal scheduler (closing a node's {@link LeaseLockProvider} stops its renewals, as a crash would).
 */
public final class IdempotencyNodes {

	private IdempotencyNodes() {
	}

	/** A node's parts: its template, and the provider whose scheduler renews its claims. */
	public record Node(IdempotencyTemplate template, IdempotencyStore store, LeaseLockProvider renewals)
			implements AutoCloseable {

		@Override
		public void close() {
			this.renewals.close();
		}

	}

	/**
	 * A node with retention 1 h, wait time 30 s, the given running lease and RETURN_OUTCOME; its records table is
	 * migrated first if needed.
	 */
	public static Node node(DataSource dataSource, String name, Duration leaseTime) {
		LockNodes.migrateOnce(dataSource);
		LeaseLockProvider renewals = new LeaseLockProvider(dataSource, LockNodes.TABLE, Duration.ofSeconds(5),
				Duration.ofMillis(5), Duration.ofMillis(50));
		IdempotencyStore store = new IdempotencyStore(dataSource, LockNodes.TABLE, Duration.ofSeconds(5),
				new Backoff(Duration.ofMillis(5), Duration.ofMillis(50)), renewals);
		IdempotencyTemplate template = new IdempotencyTemplate(store, JsonMapper.shared(), Duration.ofHours(1),
				Duration.ofSeconds(30), leaseTime, OnDuplicate.RETURN_OUTCOME, name);
		return new Node(template, store, renewals);
	}

}
