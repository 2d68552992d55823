/**
 * A Spring Integration {@code LockRegistry} backed by the lock library.
 *
 * <p>Types, parameters and return values in this package are non-null unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package io.github.dblock.integration;

import org.jspecify.annotations.NullMarked;
