package io.github.dblock.autoconfigure;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The PESSIMISTIC connection cap the auto-configuration derives ({@code distributed-lock.pessimistic.max-connections}
 * unset): the lock pool's size minus a reserve when it is HikariCP; the cap itself is tested in lock-core's
 * {@code PessimisticConnectionCapTests}.
 */
class LockPoolChecksTests {

	private static HikariDataSource pool;

	@BeforeAll
	static void pool() {
		pool = TestDatabase.get().newDataSource(6);
	}

	@AfterAll
	static void close() {
		pool.close();
	}

	@Test
	void theDefaultCapIsTheHikariPoolSizeMinusAReserve() {
		DistributedLockProperties properties = new DistributedLockProperties();
		assertThat(properties.getPessimistic().getMaxConnections()).isNull();
		assertThat(LockPoolChecks.maxConnections(properties, pool)).as("pool of 6: reserve 2").isEqualTo(4);
		for (int[] sizeAndCap : new int[][] { { 1, 1 }, { 2, 1 }, { 3, 1 }, { 10, 8 }, { 12, 9 }, { 40, 30 } }) {
			try (HikariDataSource sized = new HikariDataSource()) {
				sized.setMaximumPoolSize(sizeAndCap[0]);
				assertThat(LockPoolChecks.maxConnections(properties, sized)).as("pool of %d", sizeAndCap[0])
					.isEqualTo(sizeAndCap[1]);
			}
		}
		assertThat(LockPoolChecks.maxConnections(properties, new org.springframework.jdbc.datasource.SimpleDriverDataSource()))
			.as("not HikariCP: the fallback, 5, which PessimisticLocalQueueTests is written for").isEqualTo(5);
		properties.getPessimistic().setMaxConnections(3);
		assertThat(LockPoolChecks.maxConnections(properties, pool)).isEqualTo(3);
	}

}
