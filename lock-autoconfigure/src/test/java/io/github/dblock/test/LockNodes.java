package io.github.dblock.test;

import java.time.Duration;
import java.util.List;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockMode;
import io.github.dblock.LockTemplate;
import io.github.dblock.jdbc.LeaseLockProvider;
import io.github.dblock.jdbc.LockSchema;
import io.github.dblock.jdbc.LockTable;
import io.github.dblock.spi.LockProvider;

/**
 * Builds {@link LockTemplate}s that behave like separate application nodes on the shared test database: each
 * has its own provider and its own JVM-local lock state, and they meet only in the lock table.
 */
public final class LockNodes implements AutoCloseable {

	/** The lock table the contract tests use; migrated once per JVM. */
	public static final LockTable TABLE = LockTable.of("distributed_lock");

	private static volatile boolean migrated;

	private final HikariDataSource dataSource;

	public LockNodes(int poolSize) {
		this.dataSource = TestDatabase.get().newDataSource(poolSize);
		migrateOnce(this.dataSource);
	}

	public static synchronized void migrateOnce(DataSource dataSource) {
		if (!migrated) {
			LockSchema.migrate(dataSource, TABLE);
			migrated = true;
		}
	}

	public HikariDataSource dataSource() {
		return this.dataSource;
	}

	/** A provider for the mode on the given data source. */
	public static LockProvider provider(LockMode mode, DataSource dataSource) {
		return switch (mode) {
			case LEASE -> new LeaseLockProvider(dataSource, TABLE, Duration.ofSeconds(5), Duration.ofMillis(5),
					Duration.ofMillis(50));
		};
	}

	/** A node with the given name and defaults: wait 0, lease 30 s. */
	public LockTemplate node(LockMode mode, String name) {
		return node(mode, name, this.dataSource);
	}

	public static LockTemplate node(LockMode mode, String name, DataSource dataSource) {
		return new LockTemplate(List.of(provider(mode, dataSource)), mode, Duration.ZERO, Duration.ofSeconds(30), name);
	}

	@Override
	public void close() {
		this.dataSource.close();
	}

}
