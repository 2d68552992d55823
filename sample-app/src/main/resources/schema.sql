-- The sample's own tables, created at start-up by Spring Boot (spring.sql.init). The lock table is not here:
-- the lock library creates and migrates it itself (distributed-lock.table-name).

-- One row per product: units left and units sold.
CREATE TABLE IF NOT EXISTS stock (
    sku       VARCHAR(64) NOT NULL,
    available INT         NOT NULL,
    sold      INT         NOT NULL DEFAULT 0,
    PRIMARY KEY (sku)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- One row per order.
CREATE TABLE IF NOT EXISTS purchase (
    id           BIGINT       NOT NULL AUTO_INCREMENT,
    sku          VARCHAR(64)  NOT NULL,
    buyer        VARCHAR(255) NOT NULL,
    quantity     INT          NOT NULL,
    purchased_at DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (id),
    KEY ix_purchase_sku (sku),
    KEY ix_purchase_purchased_at (purchased_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- One row per run of the scheduled report, whichever instance ran it.
CREATE TABLE IF NOT EXISTS report_run (
    id         BIGINT       NOT NULL AUTO_INCREMENT,
    report     VARCHAR(64)  NOT NULL,
    instance   VARCHAR(255) NOT NULL,
    started_at DATETIME(3)  NOT NULL,
    ended_at   DATETIME(3)  NOT NULL,
    orders     INT          NOT NULL,
    units      INT          NOT NULL,
    PRIMARY KEY (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;
