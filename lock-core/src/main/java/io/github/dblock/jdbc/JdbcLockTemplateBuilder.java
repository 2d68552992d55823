package io.github.dblock.jdbc;

import io.github.dblock.jdbc.sql.DatabaseServer;
import io.github.dblock.jdbc.admin.DatabaseTopology;
import io.github.dblock.jdbc.lease.LeaseLockProvider;
import io.github.dblock.jdbc.sql.LockDialect;
import io.github.dblock.jdbc.sql.LockSchema;
import io.github.dblock.jdbc.sql.LockTable;
import io.github.dblock.jdbc.optimistic.OptimisticLockProvider;
import io.github.dblock.jdbc.pessimistic.PessimisticLockProvider;
import java.net.InetAddress;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

import javax.sql.DataSource;

import io.github.dblock.LockMode;
import io.github.dblock.LockTemplate;
import io.github.dblock.wait.Backoff;
import org.jspecify.annotations.Nullable;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;

/**
 * Builds a {@link LockTemplate} on a MySQL or MariaDB {@link DataSource} without Spring Boot, with the same
 * defaults as the starter's {@code distributed-lock.*} properties:
 * <pre>{@code
 * LockTemplate locks = JdbcLockTemplateBuilder.forDataSource(dataSource).build();
 * try (LockHandle lock = locks.acquire("order-42")) {
 *     // exclusive across every JVM that uses the same database
 * }
 * }</pre>
 * {@link #build()} creates or upgrades the lock tables with the library's Flyway migrations (unless
 * {@link #createSchema(boolean) createSchema(false)}, which only checks that they exist), detects the server (MySQL
 * or MariaDB, and its dialect) and its topology (PESSIMISTIC is refused on a Galera cluster or a multi-primary group,
 * see {@link DatabaseTopology#pessimisticRefusal()}), and makes one provider per mode: LEASE, PESSIMISTIC (in
 * transactions of the given or a new {@link DataSourceTransactionManager}) and OPTIMISTIC. Lease renewals run on the
 * library's shared daemon threads.
 * <p>
 * Not thread-safe (configure it on one thread); the built template is thread-safe and meant to be shared.
 */
public final class JdbcLockTemplateBuilder {

	private final DataSource dataSource;

	private String tableName = "distributed_lock";

	private LockMode defaultMode = LockMode.LEASE;

	private Duration waitTime = Duration.ofSeconds(5);

	private Duration leaseTime = Duration.ofSeconds(30);

	private Duration statementTimeout = Duration.ofSeconds(5);

	private Duration initialBackoff = Duration.ofMillis(10);

	private Duration maxBackoff = Duration.ofMillis(200);

	private int pessimisticMaxConnections = 5;

	private int optimisticMaxAttempts = 5;

	private boolean createSchema = true;

	private @Nullable String nodeName;

	private @Nullable PlatformTransactionManager transactionManager;

	private JdbcLockTemplateBuilder(DataSource dataSource) {
		this.dataSource = Objects.requireNonNull(dataSource, "dataSource must not be null");
	}

	/**
	 * Starts a builder for locks in the given database.
	 * @param dataSource a pool of connections to MySQL 8.0+ or MariaDB 10.6+; not null
	 * @throws NullPointerException if the data source is null
	 */
	public static JdbcLockTemplateBuilder forDataSource(DataSource dataSource) {
		return new JdbcLockTemplateBuilder(dataSource);
	}

	/**
	 * The lock table's name ({@code distributed_lock} by default); the related tables take it as a prefix. Checked
	 * by {@link LockTable#of(String)} when built: letters, digits and underscores.
	 */
	public JdbcLockTemplateBuilder tableName(String tableName) {
		this.tableName = Objects.requireNonNull(tableName, "tableName must not be null");
		return this;
	}

	/** The mode of calls that do not choose one ({@link LockMode#LEASE} by default). */
	public JdbcLockTemplateBuilder defaultMode(LockMode defaultMode) {
		this.defaultMode = Objects.requireNonNull(defaultMode, "defaultMode must not be null");
		return this;
	}

	/** The wait time of calls that do not give one (5 s by default); zero for a single attempt. */
	public JdbcLockTemplateBuilder waitTime(Duration waitTime) {
		this.waitTime = Objects.requireNonNull(waitTime, "waitTime must not be null");
		return this;
	}

	/** The lease time of calls that do not give one, renewed every third of it while held (30 s by default). */
	public JdbcLockTemplateBuilder leaseTime(Duration leaseTime) {
		this.leaseTime = Objects.requireNonNull(leaseTime, "leaseTime must not be null");
		return this;
	}

	/** The bound of each lock statement (5 s by default); every reply is awaited at most this plus 2 s. */
	public JdbcLockTemplateBuilder statementTimeout(Duration statementTimeout) {
		this.statementTimeout = Objects.requireNonNull(statementTimeout, "statementTimeout must not be null");
		return this;
	}

	/** The pauses between attempts of a waiting call: from {@code initial} doubling to {@code max}, with jitter. */
	public JdbcLockTemplateBuilder backoff(Duration initial, Duration max) {
		this.initialBackoff = Objects.requireNonNull(initial, "initial must not be null");
		this.maxBackoff = Objects.requireNonNull(max, "max must not be null");
		return this;
	}

	/**
	 * How many PESSIMISTIC locks this JVM may hold or await at once on connections of their own (5 by default); keep
	 * it below the pool's size.
	 */
	public JdbcLockTemplateBuilder pessimisticMaxConnections(int maxConnections) {
		this.pessimisticMaxConnections = maxConnections;
		return this;
	}

	/** How often OPTIMISTIC work is run after a conflict (5 attempts by default). */
	public JdbcLockTemplateBuilder optimisticMaxAttempts(int maxAttempts) {
		this.optimisticMaxAttempts = maxAttempts;
		return this;
	}

	/**
	 * Whether {@link #build()} creates or upgrades the lock tables (the default) or only checks that they are
	 * current, for a user without DDL privileges.
	 */
	public JdbcLockTemplateBuilder createSchema(boolean createSchema) {
		this.createSchema = createSchema;
		return this;
	}

	/** How this JVM names itself in the {@code holder} column ({@code host/pid} by default). */
	public JdbcLockTemplateBuilder nodeName(String nodeName) {
		this.nodeName = Objects.requireNonNull(nodeName, "nodeName must not be null");
		return this;
	}

	/**
	 * The transaction manager of the data source, so that PESSIMISTIC and OPTIMISTIC locks join the application's
	 * transactions; by default a new {@link DataSourceTransactionManager}.
	 */
	public JdbcLockTemplateBuilder transactionManager(PlatformTransactionManager transactionManager) {
		this.transactionManager = Objects.requireNonNull(transactionManager, "transactionManager must not be null");
		return this;
	}

	/**
	 * Prepares the tables, inspects the server and builds the template.
	 * @return a new template; thread-safe
	 * @throws IllegalArgumentException if a setting is invalid (the message names it)
	 * @throws IllegalStateException if the default mode is refused on this database's topology
	 * @throws org.flywaydb.core.api.FlywayException if a migration fails
	 * @throws org.springframework.dao.DataAccessException if the database cannot be reached
	 */
	public LockTemplate build() {
		LockTable table = LockTable.of(this.tableName);
		if (this.createSchema) {
			LockSchema.migrate(this.dataSource, table);
		}
		else {
			LockSchema.validate(this.dataSource, table, "createSchema");
		}
		DatabaseServer server = DatabaseServer.detect(this.dataSource);
		LockDialect dialect = LockDialect.of(server);
		DatabaseTopology topology = DatabaseTopology.detect(this.dataSource, server);
		String refusal = topology.pessimisticRefusal();
		if (refusal != null && this.defaultMode == LockMode.PESSIMISTIC) {
			throw new IllegalStateException("The default mode PESSIMISTIC is refused: " + refusal);
		}
		PlatformTransactionManager transactions = (this.transactionManager != null) ? this.transactionManager
				: new DataSourceTransactionManager(this.dataSource);
		Backoff backoff = new Backoff(this.initialBackoff, this.maxBackoff);
		LeaseLockProvider lease = new LeaseLockProvider(this.dataSource, table, dialect, this.statementTimeout,
				this.initialBackoff, this.maxBackoff);
		lease.setMultiPrimary(topology.multiPrimaryCluster() != null);
		PessimisticLockProvider pessimistic = new PessimisticLockProvider(this.dataSource, table, dialect, transactions,
				this.statementTimeout, backoff, this.pessimisticMaxConnections);
		OptimisticLockProvider optimistic = new OptimisticLockProvider(this.dataSource, table, dialect, transactions,
				this.statementTimeout, backoff, this.optimisticMaxAttempts);
		LockTemplate template = new LockTemplate(List.of(lease, pessimistic, optimistic), this.defaultMode,
				this.waitTime, this.leaseTime, (this.nodeName != null) ? this.nodeName : defaultNodeName());
		if (refusal != null) {
			template.refuseMode(LockMode.PESSIMISTIC, refusal);
		}
		return template;
	}

	/** {@code host/pid}: the {@code HOSTNAME} variable or the local host name, and this process's id. */
	public static String defaultNodeName() {
		String host = System.getenv("HOSTNAME");
		if (host == null || host.isBlank()) {
			try {
				host = InetAddress.getLocalHost().getHostName();
			}
			catch (Exception ex) {
				host = "unknown-host";
			}
		}
		return host + "/" + ProcessHandle.current().pid();
	}

}
