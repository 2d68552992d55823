package io.github.dblock.jdbc.sql;

import java.sql.SQLException;

import org.jspecify.annotations.Nullable;

/**
 * The value a statement set through {@code LAST_INSERT_ID(expr)} (a fencing token), read from the OK packet's insert
 * id as a generated key, without a round trip; 0 where the driver does not expose it (the caller then queries it).
 * Stateless and thread-safe.
 * <p>
 * Internal machinery of the JDBC engine, public only so that the other {@code io.github.dblock.jdbc} packages
 * can use it: not API, may change in any release.
 */
public final class InsertIds {

	private InsertIds() {
	}

	/**
	 * The value a statement just set through {@code LAST_INSERT_ID(expr)}, read from the OK packet's insert id
	 * without a round trip (the statement must be prepared with {@code RETURN_GENERATED_KEYS}).
	 * @return the positive value, or 0 if the driver did not expose one (then query it)
	 */
	public static long lastInsertId(java.sql.PreparedStatement executed) throws SQLException {
		return Math.max(0, generatedKey(executed));
	}

	/**
	 * The first generated key of a statement prepared with {@code RETURN_GENERATED_KEYS}, or 0 if the driver returns
	 * none. On Connector/J the value is read straight from the statement (the OK packet's insert id) where that gives
	 * exactly what {@code getGeneratedKeys()} would (a key is returned when the insert id is not 0 and the statement
	 * changed a row), without building a result set for it; otherwise through {@code getGeneratedKeys()}.
	 */
	static long generatedKey(java.sql.Statement executed) throws SQLException {
		long id = ConnectorJ.lastInsertId(executed);
		if (id == 0 || (id > 0 && executed.getUpdateCount() > 0)) {
			return id;
		}
		try (java.sql.ResultSet keys = executed.getGeneratedKeys()) {
			return keys.next() ? keys.getLong(1) : 0;
		}
	}

	/** Connector/J's own insert id of an executed statement, where that driver is on the class path. */
	static final class ConnectorJ {

		private static final @Nullable Class<?> STATEMENT;

		private static final java.lang.invoke.@Nullable MethodHandle LAST_INSERT_ID;

		static {
			Class<?> type = null;
			java.lang.invoke.MethodHandle handle = null;
			try {
				type = Class.forName("com.mysql.cj.jdbc.StatementImpl", false, InsertIds.class.getClassLoader());
				handle = java.lang.invoke.MethodHandles.publicLookup()
					.findVirtual(type, "getLastInsertID", java.lang.invoke.MethodType.methodType(long.class))
					.asType(java.lang.invoke.MethodType.methodType(long.class, Object.class));
			}
			catch (ReflectiveOperationException | LinkageError | SecurityException ex) {
				type = null;
				handle = null;
			}
			STATEMENT = type;
			LAST_INSERT_ID = handle;
		}

		private ConnectorJ() {
		}

		/**
		 * The statement's insert id, or -1 when it is not Connector/J's or a wrapper does not hand out the driver's
		 * statement (the caller then asks {@code getGeneratedKeys()}).
		 */
		public static long lastInsertId(java.sql.Statement executed) throws SQLException {
			Class<?> type = STATEMENT;
			java.lang.invoke.MethodHandle handle = LAST_INSERT_ID;
			Object statement;
			try {
				statement = (type != null && handle != null && executed.isWrapperFor(type)) ? executed.unwrap(type) : null;
			}
			catch (SQLException | RuntimeException ex) {
				statement = null; // a wrapper that cannot unwrap: the standard way
			}
			if (handle == null || type == null || !type.isInstance(statement)) {
				return -1;
			}
			try {
				return (long) handle.invokeExact(statement);
			}
			catch (RuntimeException | Error ex) {
				throw ex;
			}
			catch (Throwable ex) {
				throw new SQLException("Connector/J's insert id could not be read", ex);
			}
		}

	}

}
