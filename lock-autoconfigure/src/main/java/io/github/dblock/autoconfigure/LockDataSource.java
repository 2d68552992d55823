package io.github.dblock.autoconfigure;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.springframework.beans.factory.annotation.Qualifier;

/**
 * Qualifier for the {@link javax.sql.DataSource} that holds the lock table, when it should not be the
 * application's primary one (for example a small dedicated pool, so that lock statements never wait behind
 * business transactions for a connection). Without it, the single (or {@code @Primary}) data source is used.
 */
@Target({ ElementType.FIELD, ElementType.METHOD, ElementType.PARAMETER, ElementType.TYPE, ElementType.ANNOTATION_TYPE })
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Qualifier
public @interface LockDataSource {

}
