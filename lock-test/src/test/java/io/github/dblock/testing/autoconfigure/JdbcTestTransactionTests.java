package io.github.dblock.testing.autoconfigure;

import java.util.UUID;

import io.github.dblock.test.TestDatabase;
import io.github.dblock.testing.LockFaults;
import io.github.dblock.testing.LockRecorder;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.jdbc.test.autoconfigure.AutoConfigureTestDatabase;
import org.springframework.boot.jdbc.test.autoconfigure.JdbcTest;
import org.springframework.context.annotation.Import;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.support.TransactionSynchronizationManager;

import static io.github.dblock.testing.LockAssertions.assertThat;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * What {@link AutoConfigureDistributedLocks} says of a slice's test transaction: {@code @JdbcTest} runs the test in a
 * transaction on the lock's data source, so a LEASE lock the code under test takes stays held until that transaction
 * ends (its release waits for the commit-time check), although the locked method has returned.
 */
@JdbcTest
@AutoConfigureTestDatabase(replace = AutoConfigureTestDatabase.Replace.NONE)
@AutoConfigureDistributedLocks
@Import(InvoiceService.class)
class JdbcTestTransactionTests {

	@DynamicPropertySource
	static void database(DynamicPropertyRegistry registry) {
		JdbcTestSliceTests.database(registry);
	}

	@Autowired
	private InvoiceService invoices;

	@Autowired
	private LockRecorder recorder;

	@Autowired
	private LockFaults faults;

	@Test
	void aLockTakenInTheTestsTransactionIsHeldUntilItEnds() {
		assertThat(TransactionSynchronizationManager.isActualTransactionActive()).isTrue();
		String id = UUID.randomUUID().toString();
		this.invoices.settle(id);
		assertThat(this.recorder).hasAcquired("invoice:" + id);
		assertThat(this.faults).isLocked("invoice:" + id);
	}

}
