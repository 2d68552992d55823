package io.github.dblock.autoconfigure;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockTemplate;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Acquisitions and holds are observed, and with Micrometer's observation handler they become timers tagged by mode
 * and outcome, a counter of lost locks, and a gauge of locks held by this JVM.
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class LockObservationTests {

	private static HikariDataSource pool;

	@BeforeAll
	static void pool() {
		pool = TestDatabase.get().newDataSource(4);
		LockNodes.migrateOnce(pool);
	}

	@AfterAll
	static void close() {
		pool.close();
	}

	private static MeterRegistry observe(LockTemplate node) {
		MeterRegistry meters = new SimpleMeterRegistry();
		ObservationRegistry observations = ObservationRegistry.create();
		observations.observationConfig().observationHandler(new DefaultMeterObservationHandler(meters));
		node.setObservationRegistry(observations);
		new LockMetricsConfiguration().distributedLockMeterBinder(node).bindTo(meters);
		return meters;
	}

	@Test
	void acquisitionsAreTimedByModeAndOutcomeAndHoldsAreTimed() {
		LockTemplate node = LockNodes.node(LockMode.LEASE, "observed", pool);
		MeterRegistry meters = observe(node);
		LockTemplate other = LockNodes.node(LockMode.LEASE, "other", pool);
		String resource = "observed-" + UUID.randomUUID();
		try (LockHandle lock = node.acquire(resource)) {
			assertThat(meters.get("distributed.lock.held.local").gauge().value()).isEqualTo(1.0);
			try (LockHandle held = other.acquire(resource + "-x")) {
				assertThat(node.tryAcquire(resource + "-x")).isEmpty();
			}
		}
		assertThat(meters.get("distributed.lock.held.local").gauge().value()).isZero();
		Timer acquired = meters.get("distributed.lock.acquire").tags("mode", "lease", "outcome", "acquired").timer();
		Timer timedOut = meters.get("distributed.lock.acquire").tags("mode", "lease", "outcome", "timed_out").timer();
		assertThat(acquired.count()).isEqualTo(1);
		assertThat(timedOut.count()).isEqualTo(1);
		assertThat(acquired.getId().getTag("resource")).as("no resource tag by default").isNull();
		assertThat(meters.get("distributed.lock.held").tags("mode", "lease").timer().count()).isEqualTo(1);
	}

	@Test
	void theResourceBecomesATagOnlyWhenAskedFor() {
		LockTemplate node = LockNodes.node(LockMode.LEASE, "tagged", pool);
		MeterRegistry meters = observe(node);
		node.setResourceAsTag(true);
		String resource = "tagged-" + UUID.randomUUID();
		node.acquire(resource).close();
		assertThat(meters.get("distributed.lock.acquire").tags("resource", resource).timer().count()).isEqualTo(1);
	}

	@Test
	void aLockFoundLostWhileHeldIsCounted() {
		LockTemplate node = new LockTemplate(List.of(LockNodes.provider(LockMode.LEASE, pool)), LockMode.LEASE,
				Duration.ZERO, LockTemplate.MIN_DEFAULT_LEASE_TIME, "losing");
		MeterRegistry meters = observe(node);
		String resource = "counted-loss-" + UUID.randomUUID();
		LockHandle lock = node.acquire(resource);
		new JdbcTemplate(pool).update("UPDATE distributed_lock SET owner_token = 'someone-else', "
				+ "expires_at = UTC_TIMESTAMP(6) + INTERVAL 1 MINUTE WHERE resource = ?",
				(Object) resource.getBytes(StandardCharsets.UTF_8));
		await().atMost(Duration.ofSeconds(5)).ignoreExceptions()
			.untilAsserted(() -> assertThat(meters.get("distributed.lock.held.lost").counter().count()).isEqualTo(1));
		assertThat(lock.isHeld()).isFalse();
	}

}
