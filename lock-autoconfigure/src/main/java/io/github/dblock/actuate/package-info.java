/**
 * Actuator support: the locks endpoints and the lock table health indicator.
 *
 * <p>Types, parameters and return values in this package are non-null unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package io.github.dblock.actuate;

import org.jspecify.annotations.NullMarked;
