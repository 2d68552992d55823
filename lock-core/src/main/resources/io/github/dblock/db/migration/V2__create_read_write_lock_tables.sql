-- Read/write (shared/exclusive) locks: LockType.READ and LockType.WRITE. Separate from the exclusive lock table:
-- a read/write lock on a resource is a different lock from the exclusive lock of the same name.
--
-- ${lock_table}_rw: one row per resource ever read- or write-locked, never deleted (it carries the counter).
-- resource           the lock name as UTF-8 bytes, as in the lock table
-- fencing_token      strictly increasing per resource, advanced by every read or write acquisition; starts at the
--                    server time in microseconds
-- intent_owner,      the owner token of a writer waiting for the readers to finish, and until when its intent
-- intent_expires_at, holds (server clock; refreshed while it waits): new readers stay out meanwhile (writer
-- intent_holder      preference); intent_holder describes it for error messages
-- Every acquisition first locks this row (SELECT ... FOR UPDATE): acquisitions of one resource are serialized.
CREATE TABLE IF NOT EXISTS `${lock_table}_rw` (
    resource          VARBINARY(1020) NOT NULL,
    fencing_token     BIGINT NOT NULL,
    intent_owner      CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NULL,
    intent_expires_at DATETIME(6) NULL,
    intent_holder     VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    PRIMARY KEY (resource)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- ${lock_table}_rw_hold: one row per current holder (many readers, or one writer) of a resource.
-- owner_token        unique per acquisition
-- kind               'R' (read) or 'W' (write)
-- holder             node and thread of the holder
-- fencing_token      the token this acquisition got
-- acquired_at,       server clock, UTC, microseconds; a row whose expires_at has passed is no holder (crashed
-- expires_at         or lost), and the cleanup job deletes it through the expires_at index
CREATE TABLE IF NOT EXISTS `${lock_table}_rw_hold` (
    resource      VARBINARY(1020) NOT NULL,
    owner_token   CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    kind          CHAR(1) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    holder        VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    fencing_token BIGINT NOT NULL,
    acquired_at   DATETIME(6) NOT NULL,
    expires_at    DATETIME(6) NOT NULL,
    PRIMARY KEY (resource, owner_token),
    KEY `ix_${lock_table}_rw_hold_exp` (expires_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;
