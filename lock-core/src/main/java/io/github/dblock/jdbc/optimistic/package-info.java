/**
 * Optimistic locks: {@link io.github.dblock.jdbc.optimistic.OptimisticLockProvider} checks a version of the
 * lock row at commit of the caller's transaction.
 *
 * <p>Types, parameters and return values in this package are non-null unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package io.github.dblock.jdbc.optimistic;

import org.jspecify.annotations.NullMarked;
