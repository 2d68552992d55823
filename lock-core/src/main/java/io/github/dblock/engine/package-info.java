/**
 * The lock engine behind {@link io.github.dblock.LockTemplate}: per-thread reentrancy, the JVM-local gate of each
 * resource, the in-memory hand-off of a lease, commit-time validation and the observations; it asks the
 * {@link io.github.dblock.spi SPI} for the database side. Internal: not API, and may change in any release.
 * Applications use {@link io.github.dblock.LockTemplate} and, for diagnostics,
 * {@link io.github.dblock.LockIntrospection}. The design: docs/DESIGN.md.
 *
 * <p>Types, parameters and return values in this package are non-null unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package io.github.dblock.engine;

import org.jspecify.annotations.NullMarked;
