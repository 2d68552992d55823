package io.github.dblock.contract;

import javax.sql.DataSource;

import io.github.dblock.LockMode;
import io.github.dblock.jdbc.sql.LockDialect;
import io.github.dblock.spi.LockProvider;
import io.github.dblock.test.nodes.LockNodes;

/**
 * The PESSIMISTIC contract with the MySQL dialect's statements ({@code FOR UPDATE NOWAIT}, session lock wait
 * timeout), which MariaDB also accepts: on a MariaDB test server this exercises the MySQL code path too.
 */
class PessimisticMySqlDialectContractTests extends PessimisticLockContractTests {

	@Override
	protected LockProvider provider(DataSource dataSource) {
		return LockNodes.provider(LockMode.PESSIMISTIC, dataSource, LockDialect.MYSQL);
	}

}
