-- The lock table of the distributed-lock starter. ${lock_table} is the configured, validated table name.
--
-- resource       the lock name as UTF-8 bytes: VARBINARY compares byte for byte (case, accents and trailing
--                spaces matter; utf8mb4_bin would ignore trailing spaces); 255 characters of up to 4 bytes
-- owner_token    unique per acquisition; NULL when released
-- holder         human-readable description of the (last) holder: node and thread
-- fencing_token  strictly increasing per resource; the row is never deleted on release
-- acquired_at,   instants from the database server's clock, UTC, microseconds (DATETIME(6), not TIMESTAMP:
-- expires_at     no session time zone, no daylight-saving gaps, no 2038 limit)
CREATE TABLE IF NOT EXISTS `${lock_table}` (
    resource      VARBINARY(1020) NOT NULL,
    owner_token   CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NULL,
    holder        VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    fencing_token BIGINT NOT NULL,
    acquired_at   DATETIME(6) NOT NULL,
    expires_at    DATETIME(6) NOT NULL,
    PRIMARY KEY (resource),
    KEY `ix_${lock_table}_expires_at` (expires_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;
