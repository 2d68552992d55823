package io.github.dblock.jdbc;

/**
 * SQL differences between the server families, used where they matter: bounding a row-lock wait in
 * {@link io.github.dblock.LockMode#PESSIMISTIC} mode. Everything else is the same SQL on both. Detected from
 * {@code SELECT VERSION()} at start-up; {@code distributed-lock.dialect} overrides the detection (for proxies
 * that report a different version string).
 */
public enum LockDialect {

	/**
	 * MySQL 8.0+: {@code FOR UPDATE NOWAIT} for a zero wait; otherwise {@code SET SESSION
	 * innodb_lock_wait_timeout} before the locking statement and {@code SET SESSION innodb_lock_wait_timeout =
	 * DEFAULT} after it (MySQL's {@code SET_VAR} hint does not cover InnoDB variables). These statements also run
	 * on MariaDB, which is how the tests exercise this dialect.
	 */
	MYSQL,

	/**
	 * MariaDB 10.6+: one statement, {@code SET STATEMENT innodb_lock_wait_timeout = n FOR UPDATE ...}, where
	 * {@code n = 0} fails at once.
	 */
	MARIADB;

	/** The dialect of a detected server. */
	public static LockDialect of(DatabaseServer server) {
		return (server.product() == DatabaseServer.Product.MARIADB) ? MARIADB : MYSQL;
	}

}
