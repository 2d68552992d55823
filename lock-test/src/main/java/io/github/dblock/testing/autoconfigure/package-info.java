/**
 * Spring Boot test support of the test kit: {@link io.github.dblock.testing.autoconfigure.AutoConfigureDistributedLocks}
 * for {@code @SpringBootTest} and test slices such as {@code @JdbcTest} and {@code @DataJpaTest}.
 *
 * <p>Types, parameters and return values in this package are non-null unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package io.github.dblock.testing.autoconfigure;

import org.jspecify.annotations.NullMarked;
