package io.github.dblock.contract;

import io.github.dblock.jdbc.admin.LockTableAdmin;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import io.github.dblock.LockHandle;
import io.github.dblock.LockInterruptedException;
import io.github.dblock.LockLostException;
import io.github.dblock.LockMode;
import io.github.dblock.LockNotAcquiredException;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.spi.LockProvider;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.jdbc.datasource.DataSourceUtils;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/** The lock contract for {@link LockMode#LEASE}, plus what leases add: expiry on the server's clock. */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
public class LeaseLockContractTests extends HeldLockContractTests {

	@Override
	protected LockMode mode() {
		return LockMode.LEASE;
	}

	@Test
	void anExpiredLeaseIsTakenOverAndTheFormerHolderCannotReleaseIt() throws Exception {
		String resource = newResource();
		long beforeAcquire = System.nanoTime(); // before the server starts the lease, whatever the commit costs
		LockHandle stale = this.nodeA.acquire(resource, LockOptions.defaults().withLeaseTime(Duration.ofMillis(1_500)));
		assertThat(this.nodeB.tryAcquire(resource)).as("lease still running").isEmpty();
		LockHandle successor = this.nodeB.acquire(resource, LockOptions.defaults().withWaitTime(Duration.ofSeconds(10)));
		long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - beforeAcquire);
		assertThat(waitedMillis).as("waited for the lease to run out").isGreaterThanOrEqualTo(1_450L);
		assertThat(successor.fencingToken()).isGreaterThan(stale.fencingToken());
		assertThat(stale.isHeld()).isFalse();
		assertThatExceptionOfType(LockLostException.class).isThrownBy(stale::close)
			.satisfies((ex) -> assertThat(ex.getFencingToken()).isEqualTo(stale.fencingToken()));
		assertThat(currentOwner(resource)).as("the stale release changed nothing").isNotNull();
		assertThat(this.nodeA.tryAcquire(resource)).as("successor still holds").isEmpty();
		successor.close();
		assertThat(currentOwner(resource)).isNull();
	}

	@Test
	void theLeaseIsMeasuredOnTheDatabaseServersClock() throws Exception {
		String resource = newResource();
		Duration lease = Duration.ofSeconds(7);
		try (LockHandle lock = this.nodeA.acquire(resource, LockOptions.defaults().withLeaseTime(lease))) {
			io.github.dblock.jdbc.admin.LockTableAdmin.LockRow row = this.store.row(resource).orElseThrow();
			assertThat(Duration.between(row.acquiredAt(), row.expiresAt())).isEqualTo(lease);
			assertThat(Duration.between(row.acquiredAt(), this.store.now()))
				.as("acquired_at is the store's (the server's UTC) now")
				.isBetween(Duration.ZERO, Duration.ofSeconds(5));
			assertThat(row.held()).isTrue();
			assertThat(row.fencingToken()).isGreaterThanOrEqualTo(lock.fencingToken());
		}
	}

	@Test
	void isHeldTurnsFalseOnceTheLeaseTimeHasElapsedLocally() throws Exception {
		String resource = newResource();
		LockHandle lock = this.nodeA.acquire(resource, LockOptions.defaults().withLeaseTime(Duration.ofMillis(1_500)));
		assertThat(lock.isHeld()).isTrue();
		Thread.sleep(1_700);
		assertThat(lock.isHeld()).isFalse();
		assertThatExceptionOfType(LockLostException.class).isThrownBy(lock::close);
	}


}
