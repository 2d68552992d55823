/**
 * The provider SPI behind the lock API.
 *
 * <p>Types, parameters and return values in this package are non-null unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package io.github.dblock.spi;

import org.jspecify.annotations.NullMarked;
