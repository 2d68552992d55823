package io.github.dblock.testing.autoconfigure;

import org.springframework.boot.SpringBootConfiguration;

/** The configuration the test slices of this package find; the slices and the annotation add everything else. */
@SpringBootConfiguration
public class SliceTestApplication {

}
