-- Idempotency records (run-once keys) of the distributed-lock starter: one row per key. ${lock_table} is the
-- configured, validated lock table name; this table is ${lock_table}_idem.
--
-- idem_key       the key as UTF-8 bytes (exact comparison, like the lock table's resource); 255 characters
-- status         RUNNING (a claim holds a lease and its work runs), SUCCEEDED (outcome recorded),
--                FAILED (the work threw or its transaction rolled back; the next call runs it again)
-- owner_token    unique per claim; every renewal and completion is checked against it
-- holder         node and thread of the (last) claim
-- fencing_token  strictly increasing per key across claims (GREATEST(token + 1, server microseconds))
-- attempts       claims since the key was first run (or last re-run after its retention ended)
-- started_at     when the last claim was taken
-- expires_at     end of the running lease (renewed while the work runs); a RUNNING row past it may be taken over
-- completed_at   when the last claim ended (SUCCEEDED or FAILED)
-- retain_until   until when the record answers duplicates; past it the key runs again and cleanup deletes it
-- outcome        the result as a JSON document (NULL for no result)
-- outcome_type   the Java type of the result, for diagnostics
-- error          exception type and message of a FAILED attempt, cut to 1,000 characters
-- All instants come from the database server's clock, UTC, microseconds (DATETIME(6)).
CREATE TABLE IF NOT EXISTS `${lock_table}_idem` (
    idem_key      VARBINARY(1020) NOT NULL,
    status        VARCHAR(9) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    owner_token   CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NULL,
    holder        VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    fencing_token BIGINT NOT NULL,
    attempts      INT NOT NULL,
    started_at    DATETIME(6) NOT NULL,
    expires_at    DATETIME(6) NOT NULL,
    completed_at  DATETIME(6) NULL,
    retain_until  DATETIME(6) NOT NULL,
    outcome       LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    outcome_type  VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    error         VARCHAR(1000) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    PRIMARY KEY (idem_key),
    KEY `ix_${lock_table}_idem_retain` (retain_until)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;
