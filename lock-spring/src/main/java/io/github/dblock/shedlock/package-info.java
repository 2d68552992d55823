/**
 * A ShedLock {@code LockProvider} backed by the lock library.
 *
 * <p>Types, parameters and return values in this package are non-null unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package io.github.dblock.shedlock;

import org.jspecify.annotations.NullMarked;
