package io.github.dblock.autoconfigure;

import io.github.dblock.jdbc.sql.LockTable;

/**
 * Thrown at start-up when the database refuses the lock table's migration for lack of a privilege (server errors
 * 1142, 1143, 1044, 1227), naming the account, the privileges the migration needs and the ways out; Spring Boot
 * reports it as a failure analysis ({@link LockTableMigrationDeniedFailureAnalyzer}). Immutable.
 */
public class LockTableMigrationDeniedException extends IllegalStateException {

	private static final long serialVersionUID = 1L;

	private final String account;

	private final String table;

	private final String denial;

	/**
	 * @param account who ran the migration, as a sentence subject ("The lock DataSource's user")
	 * @param table the lock table
	 * @param denial the server's message refusing the statement
	 * @param cause the migration's failure
	 */
	LockTableMigrationDeniedException(String account, LockTable table, String denial, Throwable cause) {
		super(account + " lacks a privilege to migrate the lock table '" + table + "': " + denial + ". "
				+ action(table), cause);
		this.account = account;
		this.table = table.name();
		this.denial = denial;
	}

	static String action(LockTable table) {
		return "The migration creates '" + table + "' and its history table '" + table.historyTableName()
				+ "' and needs CREATE, ALTER, INDEX, SELECT, INSERT, UPDATE and DELETE on the schema. Either grant them, "
				+ "or run the migration with a DDL-capable account (" + DistributedLockProperties.PREFIX
				+ ".flyway.user / .password), or create the table yourself and set " + DistributedLockProperties.PREFIX
				+ ".flyway.enabled=false.";
	}

	/** Who ran the migration: the lock data source's user, or the migration user. */
	public String getAccount() {
		return this.account;
	}

	/** The lock table's name. */
	public String getTable() {
		return this.table;
	}

	/** The server's message refusing the statement. */
	public String getDenial() {
		return this.denial;
	}

}
