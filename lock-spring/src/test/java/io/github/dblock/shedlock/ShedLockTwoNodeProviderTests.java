package io.github.dblock.shedlock;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockMode;
import io.github.dblock.jdbc.admin.LockTableAdmin;
import io.github.dblock.shedlock.DistributedLockShedLockProvider;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * ShedLock's own provider suite against two {@link DistributedLockShedLockProvider}s standing for two nodes (each
 * with its own pool and LEASE provider on the one database): successive {@code lock()} calls alternate between the
 * nodes, so {@code shouldNotReturnSecondLock} asks the second node while the first holds the lock, and the
 * {@code FuzzTester}'s eight threads contend across both. Every inherited test runs; none is disabled, and one
 * runs with a longer lease ({@link AbstractShedLockContract} says why).
 */
class ShedLockTwoNodeProviderTests extends AbstractShedLockContract {

	private static HikariDataSource poolA;

	private static HikariDataSource poolB;

	private static ExtensibleLockProvider twoNodes;

	private static LockTableAdmin admin;

	@BeforeAll
	static void nodes() {
		poolA = TestDatabase.get().newDataSource(6);
		poolB = TestDatabase.get().newDataSource(6);
		LockNodes.migrateOnce(poolA);
		DistributedLockShedLockProvider a = new DistributedLockShedLockProvider(
				LockNodes.provider(LockMode.LEASE, poolA), "shedlock-node-a");
		DistributedLockShedLockProvider b = new DistributedLockShedLockProvider(
				LockNodes.provider(LockMode.LEASE, poolB), "shedlock-node-b");
		twoNodes = new Alternating(a, b);
		admin = new LockTableAdmin(poolA, LockNodes.TABLE, Duration.ofSeconds(5));
	}

	@AfterAll
	static void close() {
		poolA.close();
		poolB.close();
	}

	@Override
	protected ExtensibleLockProvider getLockProvider() {
		return twoNodes;
	}

	@Override
	protected void assertUnlocked(String lockName) {
		assertThat(admin.isLocked(lockName)).as("'%s' locked", lockName).isFalse();
	}

	@Override
	protected void assertLocked(String lockName) {
		assertThat(admin.isLocked(lockName)).as("'%s' locked", lockName).isTrue();
	}

	/** Sends each {@code lock()} to the next node in turn; a lock is extended and unlocked by the node that took it. */
	private record Alternating(ExtensibleLockProvider a, ExtensibleLockProvider b, AtomicInteger calls)
			implements ExtensibleLockProvider {

		Alternating(ExtensibleLockProvider a, ExtensibleLockProvider b) {
			this(a, b, new AtomicInteger());
		}

		@Override
		public Optional<SimpleLock> lock(LockConfiguration configuration) {
			return ((this.calls.getAndIncrement() % 2 == 0) ? this.a : this.b).lock(configuration);
		}

	}

}
