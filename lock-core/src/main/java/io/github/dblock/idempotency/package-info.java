/**
 * Idempotency keys (run-once work): {@link io.github.dblock.idempotency.IdempotencyTemplate}, its options, records
 * and exceptions, the claim the work holds ({@link io.github.dblock.idempotency.IdempotencyClaim}),
 * {@link io.github.dblock.idempotency.Idempotent}, and the provider interface the JDBC engine implements
 * ({@link io.github.dblock.idempotency.IdempotencyProvider}).
 *
 * <p>Types, parameters and return values in this package are non-null unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package io.github.dblock.idempotency;

import org.jspecify.annotations.NullMarked;
