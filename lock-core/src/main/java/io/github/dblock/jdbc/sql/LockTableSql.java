package io.github.dblock.jdbc.sql;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;

import org.jspecify.annotations.Nullable;

/**
 * The shared base of {@link LockStatements} (read the two together): the statements that name no table (server,
 * session and transaction control, the same on both server families), the lock table whose name
 * {@link LockStatements} splices into its statements and the splicing (a base class, so that the statements can be
 * field initializers next to their comments, which run after this constructor has set the table), and how a statement
 * is run. Immutable and thread-safe.
 */
abstract class LockTableSql {

	/** Microseconds since the epoch on the server's UTC clock: the start of a new row's fencing tokens. */
	public static final String SERVER_MICROS = "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))";

	/**
	 * The next fencing token of a lock row, exposed through {@code LAST_INSERT_ID} (read from the OK packet, no round
	 * trip): one more than the last, or the server's clock in microseconds if that is larger, so tokens keep increasing
	 * even for a row that was deleted and created again.
	 */
	static final String NEXT_TOKEN = "fencing_token = LAST_INSERT_ID(GREATEST(fencing_token + 1, " + SERVER_MICROS + "))";

	/** The lease on a lock row has ended (or the row was released). */
	static final String FREE = "expires_at <= UTC_TIMESTAMP(6)";

	/** Starts a short transaction on an autocommit connection (one round trip, where autocommit off and on are two). */
	public static final String START_TRANSACTION = "START TRANSACTION";

	public static final String COMMIT = "COMMIT";

	public static final String ROLLBACK = "ROLLBACK";

	/**
	 * Whether the server has MariaDB's {@code innodb_snapshot_isolation} (a row if it has): asked once per server
	 * version by {@link MariaDbStatements}.
	 */
	static final String SNAPSHOT_ISOLATION_VARIABLE = "SHOW SESSION VARIABLES LIKE 'innodb_snapshot_isolation'";

	/** The server's version string: the start-up detection of the server family ({@link DatabaseServer}). */
	static final String SERVER_VERSION = "SELECT VERSION()";

	/** The server's clock, for the Actuator view of the lock table. */
	public static final String SERVER_TIME = "SELECT UTC_TIMESTAMP(6)";

	/**
	 * The highest applied migration version and the count of failed migrations in a lock table's Flyway history
	 * table (the only statement that splices a name other than the lock table's: its history table's, derived from
	 * the validated lock table name).
	 */
	static String migrationHistory(LockTable table) {
		return "SELECT MAX(CAST(version AS UNSIGNED)), SUM(success = 0) FROM `" + table.historyTableName()
				+ "` WHERE version IS NOT NULL";
	}

	/** The lock table's columns, to validate a schema the library did not migrate. */
	static final String TABLE_COLUMNS = normalize("""
			SELECT LOWER(COLUMN_NAME) FROM information_schema.COLUMNS
			WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?""");

	/** The variables that tell a read-only server or a multi-primary cluster ({@code DatabaseTopology}). */
	public static final String TOPOLOGY_VARIABLES = normalize("""
			SHOW SESSION VARIABLES WHERE Variable_name IN ('read_only', 'super_read_only', 'innodb_read_only',
			'transaction_read_only', 'tx_read_only', 'wsrep_on', 'group_replication_single_primary_mode',
			'innodb_flush_log_at_trx_commit')""");

	/** Whether this server is an active member of its (multi-primary) replication group. */
	public static final String GROUP_MEMBER_STATE = normalize("""
			SELECT MEMBER_STATE FROM performance_schema.replication_group_members
			WHERE MEMBER_ID = @@server_uuid""");

	/** Bounds how long the server keeps a PESSIMISTIC holder's silent session. Parameter: seconds. */
	public static final String SESSION_IDLE_BOUND = "SET SESSION wait_timeout = ?";

	/** Gives a holder's session the server's own idle bound back. */
	public static final String SESSION_IDLE_RESTORE = "SET SESSION wait_timeout = @@GLOBAL.wait_timeout";

	private final LockTable table;

	LockTableSql(LockTable table) {
		this.table = table;
	}

	/** The table these statements are for. */
	final LockTable table() {
		return this.table;
	}

	/**
	 * A text block with the validated table names in place of {@code {lock}}, {@code {rw}}, {@code {rw_hold}},
	 * {@code {sem}}, {@code {sem_hold}} and {@code {idem}}, and its lines joined by single spaces ({@code {keys}} is left
	 * for {@link LockStatements#withKeys}).
	 * @throws IllegalStateException for any other placeholder
	 */
	final String sql(String text) {
		String sql = normalize(text).replace("{lock}", this.table.quoted())
			.replace("{rw_hold}", this.table.quoted("_rw_hold"))
			.replace("{rw}", this.table.quoted("_rw"))
			.replace("{sem_hold}", this.table.quoted("_sem_hold"))
			.replace("{sem}", this.table.quoted("_sem"))
			.replace("{idem}", this.table.quoted(LockTable.IDEMPOTENCY_SUFFIX));
		if (sql.replace("{keys}", "").indexOf('{') >= 0) {
			throw new IllegalStateException("Unknown placeholder in " + sql);
		}
		return sql;
	}

	/** A text block as one line: its line breaks and their indentation become single spaces. */
	static String normalize(String text) {
		return text.strip().replaceAll("\\s*\\n\\s*", " ");
	}

	/** What to do with a prepared statement (bind, execute, read). */
	@FunctionalInterface
	public interface BoundedStatement<T extends @Nullable Object> {

		T run(PreparedStatement statement) throws SQLException;

	}

	/** Prepares a statement with or without {@code RETURN_GENERATED_KEYS}. */
	static PreparedStatement prepare(Connection connection, String sql, boolean generatedKeys) throws SQLException {
		return generatedKeys ? connection.prepareStatement(sql, Statement.RETURN_GENERATED_KEYS)
				: connection.prepareStatement(sql);
	}

	/** Runs a statement registered with {@link InterruptibleWaits} while it runs. */
	@SuppressWarnings("try") // the registration lasts the try block, not used in it
	static <T extends @Nullable Object> T runInterruptibly(Connection connection, String sql, boolean generatedKeys,
			BoundedStatement<T> action) throws SQLException {
		try (PreparedStatement ps = prepare(connection, sql, generatedKeys);
				InterruptibleWaits.Registration registration = InterruptibleWaits.register(ps)) {
			return action.run(ps);
		}
	}

}
