/**
 * Annotation-driven locking: the annotations, their interceptors and key expressions.
 *
 * <p>Types, parameters and return values in this package are non-null unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package io.github.dblock.interceptor;

import org.jspecify.annotations.NullMarked;
