package io.github.dblock.jpa.slice;

import java.time.Duration;
import java.util.UUID;

import io.github.dblock.LockLostException;
import io.github.dblock.LockMode;
import io.github.dblock.LockNotAcquiredException;
import io.github.dblock.LockTemplate;
import io.github.dblock.test.TestDatabase;
import io.github.dblock.testing.LockFaults;
import io.github.dblock.testing.LockRecorder;
import io.github.dblock.testing.autoconfigure.AutoConfigureDistributedLocks;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.data.jpa.test.autoconfigure.DataJpaTest;
import org.springframework.boot.jdbc.test.autoconfigure.AutoConfigureTestDatabase;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.annotation.Propagation;
import org.springframework.transaction.annotation.Transactional;

import static io.github.dblock.testing.LockAssertions.assertThat;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * {@code @DataJpaTest} with the test kit's {@link AutoConfigureDistributedLocks}: the JPA slice gets the lock beans on
 * its database, {@code @DistributedLock} on a JPA service runs under its lock, and a lock taken over while the
 * service's JPA transaction runs rolls it back at its commit (commit-time validation under the slice's
 * {@link JpaTransactionManager}).
 */
@DataJpaTest(properties = { "spring.jpa.hibernate.ddl-auto=none", "distributed-lock.node-name=jpa-slice" })
@AutoConfigureTestDatabase(replace = AutoConfigureTestDatabase.Replace.NONE)
@AutoConfigureDistributedLocks
@Import(EntryService.class)
@Transactional(propagation = Propagation.NOT_SUPPORTED)
class DataJpaTestSliceTests {

	@DynamicPropertySource
	static void database(DynamicPropertyRegistry registry) {
		for (String property : TestDatabase.get().springProperties()) {
			int separator = property.indexOf('=');
			registry.add(property.substring(0, separator), () -> property.substring(separator + 1));
		}
		registry.add("spring.jpa.database-platform", () -> TestDatabase.get().isMariaDb()
				? "org.hibernate.dialect.MariaDBDialect" : "org.hibernate.dialect.MySQLDialect");
	}

	@BeforeAll
	static void table() {
		TestDatabase.get().execute("CREATE TABLE IF NOT EXISTS jpa_commit_check (id BIGINT AUTO_INCREMENT PRIMARY KEY,"
				+ " resource VARCHAR(100) NOT NULL, writer VARCHAR(32) NOT NULL)");
	}

	@Autowired
	private EntryService entries;

	@Autowired
	private LockRecorder recorder;

	@Autowired
	private LockFaults faults;

	@Autowired
	private LockTemplate locks;

	@Autowired
	private PlatformTransactionManager transactionManager;

	@Autowired
	private JdbcTemplate jdbc;

	@Test
	void theJpaSliceHasTheLocksAndTheServiceRunsUnderItsLock() {
		assertThat(this.transactionManager).isInstanceOf(JpaTransactionManager.class);
		String resource = UUID.randomUUID().toString();
		this.entries.write(resource, "first", () -> {
		});
		assertThat(this.recorder).hasAcquired("entry:" + resource, 1).hasMode(LockMode.LEASE).isNoLongerHeld();
		assertThat(this.faults).isFree("entry:" + resource);
		assertThat(this.locks).holdsNoLocks();
		assertThat(writers(resource)).isEqualTo(1);
	}

	@Test
	void aLockTakenOverDuringTheJpaTransactionRollsItBackAtItsCommit() {
		String resource = UUID.randomUUID().toString();
		long start = System.nanoTime();
		assertThatExceptionOfType(LockLostException.class).isThrownBy(() -> this.entries.write(resource, "stale",
				() -> this.faults.takeOver("entry:" + resource, Duration.ofSeconds(5))));
		assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(1));
		assertThat(writers(resource)).as("rolled back").isZero();
		assertThatExceptionOfType(LockNotAcquiredException.class).as("the other owner still holds it")
			.isThrownBy(() -> this.entries.write(resource, "late", () -> {
			}));
		assertThat(this.recorder).hasFoundBusy("entry:" + resource);
		this.faults.expire("entry:" + resource);
	}

	private long writers(String resource) {
		return this.jdbc.queryForObject("SELECT COUNT(*) FROM jpa_commit_check WHERE resource = ?", Long.class,
				resource);
	}

}
