/**
 * Lease locks: {@link io.github.dblock.jdbc.lease.LeaseLockProvider} (exclusive and read/write leases on the
 * lock table, renewed in the background), {@link io.github.dblock.jdbc.lease.JdbcSemaphoreProvider} (semaphore
 * permits) and {@link io.github.dblock.jdbc.lease.IdempotencyStore} (idempotency keys), which share the lease
 * machinery and its renewal scheduler.
 *
 * <p>The API of this package is those three providers; every other class is internal and may change in any
 * release.
 *
 * <p>Types, parameters and return values in this package are non-null unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package io.github.dblock.jdbc.lease;

import org.jspecify.annotations.NullMarked;
