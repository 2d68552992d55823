package io.github.dblock.test.nodes;

import java.time.Duration;
import java.util.List;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockMode;
import io.github.dblock.LockTemplate;
import io.github.dblock.jdbc.sql.DatabaseServer;
import io.github.dblock.jdbc.lease.LeaseLockProvider;
import io.github.dblock.jdbc.sql.LockDialect;
import io.github.dblock.jdbc.optimistic.OptimisticLockProvider;
import io.github.dblock.jdbc.pessimistic.PessimisticLockProvider;
import io.github.dblock.jdbc.sql.LockSchema;
import io.github.dblock.jdbc.sql.LockTable;
import io.github.dblock.spi.LockProvider;
import io.github.dblock.test.TestDatabase;
import io.github.dblock.wait.Backoff;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;

/**
 * Builds {@link LockTemplate}s that behave like separate application nodes on the shared test database: each
 * has its own provider and its own JVM-local lock state, and they meet only in the lock table.
 */
public final class LockNodes implements AutoCloseable {

	/** The lock table the contract tests use; migrated once per JVM. */
	public static final LockTable TABLE = LockTable.of("distributed_lock");

	/**
	 * The databases migrated in this JVM, each as {@code host:port:datadir/database} as the server names itself (the
	 * data directory tells apart servers of tests' own that were given the same free port one after the other).
	 */
	private static final java.util.Set<String> migrated = java.util.concurrent.ConcurrentHashMap.newKeySet();

	private final HikariDataSource dataSource;

	public LockNodes(int poolSize) {
		this.dataSource = TestDatabase.get().newDataSource(poolSize);
		migrateOnce(this.dataSource);
	}

	/**
	 * Creates the lock table on the database of {@code dataSource} unless this JVM already did on that database
	 * (the test database, or a server of a test's own such as a Galera node, which the same JVM may reach too).
	 */
	public static synchronized void migrateOnce(DataSource dataSource) {
		String database = new org.springframework.jdbc.core.JdbcTemplate(dataSource)
			.queryForObject("SELECT CONCAT(@@hostname, ':', @@port, ':', @@datadir, '/', DATABASE())", String.class);
		if (!migrated.contains(database)) {
			LockSchema.migrate(dataSource, TABLE);
			migrated.add(database);
		}
	}

	/** Creates the lock table on a database other than the shared test database (for example a server of a test's own). */
	public static void migrate(DataSource dataSource) {
		LockSchema.migrate(dataSource, TABLE);
	}

	public HikariDataSource dataSource() {
		return this.dataSource;
	}

	private static volatile LockDialect detectedDialect;

	/** The dialect of the test server. */
	public static LockDialect dialect(DataSource dataSource) {
		LockDialect dialect = detectedDialect;
		if (dialect == null) {
			dialect = LockDialect.of(DatabaseServer.detect(dataSource));
			detectedDialect = dialect;
		}
		return dialect;
	}

	/** A provider for the mode on the given data source, with the server's dialect. */
	public static LockProvider provider(LockMode mode, DataSource dataSource) {
		return provider(mode, dataSource, dialect(dataSource));
	}

	/**
	 * A provider for the mode on the given data source. OPTIMISTIC may retry 1,000 times, so that contention tests
	 * finish with every unit of work committed.
	 */
	public static LockProvider provider(LockMode mode, DataSource dataSource, LockDialect dialect) {
		Backoff backoff = new Backoff(Duration.ofMillis(5), Duration.ofMillis(50));
		return switch (mode) {
			case LEASE -> new LeaseLockProvider(dataSource, TABLE, dialect, Duration.ofSeconds(5), backoff.initial(),
					backoff.max());
			case PESSIMISTIC -> new PessimisticLockProvider(dataSource, TABLE, dialect,
					new DataSourceTransactionManager(dataSource), Duration.ofSeconds(5), backoff, 64);
			case OPTIMISTIC -> new OptimisticLockProvider(dataSource, TABLE, new DataSourceTransactionManager(dataSource),
					Duration.ofSeconds(5), backoff, 1000);
		};
	}

	/** A node with the given name and defaults: wait 0, lease 30 s. */
	public LockTemplate node(LockMode mode, String name) {
		return node(mode, name, this.dataSource);
	}

	public static LockTemplate node(LockMode mode, String name, DataSource dataSource) {
		return node(provider(mode, dataSource), name);
	}

	/** A node using the given provider, with defaults wait 0 and lease 30 s. */
	public static LockTemplate node(LockProvider provider, String name) {
		return new LockTemplate(List.of(provider), provider.mode(), Duration.ZERO, Duration.ofSeconds(30), name);
	}

	@Override
	public void close() {
		this.dataSource.close();
	}

}
