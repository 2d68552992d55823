/**
 * The JDBC engine for MySQL and MariaDB: providers, schema and SQL.
 *
 * <p>Types, parameters and return values in this package are non-null unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package io.github.dblock.jdbc;

import org.jspecify.annotations.NullMarked;
