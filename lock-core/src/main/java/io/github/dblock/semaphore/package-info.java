/**
 * Distributed semaphores: {@link io.github.dblock.semaphore.SemaphoreTemplate}, its options, the held permit
 * ({@link io.github.dblock.semaphore.PermitHandle}), {@link io.github.dblock.semaphore.DistributedSemaphore}, and the
 * provider interface the JDBC engine implements ({@link io.github.dblock.semaphore.SemaphoreProvider}).
 *
 * <p>Types, parameters and return values in this package are non-null unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package io.github.dblock.semaphore;

import org.jspecify.annotations.NullMarked;
