-- Distributed semaphores (SemaphoreTemplate, @DistributedSemaphore). ${lock_table} is the configured, validated
-- lock table name; both tables derive their names from it.
--
-- ${lock_table}_sem: one row per permit pool.
-- name           the pool name as UTF-8 bytes (exact comparison, like the lock table's resource)
-- permits        how many live holders the pool admits; changed at run time by SemaphoreTemplate.setPermits
-- fencing_token  advanced by every permit acquisition of the pool; never reset (the row is not deleted by the
--                library), and never below the server time in microseconds when advanced
CREATE TABLE IF NOT EXISTS `${lock_table}_sem` (
    name          VARBINARY(1020) NOT NULL,
    permits       INT NOT NULL,
    fencing_token BIGINT NOT NULL,
    PRIMARY KEY (name)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- ${lock_table}_sem_hold: one row per held permit. A row is live while expires_at > UTC_TIMESTAMP(6); expired
-- rows are deleted by the next acquisition of the pool and by the cleanup job (through the expires_at index).
-- owner_token    unique per acquisition; every renewal and release is checked against it
-- holder         node and thread of the holder, for diagnostics
-- fencing_token  the token this acquisition got from the pool row
-- acquired_at,   instants from the database server's clock, UTC, microseconds
-- expires_at
CREATE TABLE IF NOT EXISTS `${lock_table}_sem_hold` (
    name          VARBINARY(1020) NOT NULL,
    owner_token   CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    holder        VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    fencing_token BIGINT NOT NULL,
    acquired_at   DATETIME(6) NOT NULL,
    expires_at    DATETIME(6) NOT NULL,
    PRIMARY KEY (name, owner_token),
    KEY `ix_${lock_table}_sem_expires` (expires_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;
