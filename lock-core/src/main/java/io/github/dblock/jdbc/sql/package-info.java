/**
 * The shared foundation of the JDBC engine: the lock table ({@link io.github.dblock.jdbc.sql.LockTable}), the
 * dialects ({@link io.github.dblock.jdbc.sql.LockDialect}, {@link io.github.dblock.jdbc.sql.DatabaseServer}), the schema
 * ({@link io.github.dblock.jdbc.sql.LockSchema}), every SQL statement, error classification, bounded connections and
 * the row reads and writes the mechanisms share. It depends on no other {@code io.github.dblock.jdbc} package.
 *
 * <p>The API of this package is {@code LockTable}, {@code LockDialect}, {@code DatabaseServer} and
 * {@code LockSchema}; every other class is internal machinery of the lock mechanisms, public only so that
 * they can use it, and may change in any release.
 *
 * <p>Types, parameters and return values in this package are non-null unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package io.github.dblock.jdbc.sql;

import org.jspecify.annotations.NullMarked;
