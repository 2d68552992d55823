/**
 * The JDBC engine for MySQL and MariaDB, wired by {@link io.github.dblock.jdbc.JdbcLockTemplateBuilder}. Each
 * mechanism has its own sub-package: {@code lease} (leases, read/write leases, semaphores, idempotency keys),
 * {@code pessimistic}, {@code optimistic} and {@code admin} (clean-up, the table view, topology); all of them
 * build on {@code sql} (the lock table, dialects, schema, statements, error classification, bounded
 * connections). The sub-packages do not depend on this package, nor on each other except on {@code sql}.
 *
 * <p>Types, parameters and return values in this package are non-null unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package io.github.dblock.jdbc;

import org.jspecify.annotations.NullMarked;
