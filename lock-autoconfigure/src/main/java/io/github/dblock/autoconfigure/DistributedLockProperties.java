package io.github.dblock.autoconfigure;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

import io.github.dblock.LockMode;
import io.github.dblock.jdbc.LockDialect;
import io.github.dblock.jdbc.LockTable;
import io.github.dblock.jdbc.PessimisticLockProvider;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.InitializingBean;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.core.Ordered;

/**
 * Configuration of distributed locks, under {@code distributed-lock.*}. Validated at start-up; an invalid value
 * stops the application with a message naming the property.
 */
@ConfigurationProperties(DistributedLockProperties.PREFIX)
public class DistributedLockProperties implements InitializingBean {

	/** The prefix of every property. */
	public static final String PREFIX = "distributed-lock";

	/** Default order of the lock advisor: smaller (outer) than the transaction advisor's default. */
	public static final int DEFAULT_INTERCEPTOR_ORDER = Ordered.LOWEST_PRECEDENCE - 100;

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

	private final Retry retry = new Retry();

	private final Pessimistic pessimistic = new Pessimistic();

	private final Optimistic optimistic = new Optimistic();

	private final Cleanup cleanup = new Cleanup();

	private final Metrics metrics = new Metrics();

	private final Flyway flyway = new Flyway();

	private final Interceptor interceptor = new Interceptor();

	private final Topology topology = new Topology();

	/**
	 * Initial permit count per semaphore name (distributed-lock.semaphores.<name>.permits, at least 1). Written to
	 * the database only when the semaphore has no row yet, so a run-time SemaphoreTemplate.setPermits is not undone
	 * by a restart.
	 */
	private final Map<String, Semaphore> semaphores = new LinkedHashMap<>();

	private final Idempotency idempotency = new Idempotency();

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

	public Retry getRetry() {
		return this.retry;
	}

	public Pessimistic getPessimistic() {
		return this.pessimistic;
	}

	public Optimistic getOptimistic() {
		return this.optimistic;
	}

	public Cleanup getCleanup() {
		return this.cleanup;
	}

	public Metrics getMetrics() {
		return this.metrics;
	}

	public Flyway getFlyway() {
		return this.flyway;
	}

	public Interceptor getInterceptor() {
		return this.interceptor;
	}

	public Topology getTopology() {
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

	public Idempotency getIdempotency() {
		return this.idempotency;
	}

	/**
	 * Checks every value.
	 * @throws InvalidConfigurationPropertyValueException naming the first invalid property
	 */
	@Override
	public void afterPropertiesSet() {
		checkLockDefaults();
		checkRetryAndModes();
		checkCleanupAndFlyway();
		checkSemaphores();
		checkIdempotency();
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

	private void checkRetryAndModes() {
		Duration initial = this.retry.getInitialBackoff();
		if (initial == null || initial.isNegative() || initial.isZero()) {
			throw invalid("retry.initial-backoff", initial, "must be positive");
		}
		if (this.retry.getMaxBackoff() == null || this.retry.getMaxBackoff().compareTo(initial) < 0) {
			throw invalid("retry.max-backoff", this.retry.getMaxBackoff(),
					"must be at least retry.initial-backoff (" + initial + ")");
		}
		if (this.pessimistic.getMaxConnections() != null && this.pessimistic.getMaxConnections() < 1) {
			throw invalid("pessimistic.max-connections", this.pessimistic.getMaxConnections(), "must be at least 1");
		}
		if (this.optimistic.getMaxAttempts() < 1) {
			throw invalid("optimistic.max-attempts", this.optimistic.getMaxAttempts(), "must be at least 1");
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

	private void checkIdempotency() {
		try {
			io.github.dblock.idempotency.IdempotencyOptions.checkRetention("retention", this.idempotency.getRetention());
		}
		catch (IllegalArgumentException ex) {
			throw invalid("idempotency.retention", this.idempotency.getRetention(),
					Objects.requireNonNullElse(ex.getMessage(), ex.toString()));
		}
		if (this.idempotency.getOnDuplicate() == null) {
			throw invalid("idempotency.on-duplicate", null, "must be set");
		}
		if (this.idempotency.getLeaseTime() != null) {
			try {
				io.github.dblock.idempotency.IdempotencyOptions.checkLeaseTime("lease time", this.idempotency.getLeaseTime());
			}
			catch (IllegalArgumentException ex) {
				throw invalid("idempotency.lease-time", this.idempotency.getLeaseTime(),
						Objects.requireNonNullElse(ex.getMessage(), ex.toString()));
			}
		}
	}

	private static InvalidConfigurationPropertyValueException invalid(String name, @Nullable Object value,
			String reason) {
		return new InvalidConfigurationPropertyValueException(PREFIX + "." + name, value, reason);
	}

	/** Pauses between acquisition attempts while waiting for a lease held elsewhere. */
	public static class Retry {

		/**
		 * First pause between attempts; each further pause doubles, with random jitter, up to max-backoff.
		 */
		private Duration initialBackoff = Duration.ofMillis(10);

		/**
		 * Longest pause between attempts.
		 */
		private Duration maxBackoff = Duration.ofMillis(200);

		public Duration getInitialBackoff() {
			return this.initialBackoff;
		}

		public void setInitialBackoff(Duration initialBackoff) {
			this.initialBackoff = initialBackoff;
		}

		public Duration getMaxBackoff() {
			return this.maxBackoff;
		}

		public void setMaxBackoff(Duration maxBackoff) {
			this.maxBackoff = maxBackoff;
		}

	}

	/** PESSIMISTIC mode. */
	public static class Pessimistic {

		/**
		 * How many PESSIMISTIC locks this JVM may hold or await at once on connections of their own (each pins a
		 * pooled connection and an open transaction); a caller beyond it waits for a slot within its wait time. Locks
		 * that join a caller's transaction do not count. Unset: the lock pool's HikariCP maximumPoolSize minus a
		 * reserve of a quarter of it (at least 2), at least 1; 5 when the pool is not HikariCP.
		 */
		private @Nullable Integer maxConnections;

		/**
		 * How long the server keeps a PESSIMISTIC holder's transaction (and the row lock) while the holder's session
		 * sends nothing, as when the holder hung or died without its connection closing; applied as the session's
		 * wait_timeout while the lock is held. Unset: the server's own wait_timeout (8 hours by default). A holder
		 * silent for longer loses the lock.
		 */
		private @Nullable Duration idleTimeout;

		/**
		 * How PESSIMISTIC acquisitions hand out fencing tokens. Both settings take the row with a locking read and use
		 * the server's UTC clock in microseconds, read after the row lock is granted, as the token; while the stored
		 * token is ahead of the clock (up to 100 ms) the acquisition waits for the clock to pass it. "durable": the
		 * token is written to the row, so it is strictly greater than every committed token of the resource in every
		 * mode whatever the clock does. "server-clock": nothing is written (no flush at the release). Both: strictly
		 * greater than the tokens of all earlier PESSIMISTIC holders of the resource, including holders that died
		 * before their release, as long as the server clock never steps back. Not ordered against LEASE or OPTIMISTIC
		 * on the same resource.
		 */
		private PessimisticLockProvider.Fencing fencing = PessimisticLockProvider.Fencing.DURABLE;

		public @Nullable Integer getMaxConnections() {
			return this.maxConnections;
		}

		public void setMaxConnections(@Nullable Integer maxConnections) {
			this.maxConnections = maxConnections;
		}

		public @Nullable Duration getIdleTimeout() {
			return this.idleTimeout;
		}

		public void setIdleTimeout(@Nullable Duration idleTimeout) {
			this.idleTimeout = idleTimeout;
		}

		public PessimisticLockProvider.Fencing getFencing() {
			return this.fencing;
		}

		public void setFencing(PessimisticLockProvider.Fencing fencing) {
			this.fencing = fencing;
		}

	}

	/** OPTIMISTIC mode. */
	public static class Optimistic {

		/**
		 * How many times the work may run before a conflict is reported as LockNotAcquiredException.
		 */
		private int maxAttempts = 5;

		public int getMaxAttempts() {
			return this.maxAttempts;
		}

		public void setMaxAttempts(int maxAttempts) {
			this.maxAttempts = maxAttempts;
		}

	}

	/** Observations and metrics. */
	public static class Metrics {

		/**
		 * Whether the resource name becomes a metric tag. Off by default because resource names are often unbounded
		 * (order numbers); switch it on only when the application locks a small, fixed set of resources.
		 */
		private boolean resourceTag = false;

		public boolean isResourceTag() {
			return this.resourceTag;
		}

		public void setResourceTag(boolean resourceTag) {
			this.resourceTag = resourceTag;
		}

	}

	/** Deletion of lock rows whose lease ended long ago. */
	public static class Cleanup {

		/**
		 * Whether to delete rows whose lease ended more than the retention ago, periodically, on one instance at a
		 * time.
		 */
		private boolean enabled = true;

		/**
		 * How long after its lease ended a row is kept (at least 1h; keep it far above any server clock step).
		 */
		private Duration retention = Duration.ofDays(7);

		/**
		 * How often the cleanup runs.
		 */
		private Duration interval = Duration.ofHours(1);

		/**
		 * How many rows one cleanup statement deletes at most.
		 */
		private int batchSize = 500;

		public boolean isEnabled() {
			return this.enabled;
		}

		public void setEnabled(boolean enabled) {
			this.enabled = enabled;
		}

		public Duration getRetention() {
			return this.retention;
		}

		public void setRetention(Duration retention) {
			this.retention = retention;
		}

		public Duration getInterval() {
			return this.interval;
		}

		public void setInterval(Duration interval) {
			this.interval = interval;
		}

		public int getBatchSize() {
			return this.batchSize;
		}

		public void setBatchSize(int batchSize) {
			this.batchSize = batchSize;
		}

	}

	/** The library's own Flyway migrations of the lock table. */
	public static class Flyway {

		/**
		 * Whether to create and upgrade the lock table with the library's own Flyway migrations. When false,
		 * start-up only checks that the table exists with the expected columns.
		 */
		private boolean enabled = true;

		/**
		 * JDBC URL of the database to migrate, when the migration runs with its own credentials. Defaults to the lock
		 * DataSource's URL (from its connection metadata); needs user.
		 */
		@Nullable
		private String url;

		/**
		 * Login user of the database to migrate: a DDL-capable account for the migration only, so that the lock
		 * DataSource's user needs just SELECT, INSERT, UPDATE and DELETE on the lock table. Unset: the migration runs
		 * on the lock DataSource.
		 */
		@Nullable
		private String user;

		/**
		 * Login password of the database to migrate; needs user.
		 */
		@Nullable
		private String password;

		public boolean isEnabled() {
			return this.enabled;
		}

		public void setEnabled(boolean enabled) {
			this.enabled = enabled;
		}

		@Nullable
		public String getUrl() {
			return this.url;
		}

		public void setUrl(@Nullable String url) {
			this.url = (url != null && !url.isBlank()) ? url.trim() : null;
		}

		@Nullable
		public String getUser() {
			return this.user;
		}

		public void setUser(@Nullable String user) {
			this.user = (user != null && !user.isBlank()) ? user.trim() : null;
		}

		@Nullable
		public String getPassword() {
			return this.password;
		}

		public void setPassword(@Nullable String password) {
			this.password = password;
		}

	}

	/** Start-up checks of the lock database's topology (read-only servers, replicas, multi-primary clusters). */
	public static class Topology {

		/**
		 * Whether what makes locks unsafe stops the application: a read-only server or connection or a replica fails
		 * start-up, and on a Galera cluster or multi-primary group PESSIMISTIC mode is refused. When false, these are
		 * only logged at WARN (for a proxy that answers the check from another server than the lock statements reach).
		 */
		private boolean enforce = true;

		public boolean isEnforce() {
			return this.enforce;
		}

		public void setEnforce(boolean enforce) {
			this.enforce = enforce;
		}

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

	/** The @DistributedLock method interceptor. */
	public static class Interceptor {

		/**
		 * Order of the @DistributedLock advisor. Must be smaller than the transaction advisor's order (Integer.MAX_VALUE
		 * by default) for the lock to be taken before the method's transaction begins and released after it ends.
		 */
		private int order = DEFAULT_INTERCEPTOR_ORDER;

		public int getOrder() {
			return this.order;
		}

		public void setOrder(int order) {
			this.order = order;
		}

	}

	/** Idempotency keys: {@code @Idempotent} and the {@code IdempotencyTemplate}. */
	public static class Idempotency {

		/**
		 * How long a completed idempotency record answers duplicates (from its completion, on the database server's
		 * clock) when a call gives no retention; then the key runs again and the cleanup job deletes the record.
		 */
		private Duration retention = Duration.ofHours(24);

		/** What a duplicate call gets once the key's work has succeeded: its recorded outcome, or an exception. */
		private io.github.dblock.idempotency.OnDuplicate onDuplicate = io.github.dblock.idempotency.OnDuplicate.RETURN_OUTCOME;

		/**
		 * The running lease of an idempotency claim, renewed every third of it while the work runs; after a crash,
		 * duplicates take the key over once it ends. Unset: distributed-lock.lease-time.
		 */
		@Nullable
		private Duration leaseTime;

		/**
		 * Order of the @Idempotent advisor. The default equals the transaction advisor's, and the advisor is
		 * registered after it, so it runs inside the method's transaction.
		 */
		private int order = Ordered.LOWEST_PRECEDENCE;

		public Duration getRetention() {
			return this.retention;
		}

		public void setRetention(Duration retention) {
			this.retention = retention;
		}

		public io.github.dblock.idempotency.OnDuplicate getOnDuplicate() {
			return this.onDuplicate;
		}

		public void setOnDuplicate(io.github.dblock.idempotency.OnDuplicate onDuplicate) {
			this.onDuplicate = onDuplicate;
		}

		@Nullable
		public Duration getLeaseTime() {
			return this.leaseTime;
		}

		public void setLeaseTime(@Nullable Duration leaseTime) {
			this.leaseTime = leaseTime;
		}

		public int getOrder() {
			return this.order;
		}

		public void setOrder(int order) {
			this.order = order;
		}

	}

}
