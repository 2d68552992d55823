package io.github.dblock.testing.autoconfigure;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.springframework.boot.autoconfigure.ImportAutoConfiguration;

/**
 * Adds the distributed locks to a Spring Boot test: on a test slice that has a {@code DataSource} ({@code @JdbcTest},
 * {@code @DataJpaTest}, {@code @DataJdbcTest}, ...) the lock auto-configuration (the lock table on the slice's
 * database, the {@code LockTemplate}, {@code @DistributedLock}, semaphores and idempotency keys, and the ShedLock and
 * Spring Integration adapters when those are on the class path), which a slice leaves out; on every test, slice or
 * {@code @SpringBootTest}, the test kit's beans:
 * <ul>
 * <li>a {@link io.github.dblock.testing.LockRecorder} attached to the {@code LockTemplate} bean, which records every
 * acquisition and is cleared before each test method;</li>
 * <li>{@link io.github.dblock.testing.JdbcLockFaults} ({@link io.github.dblock.testing.LockFaults}) on the lock table
 * and data source.</li>
 * </ul>
 *
 * <pre class="code">
 * &#64;JdbcTest
 * &#64;AutoConfigureTestDatabase(replace = Replace.NONE)   // the locks need MySQL or MariaDB, not an embedded H2
 * &#64;AutoConfigureDistributedLocks
 * &#64;Import(InvoiceService.class)
 * &#64;Transactional(propagation = Propagation.NOT_SUPPORTED)  // see below
 * class InvoiceServiceTests { ... }
 * </pre>
 *
 * The imported auto-configurations are listed in
 * {@code META-INF/spring/io.github.dblock.testing.autoconfigure.AutoConfigureDistributedLocks.imports} (Spring Boot's
 * mechanism for test slices: {@link ImportAutoConfiguration} with no classes reads that file). Slices such as
 * {@code @JdbcTest} run each test in a transaction that is rolled back; a LEASE lock taken inside a transaction on the
 * lock's data source is released only when that transaction ends (commit-time validation), so a lock the code under
 * test takes stays held until the test method returns. Turn the test transaction off as above when a test checks
 * that a lock was released.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@ImportAutoConfiguration
public @interface AutoConfigureDistributedLocks {

}
