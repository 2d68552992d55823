package io.github.dblock.jdbc.sql;

import java.util.regex.Pattern;

/**
 * The validated name of the lock table. It is the only identifier this library splices into SQL; every value
 * is a bind parameter.
 */
public final class LockTable {

	/** Longest accepted name, so that derived names (history table, index) stay within MySQL's 64 characters. */
	public static final int MAX_LENGTH = 48;

	/** Suffix of the idempotency records table's name after the lock table's name ({@code <table>_idem}). */
	public static final String IDEMPOTENCY_SUFFIX = "_idem";

	private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

	private final String name;

	private LockTable(String name) {
		this.name = name;
	}

	/**
	 * Validates a table name.
	 * @param name an unquoted identifier: a letter or underscore, then letters, digits or underscores, at most
	 * {@value #MAX_LENGTH} characters
	 * @throws IllegalArgumentException if the name is null, blank, too long or not a plain identifier
	 */
	public static LockTable of(String name) {
		if (name == null || name.isBlank()) {
			throw new IllegalArgumentException("lock table name must not be blank");
		}
		if (name.length() > MAX_LENGTH) {
			throw new IllegalArgumentException(
					"lock table name '" + name + "' is longer than " + MAX_LENGTH + " characters");
		}
		if (!IDENTIFIER.matcher(name).matches()) {
			throw new IllegalArgumentException("lock table name '" + name
					+ "' is not a plain SQL identifier (letters, digits and '_', not starting with a digit)");
		}
		return new LockTable(name);
	}

	/** The table name, unquoted. */
	public String name() {
		return this.name;
	}

	/** The table name quoted for MySQL/MariaDB SQL. */
	public String quoted() {
		return '`' + this.name + '`';
	}

	/**
	 * A table derived from the lock table's name (the name plus a suffix of this library's own, at most 16
	 * characters so that it fits MySQL's 64), quoted for SQL.
	 * @param suffix a constant of this library, such as {@code "_rw"}
	 */
	public String quoted(String suffix) {
		return '`' + this.name + suffix + '`';
	}

	/** The name of the schema-history table of this library's own Flyway migrations. */
	public String historyTableName() {
		return this.name + "_schema_history";
	}

	@Override
	public String toString() {
		return this.name;
	}

}
