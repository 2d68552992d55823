/**
 * The lock API: {@link io.github.dblock.LockTemplate}, its options, handles and exceptions.
 *
 * <p>Types, parameters and return values in this package are non-null unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package io.github.dblock;

import org.jspecify.annotations.NullMarked;
