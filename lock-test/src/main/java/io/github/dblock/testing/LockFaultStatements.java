package io.github.dblock.testing;

import io.github.dblock.jdbc.sql.LockTable;

/**
 * Every statement {@link JdbcLockFaults} sends, on the library's own lock tables ({@code <table>},
 * {@code <table>_rw}, {@code <table>_rw_hold}; see lock-core's {@code db/migration}). Every value is a bind
 * parameter; the validated table name is the only identifier spliced in. Instants come from the server's clock
 * ({@code UTC_TIMESTAMP(6)}), as in the library's statements, so that a fault and the locks agree on "now".
 * Fencing tokens are advanced as the library advances them: {@code GREATEST(fencing_token + 1, server µs)}, above
 * every token handed out before (for LEASE the row holds the end of the last take's block of tokens). Immutable.
 */
final class LockFaultStatements {

	private static final String SERVER_MICROS = "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))";

	/** Ends the exclusive lease (or the minimum hold after a release) now. Parameters: resource. */
	final String expireLease;

	/** Ends the live read and write leases now. Parameters: resource. */
	final String expireReadWrite;

	/** Moves the end of the exclusive lease of a holder. Parameters: µs from now, resource. */
	final String moveLease;

	/** Moves the end of the live read and write leases. Parameters: µs from now, resource. */
	final String moveReadWrite;

	/** Locks the exclusive row, or finds none. Parameters: resource. */
	final String lockRow;

	/** Another owner takes an existing row. Parameters: owner, holder, lease µs, resource. */
	final String takeRow;

	/** Another owner takes a new resource. Parameters: resource, owner, holder, lease µs. */
	final String insertTakenRow;

	/** A free row for a new resource (so that there is a row to lock). Parameters: resource. */
	final String insertFreeRow;

	final String rowToken;

	/** Whether the exclusive row is taken now (held, or kept for a minimum hold). Parameters: resource. */
	final String rowTaken;

	/** The exclusive row, if no other transaction has it locked (else no row). Parameters: resource. */
	final String rowUnlessLocked;

	final String lockReadWriteRow;

	final String insertReadWriteRow;

	/** Advances the read/write counter. Parameters: resource. */
	final String advanceReadWriteToken;

	final String readWriteToken;

	/** Ends the live write leases (a new reader's takeover). Parameters: resource, kind ('W'). */
	final String expireWriters;

	/** Parameters: resource, owner, kind, holder, fencing token, lease µs. */
	final String insertReadWriteHold;

	/** The number of live read and write leases. Parameters: resource. */
	final String liveReadWriteHolds;

	LockFaultStatements(LockTable table) {
		String lock = table.quoted();
		String rw = table.quoted("_rw");
		String rwHold = table.quoted("_rw_hold");
		this.expireLease = "UPDATE " + lock + " SET expires_at = UTC_TIMESTAMP(6) WHERE resource = ?"
				+ " AND expires_at > UTC_TIMESTAMP(6)";
		this.expireReadWrite = "UPDATE " + rwHold + " SET expires_at = UTC_TIMESTAMP(6) WHERE resource = ?"
				+ " AND expires_at > UTC_TIMESTAMP(6)";
		this.moveLease = "UPDATE " + lock + " SET expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND"
				+ " WHERE resource = ? AND owner_token IS NOT NULL AND expires_at > UTC_TIMESTAMP(6)";
		this.moveReadWrite = "UPDATE " + rwHold + " SET expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND"
				+ " WHERE resource = ? AND expires_at > UTC_TIMESTAMP(6)";
		this.lockRow = "SELECT fencing_token FROM " + lock + " WHERE resource = ? FOR UPDATE";
		this.takeRow = "UPDATE " + lock + " SET owner_token = ?, holder = ?, fencing_token = GREATEST(fencing_token + 1, "
				+ SERVER_MICROS + "), acquired_at = UTC_TIMESTAMP(6), expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND,"
				+ " waiting_until = NULL, waiting_owner = NULL WHERE resource = ?";
		this.insertTakenRow = "INSERT INTO " + lock + " (resource, owner_token, holder, fencing_token, acquired_at,"
				+ " expires_at) VALUES (?, ?, ?, " + SERVER_MICROS + ", UTC_TIMESTAMP(6),"
				+ " UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND)";
		this.insertFreeRow = "INSERT INTO " + lock + " (resource, owner_token, holder, fencing_token, acquired_at,"
				+ " expires_at) VALUES (?, NULL, NULL, " + SERVER_MICROS + ", UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))";
		this.rowToken = "SELECT fencing_token FROM " + lock + " WHERE resource = ?";
		this.rowTaken = "SELECT expires_at > UTC_TIMESTAMP(6) FROM " + lock + " WHERE resource = ?";
		this.rowUnlessLocked = "SELECT resource FROM " + lock + " WHERE resource = ? FOR UPDATE SKIP LOCKED";
		this.lockReadWriteRow = "SELECT fencing_token FROM " + rw + " WHERE resource = ? FOR UPDATE";
		this.insertReadWriteRow = "INSERT INTO " + rw + " (resource, fencing_token) VALUES (?, " + SERVER_MICROS + ")";
		this.advanceReadWriteToken = "UPDATE " + rw + " SET fencing_token = GREATEST(fencing_token + 1, "
				+ SERVER_MICROS + ") WHERE resource = ?";
		this.readWriteToken = "SELECT fencing_token FROM " + rw + " WHERE resource = ?";
		this.expireWriters = "UPDATE " + rwHold + " SET expires_at = UTC_TIMESTAMP(6) WHERE resource = ?"
				+ " AND kind = ? AND expires_at > UTC_TIMESTAMP(6)";
		this.insertReadWriteHold = "INSERT INTO " + rwHold + " (resource, owner_token, kind, holder, fencing_token,"
				+ " acquired_at, expires_at) VALUES (?, ?, ?, ?, ?, UTC_TIMESTAMP(6),"
				+ " UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND)";
		this.liveReadWriteHolds = "SELECT COUNT(*) FROM " + rwHold + " WHERE resource = ?"
				+ " AND expires_at > UTC_TIMESTAMP(6)";
	}

}
