/**
 * The test kit for applications that use the locks: {@link io.github.dblock.testing.InMemoryLockTemplate} (a
 * {@link io.github.dblock.LockTemplate} on an in-memory store, for unit tests without a database),
 * {@link io.github.dblock.testing.LockFaults} (make a lock expire, be taken over, be busy or slow, on the real lock
 * table through {@link io.github.dblock.testing.JdbcLockFaults} or in memory), the
 * {@link io.github.dblock.testing.LockRecorder} of the locks a template took, and
 * {@link io.github.dblock.testing.LockAssertions}. Nothing in this package needs Spring Boot; the Spring Boot test
 * support is in {@code io.github.dblock.testing.autoconfigure}.
 *
 * <p>Types, parameters and return values in this package are non-null unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package io.github.dblock.testing;

import org.jspecify.annotations.NullMarked;
