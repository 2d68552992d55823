package io.github.dblock.contract;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockLostException;
import io.github.dblock.LockNotAcquiredException;
import io.github.dblock.semaphore.PermitHandle;
import io.github.dblock.semaphore.PermitNotAcquiredException;
import io.github.dblock.semaphore.SemaphoreOptions;
import io.github.dblock.semaphore.SemaphoreTemplate;
import io.github.dblock.test.nodes.SemaphoreNodes;
import io.github.dblock.test.TestDatabase;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * The semaphore contract on the real database: at most N live holders over all nodes, leases on the server's clock,
 * fencing tokens, loss detection, run-time changes of N, and bad input. Three templates on separate pools stand for
 * three nodes.
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class SemaphoreContractTests {

	private static HikariDataSource pool;

	private static SemaphoreTemplate nodeA;

	private static SemaphoreTemplate nodeB;

	private static SemaphoreTemplate nodeC;

	@BeforeAll
	static void nodes() {
		pool = TestDatabase.get().newDataSource(24);
		nodeA = SemaphoreNodes.node("node-a", pool, Duration.ofSeconds(30), Map.of("configured-pool", 2));
		nodeB = SemaphoreNodes.node("node-b", pool);
		nodeC = SemaphoreNodes.node("node-c", pool);
	}

	@AfterAll
	static void close() {
		pool.close();
	}

	private static String newPool(int permits) {
		String name = "sem-" + UUID.randomUUID();
		nodeA.setPermits(name, permits);
		return name;
	}

	private static SemaphoreOptions waitFor(Duration wait) {
		return SemaphoreOptions.defaults().withWaitTime(wait);
	}

	@Test
	void upToNAcquisitionsSucceedAndTheNextTimesOut() {
		String name = newPool(3);
		PermitHandle a = nodeA.acquire(name);
		PermitHandle b = nodeB.acquire(name);
		PermitHandle c = nodeC.acquire(name);
		long start = System.nanoTime();
		assertThatExceptionOfType(PermitNotAcquiredException.class)
			.isThrownBy(() -> nodeA.acquire(name, waitFor(Duration.ofMillis(300))))
			.isInstanceOf(LockNotAcquiredException.class)
			.withMessageContaining("semaphore '" + name + "'")
			.withMessageContaining("all 3 permits")
			.satisfies((ex) -> assertThat(ex.getResource()).isEqualTo(name));
		assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).as("waited the wait time")
			.isGreaterThanOrEqualTo(300L);
		assertThat(nodeB.tryAcquire(name)).isEmpty();
		assertThat(nodeB.availablePermits(name)).isZero();
		a.close();
		b.close();
		c.close();
		assertThat(nodeB.availablePermits(name)).isEqualTo(3);
	}

	@Test
	void aReleaseFreesExactlyOnePermit() {
		String name = newPool(2);
		PermitHandle a = nodeA.acquire(name);
		PermitHandle b = nodeB.acquire(name);
		assertThat(nodeC.tryAcquire(name)).isEmpty();
		a.close();
		assertThat(nodeC.availablePermits(name)).isEqualTo(1);
		PermitHandle c = nodeC.tryAcquire(name).orElseThrow();
		assertThat(nodeA.tryAcquire(name)).as("one release frees one permit").isEmpty();
		b.close();
		c.close();
		a.close(); // closing again does nothing
		assertThat(nodeC.availablePermits(name)).isEqualTo(2);
	}

	@Test
	void aWaiterGetsInWhenAHolderReleases() throws Exception {
		String name = newPool(1);
		PermitHandle held = nodeA.acquire(name);
		ExecutorService executor = Executors.newSingleThreadExecutor();
		try {
			Future<Long> waiter = executor.submit(() -> {
				try (PermitHandle permit = nodeB.acquire(name, waitFor(Duration.ofSeconds(20)))) {
					return permit.fencingToken();
				}
			});
			Thread.sleep(300);
			assertThat(waiter).isNotDone();
			held.close();
			assertThat(waiter.get(10, TimeUnit.SECONDS)).isGreaterThan(held.fencingToken());
		}
		finally {
			executor.shutdownNow();
		}
	}

	@Test
	void anExpiredLeaseFreesItsPermitAndItsHolderCannotReleaseIt() {
		String name = newPool(1);
		long beforeAcquire = System.nanoTime(); // before the server starts the lease, whatever the commit costs
		PermitHandle stale = nodeA.acquire(name, SemaphoreOptions.defaults().withLeaseTime(Duration.ofMillis(1_500)));
		assertThat(nodeB.tryAcquire(name)).as("lease still running").isEmpty();
		PermitHandle successor = nodeB.acquire(name, waitFor(Duration.ofSeconds(10)));
		assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - beforeAcquire)).as("waited for the lease to end")
			.isGreaterThanOrEqualTo(1_450L);
		assertThat(successor.fencingToken()).isGreaterThan(stale.fencingToken());
		assertThat(stale.isHeld()).isFalse();
		assertThatExceptionOfType(LockLostException.class).isThrownBy(stale::close)
			.withMessageContaining("semaphore '" + name + "'")
			.satisfies((ex) -> assertThat(ex.getFencingToken()).isEqualTo(stale.fencingToken()));
		assertThat(nodeC.tryAcquire(name)).as("the stale release freed nothing").isEmpty();
		successor.close();
		assertThat(nodeC.availablePermits(name)).isEqualTo(1);
	}

	@Test
	void anExpiredHolderIsReportedLostAtReleaseEvenWhenNobodyTookItsPermit() throws Exception {
		String name = newPool(2);
		PermitHandle stale = nodeA.acquire(name, SemaphoreOptions.defaults().withLeaseTime(Duration.ofMillis(100)));
		Thread.sleep(300);
		assertThatExceptionOfType(LockLostException.class).isThrownBy(stale::close);
		assertThat(nodeA.availablePermits(name)).isEqualTo(2);
	}

	@Test
	void fencingTokensStrictlyIncreaseOverAllAcquisitionsOfAPool() throws Exception {
		String name = newPool(3);
		List<Long> sequential = new ArrayList<>();
		SemaphoreTemplate[] nodes = { nodeA, nodeB, nodeC };
		for (int i = 0; i < 12; i++) {
			try (PermitHandle permit = nodes[i % 3].acquire(name)) {
				sequential.add(permit.fencingToken());
			}
		}
		assertThat(sequential).isSorted().doesNotHaveDuplicates();
		// concurrent holders get distinct tokens, each above every token handed out before
		List<PermitHandle> held = List.of(nodeA.acquire(name), nodeB.acquire(name), nodeC.acquire(name));
		assertThat(held.stream().map(PermitHandle::fencingToken).distinct().count()).isEqualTo(3);
		assertThat(held.get(0).fencingToken()).isGreaterThan(sequential.get(sequential.size() - 1));
		assertThat(held.get(1).fencingToken()).isGreaterThan(held.get(0).fencingToken());
		assertThat(held.get(2).fencingToken()).isGreaterThan(held.get(1).fencingToken());
		held.forEach(PermitHandle::close);
		// a pool row created later (for example after deletion) still starts above: tokens are at least server µs
		new JdbcTemplate(pool).update("DELETE FROM distributed_lock_sem WHERE name = ?", (Object) name.getBytes());
		nodeA.setPermits(name, 3);
		try (PermitHandle permit = nodeB.acquire(name)) {
			assertThat(permit.fencingToken()).isGreaterThan(held.get(2).fencingToken());
		}
	}

	@Test
	void aRenewedPermitIsKeptPastItsLeaseAndReportedLostWhenRenewalFindsItGone() throws Exception {
		SemaphoreTemplate renewing = SemaphoreNodes.node("renewing", pool, Duration.ofSeconds(1), Map.of());
		String name = newPool(1);
		PermitHandle permit = renewing.acquire(name);
		Thread.sleep(1_500);
		assertThat(permit.isHeld()).as("renewed past its 1 s lease").isTrue();
		assertThat(nodeB.tryAcquire(name)).isEmpty();
		CountDownLatch lost = new CountDownLatch(1);
		AtomicReference<PermitHandle> told = new AtomicReference<>();
		permit.onLost((handle) -> {
			told.set(handle);
			lost.countDown();
		});
		// the lease ends behind the holder's back (as after a pause longer than the lease)
		new JdbcTemplate(pool).update("UPDATE distributed_lock_sem_hold SET expires_at = UTC_TIMESTAMP(6) WHERE name = ?",
				(Object) name.getBytes());
		assertThat(lost.await(5, TimeUnit.SECONDS)).as("onLost called by the next renewal").isTrue();
		assertThat(told.get()).isSameAs(permit);
		assertThat(permit.isHeld()).isFalse();
		assertThatExceptionOfType(LockLostException.class).isThrownBy(permit::close);
		try (PermitHandle next = nodeB.acquire(name)) {
			assertThat(next.fencingToken()).isGreaterThan(permit.fencingToken());
		}
	}

	@Test
	void permitsAreNotReentrantAndMayBeGivenBackByAnotherThread() throws Exception {
		String name = newPool(2);
		PermitHandle first = nodeA.acquire(name);
		PermitHandle second = nodeA.acquire(name);
		assertThat(second.fencingToken()).as("a second permit, not a re-entry").isGreaterThan(first.fencingToken());
		assertThat(nodeA.tryAcquire(name)).as("the same thread holds both permits").isEmpty();
		Thread other = new Thread(first::close);
		other.start();
		other.join(10_000);
		assertThat(nodeA.availablePermits(name)).isEqualTo(1);
		second.close();
		assertThat(nodeA.availablePermits(name)).isEqualTo(2);
	}

	@Test
	void manyThreadsNeverExceedNAndReachNExactly() throws Exception {
		int permits = 3;
		int threads = 12;
		int rounds = 6;
		String name = newPool(permits);
		SemaphoreTemplate[] nodes = { nodeA, nodeB, nodeC };
		AtomicInteger inside = new AtomicInteger();
		AtomicInteger maxInside = new AtomicInteger();
		AtomicInteger overN = new AtomicInteger();
		AtomicInteger sections = new AtomicInteger();
		CountDownLatch nInside = new CountDownLatch(permits);
		ExecutorService executor = Executors.newFixedThreadPool(threads);
		try {
			List<Future<?>> futures = new ArrayList<>();
			for (int t = 0; t < threads; t++) {
				SemaphoreTemplate node = nodes[t % nodes.length];
				futures.add(executor.submit(() -> {
					for (int r = 0; r < rounds; r++) {
						node.executeWithoutResult(name, waitFor(Duration.ofSeconds(60)), (permit) -> {
							int now = inside.incrementAndGet();
							maxInside.accumulateAndGet(now, Math::max);
							if (now > permits) {
								overN.incrementAndGet();
							}
							// the first N holders wait for each other, so that N is provably reached at once
							nInside.countDown();
							try {
								if (nInside.getCount() > 0) {
									nInside.await(10, TimeUnit.SECONDS);
								}
								Thread.sleep(2);
							}
							catch (InterruptedException ex) {
								Thread.currentThread().interrupt();
							}
							inside.decrementAndGet();
							sections.incrementAndGet();
						});
					}
					return null;
				}));
			}
			for (Future<?> future : futures) {
				future.get(3, TimeUnit.MINUTES);
			}
		}
		finally {
			executor.shutdownNow();
		}
		assertThat(nInside.getCount()).as("N holders were inside at once").isZero();
		assertThat(overN).as("sections entered with more than N inside").hasValue(0);
		assertThat(maxInside).hasValue(permits);
		assertThat(sections).hasValue(threads * rounds);
		assertThat(nodeA.availablePermits(name)).isEqualTo(permits);
	}

	@Test
	void loweringThePermitsNeverStrandsOrRevokesAHeldPermit() {
		String name = newPool(3);
		List<PermitHandle> holders = new ArrayList<>(List.of(nodeA.acquire(name), nodeB.acquire(name), nodeC.acquire(name)));
		nodeB.setPermits(name, 1);
		assertThat(nodeA.getPermits(name)).as("every node sees the new count").isEqualTo(1);
		assertThat(nodeA.availablePermits(name)).as("clamped at zero while over the new count").isZero();
		assertThat(holders).allSatisfy((permit) -> assertThat(permit.isHeld()).isTrue());
		holders.remove(0).close(); // releases without LockLostException: nothing was revoked
		assertThat(nodeC.tryAcquire(name)).as("2 holders, new count 1").isEmpty();
		holders.remove(0).close();
		assertThat(nodeC.tryAcquire(name)).as("1 holder, new count 1").isEmpty();
		holders.remove(0).close();
		// after the holders left, exactly the new count can be taken
		PermitHandle only = nodeC.tryAcquire(name).orElseThrow();
		assertThat(nodeA.tryAcquire(name)).isEmpty();
		only.close();
		assertThat(nodeA.availablePermits(name)).isEqualTo(1);
	}

	@Test
	void raisingThePermitsAdmitsWaitersWhileTheHoldersStayInside() throws Exception {
		String name = newPool(1);
		PermitHandle holder = nodeA.acquire(name);
		ExecutorService executor = Executors.newFixedThreadPool(2);
		try {
			List<Future<PermitHandle>> waiters = new ArrayList<>();
			for (SemaphoreTemplate node : List.of(nodeB, nodeC)) {
				waiters.add(executor.submit(() -> node.acquire(name, waitFor(Duration.ofSeconds(20)))));
			}
			Thread.sleep(300);
			assertThat(waiters).noneMatch(Future::isDone);
			nodeA.setPermits(name, 3);
			for (Future<PermitHandle> waiter : waiters) {
				PermitHandle permit = waiter.get(10, TimeUnit.SECONDS);
				assertThat(permit.isHeld()).isTrue();
				permit.close();
			}
			assertThat(holder.isHeld()).isTrue();
		}
		finally {
			executor.shutdownNow();
		}
		holder.close();
	}

	@Test
	void aConfiguredPoolIsCreatedOnceAndARunTimeChangeSurvivesARestart() {
		assertThat(nodeA.getPermits("configured-pool")).isGreaterThanOrEqualTo(1);
		nodeB.setPermits("configured-pool", 5);
		// another node starting with the configuration 2 does not undo the change
		SemaphoreTemplate restarted = SemaphoreNodes.node("restarted", pool, Duration.ofSeconds(30),
				Map.of("configured-pool", 2));
		assertThat(restarted.getPermits("configured-pool")).isEqualTo(5);
		nodeB.setPermits("configured-pool", 2);
		assertThat(nodeC.getPermits("configured-pool")).isEqualTo(2);
	}

	@Test
	void aConfiguredPoolWithoutARowIsCreatedFromTheConfigurationAtItsFirstUse() {
		String name = "lazy-" + UUID.randomUUID();
		assertThatIllegalArgumentException().as("unknown everywhere").isThrownBy(() -> nodeB.acquire(name));
		SemaphoreTemplate configured = SemaphoreNodes.node("configured", pool, Duration.ofSeconds(30), Map.of(name, 2));
		new JdbcTemplate(pool).update("DELETE FROM distributed_lock_sem WHERE name = ?", (Object) name.getBytes());
		try (PermitHandle permit = configured.acquire(name)) {
			assertThat(permit.name()).isEqualTo(name);
			assertThat(nodeB.getPermits(name)).as("created with the configured count").isEqualTo(2);
			assertThat(nodeB.availablePermits(name)).isEqualTo(1);
		}
	}

	@Test
	void badInputIsRejectedBeforeAnythingIsHeld() {
		String name = newPool(1);
		assertThatIllegalArgumentException().isThrownBy(() -> nodeA.acquire(" "))
			.withMessageContaining("Invalid semaphore name").withMessageContaining("blank");
		assertThatIllegalArgumentException().isThrownBy(() -> nodeA.acquire(null))
			.withMessageContaining("must not be null");
		assertThatIllegalArgumentException().isThrownBy(() -> nodeA.tryAcquire("x".repeat(256)))
			.withMessageContaining("256 characters");
		assertThatIllegalArgumentException().isThrownBy(() -> nodeA.setPermits(name, 0))
			.withMessageContaining("at least 1 permit, was 0");
		assertThatIllegalArgumentException().isThrownBy(() -> nodeA.setPermits(name, -3))
			.withMessageContaining("at least 1 permit, was -3");
		assertThatIllegalArgumentException().isThrownBy(() -> nodeA.acquire(name, null))
			.withMessageContaining("options must not be null");
		assertThatIllegalArgumentException().isThrownBy(() -> nodeA.tryAcquire(name, Duration.ofSeconds(-1)));
		assertThatIllegalArgumentException().isThrownBy(() -> nodeA.execute(name, null));
		String unknown = "unknown-" + UUID.randomUUID();
		for (Runnable call : List.<Runnable>of(() -> nodeA.acquire(unknown), () -> nodeA.getPermits(unknown),
				() -> nodeA.availablePermits(unknown))) {
			assertThatIllegalArgumentException().isThrownBy(call::run)
				.withMessageContaining("Semaphore '" + unknown + "' is unknown")
				.withMessageContaining("distributed-lock.semaphores." + unknown + ".permits");
		}
		assertThat(nodeA.getPermits(name)).as("the bad calls changed nothing").isEqualTo(1);
		Optional<PermitHandle> permit = nodeA.tryAcquire(name);
		assertThat(permit).as("and hold nothing").isPresent();
		permit.get().close();
	}

	@Test
	void aTakeWhoseCommitReplyIsLostIsFoundAgainByTheNextAttemptInsteadOfLeakingAPermit() {
		String name = newPool(2);
		AtomicInteger lostReplies = new AtomicInteger();
		SemaphoreTemplate flaky = SemaphoreNodes.node("flaky", losingFirstCommitReply(pool, lostReplies),
				Duration.ofSeconds(30), Map.of());
		PermitHandle permit = flaky.acquire(name, waitFor(Duration.ofSeconds(10)));
		assertThat(lostReplies).as("the first COMMIT committed, its reply was lost").hasValue(1);
		assertThat(new JdbcTemplate(pool).queryForObject("SELECT COUNT(*) FROM distributed_lock_sem_hold WHERE name = ?",
				Integer.class, (Object) name.getBytes())).as("one holder row: the committed one was taken over").isOne();
		assertThat(nodeB.availablePermits(name)).isEqualTo(1);
		permit.close();
		assertThat(nodeB.availablePermits(name)).isEqualTo(2);
	}

	/** Connections whose first {@code COMMIT} statement commits on the server and then fails as a broken connection. */
	private static javax.sql.DataSource losingFirstCommitReply(javax.sql.DataSource target, AtomicInteger lost) {
		return new org.springframework.jdbc.datasource.DelegatingDataSource(target) {

			@Override
			public java.sql.Connection getConnection() throws java.sql.SQLException {
				java.sql.Connection connection = super.getConnection();
				return (java.sql.Connection) java.lang.reflect.Proxy.newProxyInstance(getClass().getClassLoader(),
						new Class<?>[] { java.sql.Connection.class }, (proxy, method, args) -> {
							Object result = invoke(method, connection, args);
							if (result instanceof java.sql.Statement statement && method.getName().equals("createStatement")) {
								return java.lang.reflect.Proxy.newProxyInstance(getClass().getClassLoader(),
										new Class<?>[] { java.sql.Statement.class }, (p, m, a) -> {
											Object r = invoke(m, statement, a);
											if (m.getName().equals("execute") && "COMMIT".equals(a[0])
													&& lost.compareAndSet(0, 1)) {
												throw new java.sql.SQLRecoverableException("reply lost (simulated)", "08S01");
											}
											return r;
										});
							}
							return result;
						});
			}

		};
	}

	private static Object invoke(java.lang.reflect.Method method, Object target, Object[] args) throws Throwable {
		try {
			return method.invoke(target, args);
		}
		catch (java.lang.reflect.InvocationTargetException ex) {
			throw ex.getCause();
		}
	}

	@Test
	void acquisitionsAndHoldsAreObservedByOutcome() {
		SemaphoreTemplate observed = SemaphoreNodes.node("observed", pool);
		MeterRegistry meters = new SimpleMeterRegistry();
		ObservationRegistry observations = ObservationRegistry.create();
		observations.observationConfig().observationHandler(new DefaultMeterObservationHandler(meters));
		observed.setObservationRegistry(observations);
		String name = newPool(1);
		try (PermitHandle permit = observed.acquire(name)) {
			assertThat(observed.tryAcquire(name)).isEmpty();
		}
		assertThat(meters.get("distributed.semaphore.acquire").tags("outcome", "acquired").timer().count()).isEqualTo(1);
		assertThat(meters.get("distributed.semaphore.acquire").tags("outcome", "timed_out").timer().count()).isEqualTo(1);
		assertThat(meters.get("distributed.semaphore.held").timer().count()).isEqualTo(1);
	}

	@Test
	void executeGivesThePermitBackWhenTheActionThrows() {
		String name = newPool(1);
		assertThatExceptionOfType(IllegalStateException.class).isThrownBy(() -> nodeA.execute(name, (permit) -> {
			assertThat(permit.isHeld()).isTrue();
			throw new IllegalStateException("boom");
		}));
		assertThat(nodeB.availablePermits(name)).isEqualTo(1);
		String result = nodeB.execute(name, (permit) -> permit.name());
		assertThat(result).isEqualTo(name);
	}

}
