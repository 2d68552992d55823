/**
 * The waiting machinery shared by the engine and the JDBC providers: {@link io.github.dblock.wait.WaitLoop}, the one
 * loop that makes attempts until the caller's deadline, and {@link io.github.dblock.wait.Backoff}, the pause between
 * attempts. Depends on no other package of the library. Internal: not part of the provider SPI; {@code Backoff} is
 * public because the JDBC providers and the auto-configuration take it as a setting.
 *
 * <p>Types, parameters and return values in this package are non-null unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package io.github.dblock.wait;

import org.jspecify.annotations.NullMarked;
