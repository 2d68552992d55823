package io.github.dblock.jdbc;

/**
 * The lock table whose name {@link LockStatements} splices into its statements, and the splicing: a base class, so that
 * the statements can be field initializers next to their comments (which run after this constructor has set the table).
 * Immutable and thread-safe.
 */
abstract class LockTableSql {

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
			.replace("{idem}", this.table.quoted(IdempotencyStore.TABLE_SUFFIX));
		if (sql.replace("{keys}", "").indexOf('{') >= 0) {
			throw new IllegalStateException("Unknown placeholder in " + sql);
		}
		return sql;
	}

	/** A text block as one line: its line breaks and their indentation become single spaces. */
	static String normalize(String text) {
		return text.strip().replaceAll("\\s*\\n\\s*", " ");
	}

}
