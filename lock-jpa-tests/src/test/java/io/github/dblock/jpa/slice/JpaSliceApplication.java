package io.github.dblock.jpa.slice;

import io.github.dblock.jpa.JpaEntry;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.persistence.autoconfigure.EntityScan;

/**
 * The application {@link DataJpaTestSliceTests} finds, as an application's own: the slice decides which of its
 * components and auto-configurations load, the test kit's annotation adds the locks.
 */
@SpringBootApplication
@EntityScan(basePackageClasses = JpaEntry.class)
public class JpaSliceApplication {

}
