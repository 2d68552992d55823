package io.github.dblock.benchmarks;

import javax.sql.DataSource;

import io.github.dblock.jdbc.sql.LockSchema;
import io.github.dblock.jdbc.sql.LockTable;

/**
 * Creates the tables of a run from scratch: our lock table with 1,000 rows and a large one, ShedLock's
 * {@code shedlock} table (its documented MySQL DDL), Spring Integration's {@code INT_LOCK} (from
 * {@code schema-mysql.sql} in spring-integration-jdbc) and the baseline table. Resource {@code i} is named
 * {@code r-i}.
 */
public final class BenchSchema {

	/** Our lock table with {@link #SMALL_ROWS} rows. */
	public static final LockTable SMALL = LockTable.of("bench_lock");

	/** Our lock table with the run's large row count. */
	public static final LockTable LARGE = LockTable.of("bench_lock_large");

	/** Rows of the small table, the baseline table and ShedLock's table. */
	public static final int SMALL_ROWS = 1_000;

	private BenchSchema() {
	}

	/** Drops and creates every table; the large one gets {@code largeRows} rows. */
	public static void create(BenchDatabase db, DataSource dataSource, int largeRows) {
		db.execute("DROP TABLE IF EXISTS bench_lock, bench_lock_schema_history, bench_lock_rw, bench_lock_rw_hold, "
				+ "bench_lock_sem, bench_lock_sem_hold, bench_lock_idem, bench_lock_large, bench_lock_large_schema_history, "
				+ "bench_lock_large_rw, bench_lock_large_rw_hold, bench_lock_large_sem, bench_lock_large_sem_hold, "
				+ "bench_lock_large_idem, shedlock, INT_LOCK, bench_baseline, bench_raw_lease, bench_digits");
		LockSchema.migrate(dataSource, SMALL);
		LockSchema.migrate(dataSource, LARGE);
		db.execute("CREATE TABLE bench_digits (d INT PRIMARY KEY)",
				"INSERT INTO bench_digits VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9)",
				"CREATE TABLE shedlock (name VARCHAR(64) NOT NULL, lock_until TIMESTAMP(3) NOT NULL, "
						+ "locked_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3), locked_by VARCHAR(255) NOT NULL, "
						+ "PRIMARY KEY (name))",
				"CREATE TABLE INT_LOCK (LOCK_KEY CHAR(36) NOT NULL, REGION VARCHAR(100) NOT NULL, CLIENT_ID CHAR(36), "
						+ "CREATED_DATE DATETIME(6) NOT NULL, EXPIRED_AFTER DATETIME(6) NOT NULL, "
						+ "constraint INT_LOCK_PK primary key (LOCK_KEY, REGION)) ENGINE=InnoDB",
				"CREATE TABLE bench_baseline (id VARCHAR(64) NOT NULL PRIMARY KEY, owner CHAR(36) NULL, "
						+ "expires_at DATETIME(6) NOT NULL) ENGINE=InnoDB",
				"CREATE TABLE bench_raw_lease (name VARCHAR(64) NOT NULL PRIMARY KEY, owner CHAR(36) NOT NULL, "
						+ "expires_at DATETIME(6) NOT NULL) ENGINE=InnoDB");
		String numbers = "SELECT CONCAT('r-', a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d + 100000 * g.d) AS id "
				+ "FROM bench_digits a, bench_digits b, bench_digits c, bench_digits e, bench_digits f, bench_digits g";
		String below = " WHERE a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d + 100000 * g.d < ";
		db.execute(
				"INSERT INTO bench_lock (resource, owner_token, holder, fencing_token, acquired_at, expires_at) "
						+ "SELECT id, NULL, NULL, 1, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) FROM (" + numbers + below + SMALL_ROWS
						+ ") n",
				"INSERT INTO bench_lock_large (resource, owner_token, holder, fencing_token, acquired_at, expires_at) "
						+ "SELECT id, NULL, NULL, 1, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) FROM (" + numbers + below + largeRows
						+ ") n",
				"INSERT INTO bench_baseline (id, owner, expires_at) SELECT id, NULL, UTC_TIMESTAMP(6) FROM (" + numbers
						+ below + SMALL_ROWS + ") n",
				"INSERT INTO shedlock (name, lock_until, locked_at, locked_by) SELECT id, UTC_TIMESTAMP(3), "
						+ "UTC_TIMESTAMP(3), 'setup' FROM (" + numbers + below + SMALL_ROWS + ") n",
				"ANALYZE TABLE bench_lock, bench_lock_large, bench_baseline, bench_raw_lease, shedlock");
	}

}
