/**
 * Pessimistic locks: {@link io.github.dblock.jdbc.pessimistic.PessimisticLockProvider} holds a row lock
 * ({@code SELECT ... FOR UPDATE}) in a transaction of its own session, with fencing tokens from the row.
 *
 * <p>The API of this package is {@code PessimisticLockProvider}; every other class is internal and may change
 * in any release.
 *
 * <p>Types, parameters and return values in this package are non-null unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package io.github.dblock.jdbc.pessimistic;

import org.jspecify.annotations.NullMarked;
