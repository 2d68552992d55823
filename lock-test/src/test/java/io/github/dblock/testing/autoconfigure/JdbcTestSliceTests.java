package io.github.dblock.testing.autoconfigure;

import java.util.UUID;

import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockNotAcquiredException;
import io.github.dblock.LockTemplate;
import io.github.dblock.jdbc.admin.LockTableAdmin;
import io.github.dblock.test.TestDatabase;
import io.github.dblock.testing.JdbcLockFaults;
import io.github.dblock.testing.LockFaults;
import io.github.dblock.testing.LockRecorder;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.jdbc.test.autoconfigure.AutoConfigureTestDatabase;
import org.springframework.boot.jdbc.test.autoconfigure.JdbcTest;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Import;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.annotation.Propagation;
import org.springframework.transaction.annotation.Transactional;

import static io.github.dblock.testing.LockAssertions.assertThat;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * {@code @JdbcTest} with {@link AutoConfigureDistributedLocks}: the slice gets the lock beans on its database (the
 * shared test database), {@code @DistributedLock} works on an imported bean, and the kit's recorder (cleared before
 * each test) and faults are beans.
 */
@JdbcTest(properties = "distributed-lock.node-name=slice")
@AutoConfigureTestDatabase(replace = AutoConfigureTestDatabase.Replace.NONE)
@AutoConfigureDistributedLocks
@Import(InvoiceService.class)
@Transactional(propagation = Propagation.NOT_SUPPORTED)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class JdbcTestSliceTests {

	@DynamicPropertySource
	static void database(DynamicPropertyRegistry registry) {
		for (String property : TestDatabase.get().springProperties()) {
			int separator = property.indexOf('=');
			registry.add(property.substring(0, separator), () -> property.substring(separator + 1));
		}
	}

	@Autowired
	private ApplicationContext context;

	@Autowired
	private InvoiceService invoices;

	@Autowired
	private LockRecorder recorder;

	@Autowired
	private LockFaults faults;

	@Test
	@Order(1)
	void theSliceHasTheLockBeansAndTheMethodRunsUnderItsLock() {
		assertThat(this.context.getBeansOfType(LockTemplate.class)).hasSize(1);
		assertThat(this.context.getBeansOfType(LockTableAdmin.class)).hasSize(1);
		assertThat(this.faults).isInstanceOf(JdbcLockFaults.class);
		String id = UUID.randomUUID().toString();
		LockHandle ranUnder = this.invoices.settle(id);
		assertThat(this.recorder).hasAcquired("invoice:" + id, 1)
			.hasMode(LockMode.LEASE)
			.hasFencingToken(ranUnder.fencingToken())
			.wasTakenByNode("slice")
			.isNoLongerHeld();
		assertThat(this.faults).isFree("invoice:" + id);
		assertThat(this.context.getBean(LockTemplate.class)).holdsNoLocks();
	}

	@Test
	@Order(2)
	void theRecorderIsClearedBeforeEachTest() {
		assertThat(this.recorder).hasNoAcquisitions();
	}

	@Test
	@Order(3)
	void aLockHeldByAnotherOwnerMakesTheMethodFailAtOnce() {
		String id = UUID.randomUUID().toString();
		long token = this.faults.takeOver("invoice:" + id, java.time.Duration.ofSeconds(2));
		assertThatExceptionOfType(LockNotAcquiredException.class).isThrownBy(() -> this.invoices.settle(id));
		assertThat(this.recorder).hasNotAcquired("invoice:" + id).hasFoundBusy("invoice:" + id)
			.hasMode(LockMode.LEASE);
		this.faults.expire("invoice:" + id);
		assertThat(this.invoices.settle(id).fencingToken()).isGreaterThan(token);
	}

}
