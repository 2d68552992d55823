package io.github.dblock.autoconfigure;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

import io.github.dblock.LockMode;
import io.github.dblock.interceptor.DistributedLocksConfiguration;
import io.github.dblock.jdbc.sql.LockDialect;
import io.github.dblock.jdbc.sql.LockTable;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.InitializingBean;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.NestedConfigurationProperty;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;

/**
 * Configuration of distributed locks, under {@code distributed-lock.*}: the lock defaults here, each group of
 * settings in a class of its own named after its key ({@code distributed-lock.retry.*} in
 * {@link DistributedLockRetryProperties}, {@code distributed-lock.pessimistic.*} in
 * {@link DistributedLockPessimisticProperties}, and so on). Every value, the groups' included, is validated here at
 * start-up; an invalid value stops the application with a message naming the property.
 */
@ConfigurationProperties(DistributedLockProperties.PREFIX)
public class DistributedLockProperties implements InitializingBean {

	/** The prefix of every property. */
	public static final String PREFIX = InvalidProperty.PREFIX;

	/** Default order of the lock advisor: smaller (outer) than the transaction advisor's default. */
	public static final int DEFAULT_INTERCEPTOR_ORDER = DistributedLocksConfiguration.DEFAULT_INTERCEPTOR_ORDER;

	/**
	 * Whether to enable distributed locks (the LockTemplate bean and @DistributedLock interception).
	 */
	private boolean enabled = true;

	/**
	 * Name of the lock table: a plain SQL identifier of at most 48 characters.
	 */
	private String tableName = "distributed_lock";

	/**
	 * Lock mode used when a call or annotation does not choose one.
	 */
	private LockMode mode = LockMode.LEASE;

	/**
	 * How long to wait for a lock held by another owner when a call or annotation does not say. Zero makes a
	 * single attempt.
	 */
	private Duration waitTime = Duration.ofSeconds(5);

	/**
	 * How long a lock stays valid, on the database server's clock, when a call or annotation does not give a lease
	 * time. Such LEASE locks are renewed in the background every third of this while held. At least 1s, at
	 * most 36500d.
	 */
	private Duration leaseTime = Duration.ofSeconds(30);

	/**
	 * Describes this application instance in the lock table's holder column and in error messages. Defaults to
	 * the host name and process id.
	 */
	@Nullable
	private String nodeName;

	/**
	 * Whether to interrupt the thread holding a lock when the lock is found lost while held (a renewal found the
	 * lease expired or taken over), so that interruptible work stops early.
	 */
	private boolean interruptOnLoss = false;

	/**
	 * Whether a transaction on the lock data source that runs while its thread holds a LEASE lock commits only while
	 * that lock is held: one locking read of the lock row before each commit.
	 */
	private boolean validateAtCommit = true;

	/**
	 * Upper bound of the query timeout of every lock statement (JDBC counts whole seconds; at least 1s).
	 */
	private Duration statementTimeout = Duration.ofSeconds(5);

	/**
	 * Name of the DataSource bean that holds the lock table, when the application has several. Takes precedence
	 * over a @LockDataSource qualifier; without either, the single or @Primary DataSource is used.
	 */
	@Nullable
	private String datasource;

	/**
	 * SQL dialect of the lock database; detected from the server's version when not set.
	 */
	@Nullable
	private LockDialect dialect;

	@NestedConfigurationProperty
	private final DistributedLockRetryProperties retry = new DistributedLockRetryProperties();

	@NestedConfigurationProperty
	private final DistributedLockPessimisticProperties pessimistic = new DistributedLockPessimisticProperties();

	@NestedConfigurationProperty
	private final DistributedLockOptimisticProperties optimistic = new DistributedLockOptimisticProperties();

	@NestedConfigurationProperty
	private final DistributedLockCleanupProperties cleanup = new DistributedLockCleanupProperties();

	@NestedConfigurationProperty
	private final DistributedLockMetricsProperties metrics = new DistributedLockMetricsProperties();

	@NestedConfigurationProperty
	private final DistributedLockFlywayProperties flyway = new DistributedLockFlywayProperties();

	@NestedConfigurationProperty
	private final DistributedLockInterceptorProperties interceptor = new DistributedLockInterceptorProperties();

	@NestedConfigurationProperty
	private final DistributedLockTopologyProperties topology = new DistributedLockTopologyProperties();

	/**
	 * Initial permit count per semaphore name (distributed-lock.semaphores.<name>.permits, at least 1). Written to
	 * the database only when the semaphore has no row yet, so a run-time SemaphoreTemplate.setPermits is not undone
	 * by a restart.
	 */
	private final Map<String, Semaphore> semaphores = new LinkedHashMap<>();

	@NestedConfigurationProperty
	private final DistributedLockIdempotencyProperties idempotency = new DistributedLockIdempotencyProperties();

	public boolean isEnabled() {
		return this.enabled;
	}

	public void setEnabled(boolean enabled) {
		this.enabled = enabled;
	}

	public String getTableName() {
		return this.tableName;
	}

	public void setTableName(String tableName) {
		this.tableName = tableName;
	}

	public LockMode getMode() {
		return this.mode;
	}

	public void setMode(LockMode mode) {
		this.mode = mode;
	}

	public Duration getWaitTime() {
		return this.waitTime;
	}

	public void setWaitTime(Duration waitTime) {
		this.waitTime = waitTime;
	}

	public Duration getLeaseTime() {
		return this.leaseTime;
	}

	public void setLeaseTime(Duration leaseTime) {
		this.leaseTime = leaseTime;
	}

	@Nullable
	public String getNodeName() {
		return this.nodeName;
	}

	public void setNodeName(@Nullable String nodeName) {
		this.nodeName = nodeName;
	}

	public boolean isInterruptOnLoss() {
		return this.interruptOnLoss;
	}

	public void setInterruptOnLoss(boolean interruptOnLoss) {
		this.interruptOnLoss = interruptOnLoss;
	}

	public boolean isValidateAtCommit() {
		return this.validateAtCommit;
	}

	public void setValidateAtCommit(boolean validateAtCommit) {
		this.validateAtCommit = validateAtCommit;
	}

	public Duration getStatementTimeout() {
		return this.statementTimeout;
	}

	public void setStatementTimeout(Duration statementTimeout) {
		this.statementTimeout = statementTimeout;
	}

	@Nullable
	public String getDatasource() {
		return this.datasource;
	}

	public void setDatasource(@Nullable String datasource) {
		this.datasource = (datasource != null && !datasource.isBlank()) ? datasource.trim() : null;
	}

	@Nullable
	public LockDialect getDialect() {
		return this.dialect;
	}

	public void setDialect(@Nullable LockDialect dialect) {
		this.dialect = dialect;
	}

	/** The {@code distributed-lock.retry.*} settings (never null; bound in place). */
	public DistributedLockRetryProperties getRetry() {
		return this.retry;
	}

	/** The {@code distributed-lock.pessimistic.*} settings (never null; bound in place). */
	public DistributedLockPessimisticProperties getPessimistic() {
		return this.pessimistic;
	}

	/** The {@code distributed-lock.optimistic.*} settings (never null; bound in place). */
	public DistributedLockOptimisticProperties getOptimistic() {
		return this.optimistic;
	}

	/** The {@code distributed-lock.cleanup.*} settings (never null; bound in place). */
	public DistributedLockCleanupProperties getCleanup() {
		return this.cleanup;
	}

	/** The {@code distributed-lock.metrics.*} settings (never null; bound in place). */
	public DistributedLockMetricsProperties getMetrics() {
		return this.metrics;
	}

	/** The {@code distributed-lock.flyway.*} settings (never null; bound in place). */
	public DistributedLockFlywayProperties getFlyway() {
		return this.flyway;
	}

	/** The {@code distributed-lock.interceptor.*} settings (never null; bound in place). */
	public DistributedLockInterceptorProperties getInterceptor() {
		return this.interceptor;
	}

	/** The {@code distributed-lock.topology.*} settings (never null; bound in place). */
	public DistributedLockTopologyProperties getTopology() {
		return this.topology;
	}

	public Map<String, Semaphore> getSemaphores() {
		return this.semaphores;
	}

	/** The configured initial permit counts by semaphore name. */
	public Map<String, Integer> semaphorePermits() {
		Map<String, Integer> permits = new LinkedHashMap<>();
		this.semaphores.forEach((name, semaphore) -> permits.put(name, semaphore.getPermits()));
		return permits;
	}

	/** The {@code distributed-lock.idempotency.*} settings (never null; bound in place). */
	public DistributedLockIdempotencyProperties getIdempotency() {
		return this.idempotency;
	}

	/**
	 * Checks every value.
	 * @throws InvalidConfigurationPropertyValueException naming the first invalid property
	 */
	@Override
	public void afterPropertiesSet() {
		checkLockDefaults();
		this.retry.check();
		this.pessimistic.check();
		this.optimistic.check();
		checkCleanupAndFlyway();
		checkSemaphores();
		this.idempotency.check();
	}

	private void checkLockDefaults() {
		try {
			LockTable.of(this.tableName);
		}
		catch (IllegalArgumentException ex) {
			throw invalid("table-name", this.tableName, Objects.requireNonNullElse(ex.getMessage(), ex.toString()));
		}
		if (this.mode == null) {
			throw invalid("mode", null, "must be set");
		}
		if (this.waitTime == null || this.waitTime.isNegative()) {
			throw invalid("wait-time", this.waitTime, "must be zero (a single attempt) or positive");
		}
		if (this.leaseTime == null || this.leaseTime.compareTo(io.github.dblock.LockTemplate.MIN_DEFAULT_LEASE_TIME) < 0) {
			throw invalid("lease-time", this.leaseTime, "must be at least 1s (such leases are renewed every third of it "
					+ "while held, and a renewal must reach the database in time)");
		}
		if (this.leaseTime.compareTo(io.github.dblock.LockOptions.MAX_LEASE_TIME) > 0) {
			throw invalid("lease-time", this.leaseTime, "must be at most 36500d (about 100 years)");
		}
		if (this.nodeName != null && this.nodeName.isBlank()) {
			throw invalid("node-name", this.nodeName, "must not be blank (leave it unset for host/pid)");
		}
		if (this.statementTimeout == null || this.statementTimeout.compareTo(Duration.ofSeconds(1)) < 0) {
			throw invalid("statement-timeout", this.statementTimeout, "must be at least 1s (JDBC counts seconds)");
		}
	}

	private void checkCleanupAndFlyway() {
		if (this.cleanup.getRetention() == null || this.cleanup.getRetention().compareTo(Duration.ofHours(1)) < 0) {
			throw invalid("cleanup.retention", this.cleanup.getRetention(), "must be at least 1h");
		}
		if (this.cleanup.getInterval() == null || this.cleanup.getInterval().compareTo(Duration.ofSeconds(10)) < 0) {
			throw invalid("cleanup.interval", this.cleanup.getInterval(), "must be at least 10s");
		}
		if (this.flyway.getUser() == null) {
			if (this.flyway.getUrl() != null) {
				throw invalid("flyway.url", this.flyway.getUrl(), "needs distributed-lock.flyway.user as well");
			}
			if (this.flyway.getPassword() != null) {
				throw invalid("flyway.password", "******", "needs distributed-lock.flyway.user as well");
			}
		}
		if (this.flyway.getUrl() != null && !this.flyway.getUrl().startsWith("jdbc:")) {
			throw invalid("flyway.url", this.flyway.getUrl(), "must be a JDBC URL (jdbc:mysql://… or jdbc:mariadb://…)");
		}
		if (this.cleanup.getBatchSize() < 1 || this.cleanup.getBatchSize() > 10_000) {
			throw invalid("cleanup.batch-size", this.cleanup.getBatchSize(), "must be between 1 and 10000");
		}
	}

	private void checkSemaphores() {
		this.semaphores.forEach((name, semaphore) -> {
			try {
				io.github.dblock.LockTemplate.validateResource(name);
			}
			catch (IllegalArgumentException ex) {
				throw invalid("semaphores." + name, name, "is not a valid semaphore name: " + ex.getMessage());
			}
			if (semaphore.getPermits() == null || semaphore.getPermits() < 1) {
				throw invalid("semaphores." + name + ".permits", semaphore.getPermits(), "must be at least 1");
			}
		});
	}


	private static InvalidConfigurationPropertyValueException invalid(String name, @Nullable Object value,
			String reason) {
		return InvalidProperty.invalid(name, value, reason);
	}

	/** One semaphore's configuration. */
	public static class Semaphore {

		/**
		 * Initial permit count: how many holders the semaphore admits at once until changed at run time.
		 */
		@Nullable
		private Integer permits;

		@Nullable
		public Integer getPermits() {
			return this.permits;
		}

		public void setPermits(@Nullable Integer permits) {
			this.permits = permits;
		}

	}

}
