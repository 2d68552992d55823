package io.github.dblock;

/**
 * The usual guarded write with a {@linkplain LockHandle#fencingToken() fencing token}: store the token with the
 * data and let the database refuse a write whose token is lower than the stored one.
 *
 * <pre class="code">
 * -- once: ALTER TABLE invoice ADD COLUMN fencing_token BIGINT NOT NULL DEFAULT 0;
 * int rows = jdbc.update("UPDATE invoice SET status = ?, fencing_token = ? WHERE id = ? AND fencing_token &lt;= ?",
 *         status, lock.fencingToken(), id, lock.fencingToken());
 * Fencing.requireApplied(rows, lock);
 * </pre>
 *
 * Tokens strictly increase per resource, so a holder that lost its lease (a long pause, an expired lease) and
 * writes after its successor carries a lower token, matches no row, and is told so. {@code <=} lets a holder
 * write several times with its own token; use {@code <} to allow one write per acquisition.
 */
public final class Fencing {

	private Fencing() {
	}

	/**
	 * Checks the row count of a fenced write.
	 * @param updatedRows what the fenced {@code UPDATE} reported
	 * @param lock the lock whose token the write carried
	 * @return {@code updatedRows}, when positive
	 * @throws LockLostException if no row was written: a holder with a newer token has written since (or the row
	 * does not exist)
	 */
	public static int requireApplied(int updatedRows, LockHandle lock) {
		if (updatedRows <= 0) {
			throw new LockLostException(lock.resource(), lock.fencingToken(), "Fenced write under lock '"
					+ lock.resource() + "' with fencing token " + lock.fencingToken()
					+ " was rejected: a newer holder has written since, so this holder's lock was lost");
		}
		return updatedRows;
	}

}
