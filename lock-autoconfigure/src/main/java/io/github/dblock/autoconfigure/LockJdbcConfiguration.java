package io.github.dblock.autoconfigure;

import io.github.dblock.jdbc.JdbcLockTemplateBuilder;
import io.github.dblock.jdbc.admin.LockTableAdmin;
import java.lang.reflect.Method;
import java.util.List;

import javax.sql.DataSource;

import io.github.dblock.CommitValidation;
import io.github.dblock.LockTemplate;
import io.github.dblock.interceptor.LockAttributeSource;
import io.github.dblock.interceptor.SkippedOutcomeFilter;
import io.github.dblock.jdbc.lease.LeaseLockProvider;
import io.github.dblock.jdbc.sql.LockDialect;
import io.github.dblock.jdbc.sql.LockTable;
import io.github.dblock.jdbc.admin.LockTableCleaner;
import io.github.dblock.jdbc.optimistic.OptimisticLockProvider;
import io.github.dblock.jdbc.pessimistic.PessimisticLockProvider;
import io.github.dblock.spi.LockProvider;
import io.github.dblock.wait.Backoff;
import io.micrometer.observation.ObservationRegistry;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.ConfigurableTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.ResourceTransactionManager;
import org.springframework.util.ReflectionUtils;

/**
 * The lock table, the providers and the {@link LockTemplate}.
 */
@Configuration(proxyBeanMethods = false)
class LockJdbcConfiguration {

	private static final org.apache.commons.logging.Log logger = org.apache.commons.logging.LogFactory
		.getLog(LockJdbcConfiguration.class);

	@Bean
	@ConditionalOnMissingBean
	LockSchemaInitializer distributedLockSchemaInitializer(DistributedLockProperties properties,
			@LockDataSource ObjectProvider<DataSource> lockDataSource, ObjectProvider<DataSource> dataSources,
			ListableBeanFactory beanFactory) {
		DataSource dataSource = (properties.getDatasource() != null) ? named(beanFactory, properties.getDatasource())
				: resolve(lockDataSource, dataSources);
		LockSchemaInitializer initializer = new LockSchemaInitializer(dataSource, LockTable.of(properties.getTableName()),
				properties.getFlyway().isEnabled());
		initializer.setEnforceTopology(properties.getTopology().isEnforce());
		DistributedLockFlywayProperties flyway = properties.getFlyway();
		initializer.setMigrationCredentials(flyway.getUrl(), flyway.getUser(), flyway.getPassword());
		return initializer;
	}

	/**
	 * The data source bean named by {@code distributed-lock.datasource}.
	 * @throws org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException if there
	 * is no such bean, listing the data source beans there are
	 */
	static DataSource named(ListableBeanFactory beanFactory, String name) {
		if (!beanFactory.containsBean(name) || !beanFactory.isTypeMatch(name, DataSource.class)) {
			throw new org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException(
					DistributedLockProperties.PREFIX + ".datasource", name, "there is no DataSource bean of that name; "
							+ "DataSource beans: " + java.util.Arrays.toString(beanFactory.getBeanNamesForType(DataSource.class)));
		}
		return beanFactory.getBean(name, DataSource.class);
	}

	/** Checks the lock pool's size and timeouts against the lock settings once all singletons exist. */
	@Bean
	LockPoolChecks distributedLockPoolChecks(DistributedLockProperties properties, LockSchemaInitializer schema,
			ObjectProvider<LockAttributeSource> attributes) {
		return new LockPoolChecks(schema.getDataSource(), properties, () -> {
			LockAttributeSource source = attributes.getIfAvailable();
			return (source != null) ? source.getParsedAttributes() : List.of();
		}, !schema.getRefusedModes().containsKey(io.github.dblock.LockMode.PESSIMISTIC));
	}

	/**
	 * Read-only access to the lock table for application code ({@link LockTableAdmin#isLocked(String)},
	 * {@link LockTableAdmin#find(String)}), also used by the Actuator endpoint when Actuator is present.
	 */
	@Bean
	@ConditionalOnMissingBean
	io.github.dblock.jdbc.admin.LockTableAdmin distributedLockTableAdmin(DistributedLockProperties properties,
			LockSchemaInitializer schema) {
		return new io.github.dblock.jdbc.admin.LockTableAdmin(schema.getDataSource(), schema.getTable(),
				properties.getStatementTimeout());
	}

	@Bean
	@ConditionalOnMissingBean
	LeaseLockProvider leaseLockProvider(DistributedLockProperties properties, LockSchemaInitializer schema) {
		LockDialect dialect = LockDialect.resolve(properties.getDialect(), schema.getServer());
		LeaseLockProvider provider = new LeaseLockProvider(schema.getDataSource(), schema.getTable(), dialect,
				properties.getStatementTimeout(), properties.getRetry().getInitialBackoff(),
				properties.getRetry().getMaxBackoff());
		// a locking read is not certified across a multi-primary cluster: commit-time validation writes the row there
		provider.setMultiPrimary(schema.getTopology() != null && schema.getTopology().multiPrimaryCluster() != null);
		return provider;
	}

	/**
	 * Registers commit-time validation when a transaction begins on any transaction manager (for a lock taken before
	 * its transaction, as by {@code @DistributedLock} on a {@code @Transactional} method); see {@link CommitValidation}.
	 */
	@Bean
	@ConditionalOnBooleanProperty(name = DistributedLockProperties.PREFIX + ".validate-at-commit", matchIfMissing = true)
	static CommitValidation distributedLockCommitValidation() {
		return new CommitValidation();
	}

	/** Adds {@link CommitValidation} to every {@link ConfigurableTransactionManager} that does not have it yet. */
	@Bean
	@ConditionalOnBooleanProperty(name = DistributedLockProperties.PREFIX + ".validate-at-commit", matchIfMissing = true)
	static BeanPostProcessor distributedLockCommitValidationRegistrar(ObjectProvider<CommitValidation> validation) {
		return new BeanPostProcessor() {
			@Override
			public Object postProcessAfterInitialization(Object bean, String beanName) {
				if (bean instanceof ConfigurableTransactionManager manager) {
					CommitValidation listener = validation.getObject();
					if (manager.getTransactionExecutionListeners().stream().noneMatch(CommitValidation.class::isInstance)) {
						manager.addListener(listener);
					}
				}
				return bean;
			}
		};
	}

	@Bean
	@ConditionalOnMissingBean
	PessimisticLockProvider pessimisticLockProvider(DistributedLockProperties properties, LockSchemaInitializer schema,
			ObjectProvider<PlatformTransactionManager> transactionManagers) {
		DataSource dataSource = schema.getDataSource();
		LockDialect dialect = LockDialect.resolve(properties.getDialect(), schema.getServer());
		PessimisticLockProvider provider = new PessimisticLockProvider(dataSource, schema.getTable(), dialect,
				transactionManager(transactionManagers, dataSource), properties.getStatementTimeout(), backoff(properties),
				LockPoolChecks.maxConnections(properties, dataSource));
		provider.setIdleTimeout(properties.getPessimistic().getIdleTimeout());
		provider.setFencing(properties.getPessimistic().getFencing());
		return provider;
	}

	@Bean
	@ConditionalOnMissingBean
	OptimisticLockProvider optimisticLockProvider(DistributedLockProperties properties, LockSchemaInitializer schema,
			ObjectProvider<PlatformTransactionManager> transactionManagers) {
		DataSource dataSource = schema.getDataSource();
		return new OptimisticLockProvider(dataSource, schema.getTable(),
				LockDialect.resolve(properties.getDialect(), schema.getServer()),
				transactionManager(transactionManagers, dataSource), properties.getStatementTimeout(), backoff(properties),
				properties.getOptimistic().getMaxAttempts());
	}

	private static Backoff backoff(DistributedLockProperties properties) {
		return new Backoff(properties.getRetry().getInitialBackoff(), properties.getRetry().getMaxBackoff());
	}

	/**
	 * The application's transaction manager that manages the lock data source (a {@code DataSourceTransactionManager}
	 * or a JPA/Hibernate one exposing {@code getDataSource()}), so that PESSIMISTIC and OPTIMISTIC locks share the
	 * application's transactions on it; without one (for example a dedicated {@code @LockDataSource} pool), a private
	 * {@link DataSourceTransactionManager} for the lock data source, so that the lock's transaction commits after the
	 * method's own transaction on the other data source.
	 */
	static PlatformTransactionManager transactionManager(ObjectProvider<PlatformTransactionManager> transactionManagers,
			DataSource dataSource) {
		return transactionManagers.orderedStream()
			.filter((manager) -> manages(manager, dataSource))
			.findFirst()
			.orElseGet(() -> new DataSourceTransactionManager(dataSource));
	}

	private static boolean manages(PlatformTransactionManager manager, DataSource dataSource) {
		if (manager instanceof ResourceTransactionManager resources && resources.getResourceFactory() == dataSource) {
			return true;
		}
		Method getter = ReflectionUtils.findMethod(manager.getClass(), "getDataSource");
		if (getter == null || !DataSource.class.isAssignableFrom(getter.getReturnType())) {
			return false;
		}
		return ReflectionUtils.invokeMethod(getter, manager) == dataSource;
	}

	@Bean
	@ConditionalOnMissingBean
	LockTemplate lockTemplate(DistributedLockProperties properties, ObjectProvider<LockProvider> providers,
			ObjectProvider<ObservationRegistry> observations, LockSchemaInitializer schema,
			ObjectProvider<DataSource> dataSources) {
		String refusal = schema.getRefusedModes().get(properties.getMode());
		if (refusal != null) {
			throw new InvalidConfigurationPropertyValueException(DistributedLockProperties.PREFIX + ".mode",
					properties.getMode(), "refused on this database: " + refusal);
		}
		List<LockProvider> all = providers.orderedStream().toList();
		String nodeName = (properties.getNodeName() != null) ? properties.getNodeName() : defaultNodeName();
		LockTemplate template = new LockTemplate(all, properties.getMode(), properties.getWaitTime(),
				properties.getLeaseTime(), nodeName);
		template.setInterruptOnLoss(properties.isInterruptOnLoss());
		template.setValidateAtCommit(properties.isValidateAtCommit());
		if (properties.isValidateAtCommit() && logger.isDebugEnabled()) {
			logger.debug(commitValidationScope(schema.getDataSource(), dataSources.getIfUnique()));
		}
		observations.ifAvailable((registry) -> {
			// a busy lock under onFailure = SKIP is reported as outcome=skipped, not timed_out
			registry.observationConfig().observationFilter(SkippedOutcomeFilter.INSTANCE);
			template.setObservationRegistry(registry);
		});
		template.setResourceAsTag(properties.getMetrics().isResourceTag());
		schema.getRefusedModes().forEach(template::refuseMode);
		LockDialect dialect = LockDialect.resolve(properties.getDialect(), schema.getServer());
		logger.info("Distributed locks: mode " + properties.getMode() + ", table '" + schema.getTable() + "' ("
				+ schema.getSchemaStatus() + "), node '" + nodeName + "', dialect " + dialect + ", server "
				+ schema.getServer());
		return template;
	}

	@Bean
	@ConditionalOnMissingBean
	@ConditionalOnBooleanProperty(name = DistributedLockProperties.PREFIX + ".cleanup.enabled", matchIfMissing = true)
	LockTableCleanupJob lockTableCleanupJob(DistributedLockProperties properties, LockSchemaInitializer schema,
			LockTemplate lockTemplate) {
		DistributedLockCleanupProperties cleanup = properties.getCleanup();
		LockTableCleaner cleaner = new LockTableCleaner(schema.getDataSource(), schema.getTable(), cleanup.getRetention(),
				cleanup.getBatchSize(), properties.getStatementTimeout());
		LockTableCleaner idempotencyRecords = LockTableCleaner.forIdempotencyRecords(schema.getDataSource(),
				schema.getTable(), cleanup.getBatchSize(), properties.getStatementTimeout());
		return new LockTableCleanupJob(List.of(cleaner, idempotencyRecords), lockTemplate, cleanup.getInterval());
	}

	/**
	 * Says to which transactions commit-time validation applies: those on the lock data source only, so none of the
	 * application's when the lock table has a data source of its own.
	 */
	static String commitValidationScope(DataSource lockDataSource, @org.jspecify.annotations.Nullable DataSource application) {
		if (application != null && application != lockDataSource) {
			return "Commit-time validation (distributed-lock.validate-at-commit) cannot apply to transactions on the "
					+ "application's data source " + application + ": the lock table is on a separate data source ("
					+ lockDataSource + "), which such a transaction cannot lock; only transactions on the lock data "
					+ "source are checked. Protect writes elsewhere with fencing tokens";
		}
		return "Commit-time validation (distributed-lock.validate-at-commit) applies to transactions on the lock data "
				+ "source " + lockDataSource + "; transactions on other data sources are not checked";
	}

	/**
	 * The {@code @LockDataSource} one if present, else the single or primary data source.
	 * @throws IllegalStateException if there are several data sources and none is chosen
	 */
	static DataSource resolve(ObjectProvider<DataSource> lockDataSource, ObjectProvider<DataSource> dataSources) {
		DataSource qualified = lockDataSource.getIfAvailable();
		if (qualified != null) {
			return qualified;
		}
		DataSource unique = dataSources.getIfUnique();
		if (unique == null) {
			throw new IllegalStateException("Distributed locks need one DataSource, but there are several and none "
					+ "is @Primary. Mark the one holding the lock table with @LockDataSource.");
		}
		return unique;
	}

	static String defaultNodeName() {
		return io.github.dblock.jdbc.JdbcLockTemplateBuilder.defaultNodeName();
	}

}
