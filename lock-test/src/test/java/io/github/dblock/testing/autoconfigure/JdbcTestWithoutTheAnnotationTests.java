package io.github.dblock.testing.autoconfigure;

import io.github.dblock.LockTemplate;
import io.github.dblock.testing.LockRecorder;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.jdbc.test.autoconfigure.AutoConfigureTestDatabase;
import org.springframework.boot.jdbc.test.autoconfigure.JdbcTest;
import org.springframework.context.ApplicationContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import static org.assertj.core.api.Assertions.assertThat;

/** A {@code @JdbcTest} without {@link AutoConfigureDistributedLocks} has no lock beans: the annotation adds them. */
@JdbcTest
@AutoConfigureTestDatabase(replace = AutoConfigureTestDatabase.Replace.NONE)
class JdbcTestWithoutTheAnnotationTests {

	@DynamicPropertySource
	static void database(DynamicPropertyRegistry registry) {
		JdbcTestSliceTests.database(registry);
	}

	@Autowired
	private ApplicationContext context;

	@Test
	void theSliceAloneHasNoLocks() {
		assertThat(this.context.getBeanNamesForType(LockTemplate.class)).isEmpty();
		assertThat(this.context.getBeanNamesForType(LockRecorder.class)).isEmpty();
	}

}
