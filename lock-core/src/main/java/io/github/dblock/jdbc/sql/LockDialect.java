package io.github.dblock.jdbc.sql;

import org.jspecify.annotations.Nullable;

/**
 * SQL differences between the server families, used where they matter: bounding a statement or a row-lock wait
 * in time (see {@link LockStatements}, which holds every statement of both). Everything else is the same SQL on both.
 * One detection path: {@code distributed-lock.dialect} if set (for proxies that report a different version string),
 * else the server's version ({@code SELECT VERSION()} at start-up, or a connection's metadata where no dialect was
 * given: {@link #resolve}).
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

	/**
	 * The dialect to use: the configured one ({@code distributed-lock.dialect}) if set, else the detected server's.
	 * @param configured the configured dialect, or {@code null}
	 */
	public static LockDialect resolve(@Nullable LockDialect configured, DatabaseServer server) {
		return (configured != null) ? configured : of(server);
	}

	/**
	 * The dialect of a server version string, as {@code SELECT VERSION()} or a connection's metadata reports it; a
	 * server not recognized as MariaDB is treated like MySQL, which uses only standard JDBC timeouts.
	 */
	static LockDialect of(@Nullable String serverVersion) {
		return DatabaseServer.isMariaDb(serverVersion) ? MARIADB : MYSQL;
	}

}
