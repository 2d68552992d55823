package io.github.dblock.shedlock;

import java.time.Duration;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockMode;
import io.github.dblock.jdbc.admin.LockTableAdmin;
import io.github.dblock.shedlock.DistributedLockShedLockProvider;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * ShedLock's own provider suite ({@code shedlock-test-support}: {@code AbstractLockProviderIntegrationTest} and
 * {@code AbstractExtensibleLockProviderIntegrationTest}, with its {@code FuzzTester}) against
 * {@link DistributedLockShedLockProvider}, one node on the real database. Every inherited test runs; none is
 * disabled, and one runs with a longer lease ({@link AbstractShedLockContract} says why).
 */
class ShedLockProviderTests extends AbstractShedLockContract {

	private static HikariDataSource pool;

	private static DistributedLockShedLockProvider provider;

	private static LockTableAdmin admin;

	@BeforeAll
	static void node() {
		pool = TestDatabase.get().newDataSource(10);
		LockNodes.migrateOnce(pool);
		provider = new DistributedLockShedLockProvider(LockNodes.provider(LockMode.LEASE, pool), "shedlock-node");
		admin = new LockTableAdmin(pool, LockNodes.TABLE, Duration.ofSeconds(5));
	}

	@AfterAll
	static void close() {
		pool.close();
	}

	@Override
	protected ExtensibleLockProvider getLockProvider() {
		return provider;
	}

	@Override
	protected void assertUnlocked(String lockName) {
		assertThat(admin.isLocked(lockName)).as("'%s' locked", lockName).isFalse();
	}

	@Override
	protected void assertLocked(String lockName) {
		assertThat(admin.isLocked(lockName)).as("'%s' locked", lockName).isTrue();
	}

}
