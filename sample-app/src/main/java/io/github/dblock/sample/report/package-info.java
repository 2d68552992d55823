/**
 * The sample application: the scheduled daily report job.
 *
 * <p>Types, parameters and return values in this package are non-null unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package io.github.dblock.sample.report;

import org.jspecify.annotations.NullMarked;
