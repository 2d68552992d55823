package io.github.dblock.autoconfigure;

import javax.sql.DataSource;

import io.github.dblock.jdbc.DatabaseServer;
import io.github.dblock.jdbc.LockSchema;
import io.github.dblock.jdbc.LockTable;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.beans.factory.InitializingBean;

/**
 * Runs at start-up, before any lock bean is used: checks that the lock data source is MySQL or MariaDB, then
 * migrates the lock table (or validates it when {@code distributed-lock.flyway.enabled=false}).
 */
public class LockSchemaInitializer implements InitializingBean {

	private static final Log logger = LogFactory.getLog(LockSchemaInitializer.class);

	private final DataSource dataSource;

	private final LockTable table;

	private final boolean migrate;

	private DatabaseServer server;

	public LockSchemaInitializer(DataSource dataSource, LockTable table, boolean migrate) {
		this.dataSource = dataSource;
		this.table = table;
		this.migrate = migrate;
	}

	@Override
	public void afterPropertiesSet() {
		this.server = DatabaseServer.detect(this.dataSource);
		if (!this.server.isSupportedVersion()) {
			logger.warn("Distributed locks are tested on MySQL 8.0+ and MariaDB 10.6+; the lock database is " + this.server);
		}
		if (this.migrate) {
			LockSchema.migrate(this.dataSource, this.table);
		}
		else {
			LockSchema.validate(this.dataSource, this.table, DistributedLockProperties.PREFIX + ".flyway.enabled");
		}
		logger.debug("Lock table '" + this.table + "' ready on " + this.server);
	}

	/** The server found at start-up. */
	public DatabaseServer getServer() {
		return this.server;
	}

	/** The data source holding the lock table. */
	public DataSource getDataSource() {
		return this.dataSource;
	}

	/** The lock table. */
	public LockTable getTable() {
		return this.table;
	}

}
