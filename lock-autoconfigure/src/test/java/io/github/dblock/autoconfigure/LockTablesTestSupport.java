package io.github.dblock.autoconfigure;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The lock tables of auto-configuration tests that start applications on tables of their own: each test names its
 * tables with {@link #newTableName()}, and they are dropped after it with the tables the migrations create beside
 * them (schema history, semaphores, read/write locks, idempotency keys);
 * {@link #admin} (a pool of two on the test database, per test class) looks at them.
 */
abstract class LockTablesTestSupport {

	/** The tables the library's migrations create beside the lock table, by suffix. */
	private static final List<String> COMPANIONS = List.of("_schema_history", "_sem", "_sem_hold", "_rw", "_rw_hold",
			"_idem");

	static HikariDataSource adminPool;

	static JdbcTemplate admin;

	private final List<String> createdTables = new ArrayList<>();

	private final String tablePrefix;

	/** @param tablePrefix the start of the table names, a random suffix of 10 hex digits follows */
	LockTablesTestSupport(String tablePrefix) {
		this.tablePrefix = tablePrefix;
	}

	@BeforeAll
	static void openAdminPool() {
		adminPool = TestDatabase.get().newDataSource(2);
		admin = new JdbcTemplate(adminPool);
	}

	@AfterAll
	static void closeAdminPool() {
		if (adminPool != null) {
			adminPool.close();
		}
	}

	@AfterEach
	void dropCreatedTables() {
		for (String table : this.createdTables) {
			StringBuilder tables = new StringBuilder("`" + table + "`");
			for (String suffix : COMPANIONS) {
				tables.append(", `").append(table).append(suffix).append('`');
			}
			admin.execute("DROP TABLE IF EXISTS " + tables);
		}
	}

	/** A fresh table name, dropped (with the tables beside it) after the test. */
	String newTableName() {
		String name = this.tablePrefix + UUID.randomUUID().toString().replace("-", "").substring(0, 10);
		dropAfterTest(name);
		return name;
	}

	/** Drops {@code table} (with the tables beside it) after the test. */
	void dropAfterTest(String table) {
		this.createdTables.add(table);
	}

	/** Whether the test database has the table. */
	static boolean tableExists(String table) {
		Integer count = admin.queryForObject("SELECT COUNT(*) FROM information_schema.TABLES "
				+ "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", Integer.class, table);
		return count != null && count > 0;
	}

}
