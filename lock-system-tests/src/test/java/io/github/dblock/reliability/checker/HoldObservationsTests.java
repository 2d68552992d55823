package io.github.dblock.reliability.checker;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.CurrentLock;
import io.github.dblock.LockLostException;
import io.github.dblock.LockMode;
import io.github.dblock.LockTemplate;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * The loss time the checker records for a {@code @DistributedLock} section: a method whose
 * {@code @Transactional(REQUIRES_NEW)} waits for a pooled connection past the lease starts with its lock already lost,
 * so the {@code onLost} listener it registers runs at once, long after the library declared the loss at the lease's
 * end. {@link HoldObservations} gives the library's own time.
 */
class HoldObservationsTests {

	private static final Duration LEASE = Duration.ofSeconds(1);

	private static final Duration POOL_HELD = Duration.ofMillis(2_500);

	@Test
	void aMethodThatStartsAfterItsLeaseEndedIsRecordedLostAtTheLeaseEndNotWhenItsListenerRan() throws Exception {
		String resource = "late-method-" + UUID.randomUUID();
		try (HikariDataSource pool = TestDatabase.get().newDataSource(2, (config) -> {
			config.setMinimumIdle(2);
			config.setConnectionTimeout(10_000);
		})) {
			LockNodes.migrateOnce(pool);
			LockTemplate locks = new LockTemplate(List.of(LockNodes.provider(LockMode.LEASE, pool)), LockMode.LEASE,
					Duration.ZERO, LEASE, "late-method");
			HoldObservations holds = new HoldObservations();
			ObservationRegistry registry = HoldObservations.registry(holds);
			registry.observationConfig().observationHandler(new PoolHolder(pool));
			locks.setObservationRegistry(registry);
			AtomicLong entered = new AtomicLong();
			AtomicLong listened = new AtomicLong();
			AtomicReference<HoldObservations.Hold> hold = new AtomicReference<>();
			try (LockedMethods methods = new LockedMethods(locks, pool)) {
				assertThatExceptionOfType(LockLostException.class).as("the release of the lost lease")
					.isThrownBy(() -> methods.service().lockedInNewTransaction(resource, () -> {
						entered.set(System.nanoTime());
						hold.set(holds.current(resource));
						CurrentLock.get(resource)
							.orElseThrow()
							.onLost((l) -> listened.compareAndSet(0, System.nanoTime()));
					}));
			}
			HoldObservations.Hold granted = hold.get();
			assertThat(granted).as("the library's hold of the resource on this thread").isNotNull();
			assertThat(entered.get() - granted.grantedNanos()).as("the method began once the pool was given back")
				.isGreaterThanOrEqualTo(POOL_HELD.toNanos() - Duration.ofMillis(200).toNanos());
			assertThat(listened.get()).as("the method's listener ran when it was registered").isNotZero();
			assertThat(listened.get() - granted.grantedNanos()).isGreaterThan(LEASE.toNanos() * 2);
			Long recorded = HoldObservations.lostAt(listened.get(), granted);
			assertThat(recorded).isNotNull();
			assertThat(recorded - granted.grantedNanos()).as("recorded loss, ns after the grant: at the lease's end")
				.isBetween(LEASE.toNanos() / 2, LEASE.toNanos() + Duration.ofMillis(300).toNanos());
		}
	}

	/** When a hold starts, takes every connection of the pool and gives them back {@link #POOL_HELD} later. */
	private record PoolHolder(HikariDataSource pool) implements ObservationHandler<Observation.Context> {

		@Override
		public boolean supportsContext(Observation.Context context) {
			return "distributed.lock.held".equals(context.getName());
		}

		@Override
		public void onStart(Observation.Context context) {
			try {
				Connection first = this.pool.getConnection();
				Connection second = this.pool.getConnection();
				new Thread(() -> {
					try (first; second) {
						Thread.sleep(POOL_HELD.toMillis());
					}
					catch (SQLException | InterruptedException ex) {
						throw new IllegalStateException(ex);
					}
				}, "pool-holder").start();
			}
			catch (SQLException ex) {
				throw new IllegalStateException(ex);
			}
		}

	}

}
