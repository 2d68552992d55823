package io.github.dblock.actuate;

import io.github.dblock.jdbc.sql.DatabaseServer;
import io.github.dblock.jdbc.admin.LockTableAdmin;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * Health of the lock table: {@code UP} when {@code SELECT 1 FROM <table> LIMIT 1} succeeds, {@code DOWN} with the
 * error when the table is missing or the database cannot be reached. Details: the table name and the server found
 * at start-up.
 */
public class LockTableHealthIndicator extends AbstractHealthIndicator {

	private final LockTableAdmin admin;

	private final @Nullable DatabaseServer server;

	public LockTableHealthIndicator(LockTableAdmin admin, @Nullable DatabaseServer server) {
		super("Lock table health check failed");
		this.admin = admin;
		this.server = server;
	}

	@Override
	protected void doHealthCheck(Health.Builder builder) {
		builder.withDetail("table", this.admin.table().name());
		if (this.server != null) {
			builder.withDetail("server", this.server.toString());
		}
		this.admin.probe();
		builder.up();
	}

}
