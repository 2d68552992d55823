/**
 * Administration of the lock table: the Actuator view and forced release
 * ({@link io.github.dblock.jdbc.admin.LockTableAdmin}), the clean-up of expired rows
 * ({@link io.github.dblock.jdbc.admin.LockTableCleaner}) and the detection of a read-only server or a
 * multi-primary cluster ({@link io.github.dblock.jdbc.admin.DatabaseTopology}).
 *
 * <p>The API of this package is those three classes; every other class is internal and may change in any
 * release.
 *
 * <p>Types, parameters and return values in this package are non-null unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package io.github.dblock.jdbc.admin;

import org.jspecify.annotations.NullMarked;
