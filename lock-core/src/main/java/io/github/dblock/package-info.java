/**
 * The lock API: {@link io.github.dblock.LockTemplate} and the operations it offers, their options, handles,
 * callbacks and exceptions, and {@link io.github.dblock.LockIntrospection} for diagnostics. The engine behind the
 * template is internal ({@code io.github.dblock.engine}).
 *
 * <p>Types, parameters and return values in this package are non-null unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package io.github.dblock;

import org.jspecify.annotations.NullMarked;
