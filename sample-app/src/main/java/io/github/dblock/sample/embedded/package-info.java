/**
 * The sample application: an embedded MariaDB for running it without a database server.
 *
 * <p>Types, parameters and return values in this package are non-null unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package io.github.dblock.sample.embedded;

import org.jspecify.annotations.NullMarked;
