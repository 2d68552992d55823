package io.github.dblock.contract;

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

import io.github.dblock.LockHandle;
import io.github.dblock.LockInterruptedException;
import io.github.dblock.LockLostException;
import io.github.dblock.LockMode;
import io.github.dblock.LockNotAcquiredException;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.test.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * The behaviour every lock mode promises, checked against the real database. A subclass per mode supplies the
 * mode; "nodes" are separate {@link LockTemplate}s (own providers, own JVM-local state) that meet only in the
 * database, as separate application instances would.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class LockContractTests {

	private LockNodes nodes;

	private LockTemplate nodeA;

	private LockTemplate nodeB;

	protected abstract LockMode mode();

	@BeforeAll
	void startNodes() {
		this.nodes = new LockNodes(24);
		this.nodeA = this.nodes.node(mode(), "node-a");
		this.nodeB = this.nodes.node(mode(), "node-b");
		TestDatabase.get().execute("CREATE TABLE IF NOT EXISTS lock_test_counter (name VARCHAR(100) PRIMARY KEY, "
				+ "value BIGINT NOT NULL)");
	}

	@AfterAll
	void stopNodes() {
		this.nodes.close();
	}

	private static String newResource() {
		return "contract-" + UUID.randomUUID();
	}

	@Test
	void manyThreadsOnTwoNodesNeverOverlapAndANonAtomicCounterEndsExact() throws Exception {
		String resource = newResource();
		createCounter(resource);
		int threadsPerNode = 4;
		int incrementsPerThread = 25;
		AtomicInteger inside = new AtomicInteger();
		AtomicInteger overlaps = new AtomicInteger();
		List<Callable<Void>> workers = new ArrayList<>();
		for (LockTemplate node : List.of(this.nodeA, this.nodeB)) {
			for (int t = 0; t < threadsPerNode; t++) {
				workers.add(() -> {
					for (int i = 0; i < incrementsPerThread; i++) {
						node.executeWithoutResult(resource, LockOptions.defaults().withWaitTime(Duration.ofSeconds(60)),
								(lock) -> {
									if (inside.incrementAndGet() != 1) {
										overlaps.incrementAndGet();
									}
									incrementCounterNonAtomically(resource);
									inside.decrementAndGet();
								});
					}
					return null;
				});
			}
		}
		runAll(workers);
		assertThat(overlaps).hasValue(0);
		assertThat(readCounter(resource)).isEqualTo(2L * threadsPerNode * incrementsPerThread);
		assertThat(this.nodeA.localResourceCount()).isZero();
		assertThat(this.nodeB.localResourceCount()).isZero();
	}

	@Test
	void fencingTokensStrictlyIncreaseInAcquisitionOrderAcrossNodes() throws Exception {
		String resource = newResource();
		List<Long> tokens = Collections.synchronizedList(new ArrayList<>());
		List<Callable<Void>> workers = new ArrayList<>();
		for (LockTemplate node : List.of(this.nodeA, this.nodeB, this.nodeA, this.nodeB)) {
			workers.add(() -> {
				for (int i = 0; i < 20; i++) {
					node.executeWithoutResult(resource, LockOptions.defaults().withWaitTime(Duration.ofSeconds(60)),
							(lock) -> tokens.add(lock.fencingToken()));
				}
				return null;
			});
		}
		runAll(workers);
		assertThat(tokens).hasSize(80);
		for (int i = 1; i < tokens.size(); i++) {
			assertThat(tokens.get(i)).as("token %d after %d", i, i - 1).isGreaterThan(tokens.get(i - 1));
		}
	}

	@Test
	void theHoldingThreadMayReacquireAndTheLockIsReleasedWhenTheLastHoldCloses() {
		String resource = newResource();
		LockHandle outer = this.nodeA.acquire(resource);
		LockHandle inner = this.nodeA.acquire(resource);
		assertThat(inner.fencingToken()).isEqualTo(outer.fencingToken());
		inner.close();
		assertThat(outer.isHeld()).isTrue();
		assertThat(this.nodeB.tryAcquire(resource)).isEmpty();
		outer.close();
		assertThat(outer.isHeld()).isFalse();
		try (LockHandle other = this.nodeB.tryAcquire(resource).orElseThrow()) {
			assertThat(other.fencingToken()).isGreaterThan(outer.fencingToken());
		}
	}

	@Test
	void anotherThreadOfTheSameNodeIsAnotherOwner() throws Exception {
		String resource = newResource();
		try (LockHandle held = this.nodeA.acquire(resource)) {
			Optional<LockHandle> fromOtherThread = callInThread(() -> this.nodeA.tryAcquire(resource));
			assertThat(fromOtherThread).isEmpty();
			assertThat(held.isHeld()).isTrue();
		}
		Optional<LockHandle> afterRelease = callInThread(() -> {
			Optional<LockHandle> lock = this.nodeA.tryAcquire(resource);
			lock.ifPresent(LockHandle::close);
			return lock;
		});
		assertThat(afterRelease).isPresent();
	}

	@Test
	void aBusyLockTimesOutAfterTheWaitTimeNamingResourceWaitAndHolder() throws Exception {
		String resource = newResource();
		try (LockHandle held = this.nodeA.acquire(resource)) {
			Duration wait = Duration.ofMillis(300);
			long start = System.nanoTime();
			assertThatExceptionOfType(LockNotAcquiredException.class)
				.isThrownBy(() -> this.nodeB.acquire(resource, LockOptions.defaults().withWaitTime(wait)))
				.satisfies((ex) -> {
					assertThat(ex.getResource()).isEqualTo(resource);
					assertThat(ex.getWaitTime()).isEqualTo(wait);
					assertThat(ex.getHolder()).contains("node-a");
					assertThat(ex.getMessage()).contains(resource).contains("node-a").contains("PT0.3S");
				});
			long elapsedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
			assertThat(elapsedMillis).isBetween(300L, 5_000L);
			assertThat(this.nodeB.tryAcquire(resource, Duration.ZERO)).isEmpty();
		}
	}

	@Test
	void aWaiterGetsTheLockSoonAfterTheHolderReleasesIt() throws Exception {
		String resource = newResource();
		LockHandle held = this.nodeA.acquire(resource);
		CountDownLatch waiting = new CountDownLatch(1);
		Future<Long> waiter = Executors.newSingleThreadExecutor().submit(() -> {
			waiting.countDown();
			try (LockHandle lock = this.nodeB.acquire(resource, LockOptions.defaults().withWaitTime(Duration.ofSeconds(20)))) {
				return lock.fencingToken();
			}
		});
		waiting.await();
		Thread.sleep(200);
		assertThat(waiter).isNotDone();
		long releasedAt = System.nanoTime();
		held.close();
		long token = waiter.get(20, TimeUnit.SECONDS);
		assertThat(token).isGreaterThan(held.fencingToken());
		assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - releasedAt)).isLessThan(5_000);
	}

	@Test
	void anExpiredLeaseIsTakenOverAndTheFormerHolderCannotReleaseIt() throws Exception {
		String resource = newResource();
		LockHandle stale = this.nodeA.acquire(resource, LockOptions.defaults().withLeaseTime(Duration.ofMillis(400)));
		assertThat(this.nodeB.tryAcquire(resource)).as("lease still running").isEmpty();
		long start = System.nanoTime();
		LockHandle successor = this.nodeB.acquire(resource, LockOptions.defaults().withWaitTime(Duration.ofSeconds(10)));
		long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
		assertThat(waitedMillis).as("waited for the lease to run out").isGreaterThanOrEqualTo(200L);
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
			try (Connection c = this.nodes.dataSource().getConnection();
					PreparedStatement ps = c.prepareStatement("SELECT TIMESTAMPDIFF(MICROSECOND, acquired_at, expires_at),"
							+ " TIMESTAMPDIFF(MICROSECOND, acquired_at, UTC_TIMESTAMP(6)) FROM distributed_lock WHERE resource = ?")) {
				ps.setBytes(1, resource.getBytes(java.nio.charset.StandardCharsets.UTF_8));
				try (ResultSet rs = ps.executeQuery()) {
					assertThat(rs.next()).isTrue();
					assertThat(rs.getLong(1)).isEqualTo(lease.toNanos() / 1000);
					assertThat(rs.getLong(2)).as("acquired_at is the server's UTC now").isBetween(0L, 5_000_000L);
				}
			}
		}
	}

	@Test
	void concurrentFirstAcquisitionsOfNewResourcesYieldExactlyOneOwnerAndNoErrors() throws Exception {
		int contenders = 12;
		List<LockTemplate> nodes = new ArrayList<>();
		for (int i = 0; i < contenders; i++) {
			nodes.add(this.nodes.node(mode(), "racer-" + i));
		}
		ExecutorService pool = Executors.newFixedThreadPool(contenders);
		try {
			for (int round = 0; round < 15; round++) {
				String resource = newResource();
				CyclicBarrier start = new CyclicBarrier(contenders);
				CountDownLatch allTried = new CountDownLatch(contenders);
				List<Future<Boolean>> results = new ArrayList<>();
				for (LockTemplate node : nodes) {
					results.add(pool.submit(() -> {
						start.await();
						Optional<LockHandle> lock;
						try {
							lock = node.tryAcquire(resource);
						}
						finally {
							allTried.countDown();
						}
						if (lock.isPresent()) {
							allTried.await(); // hold until everyone has tried
							lock.get().close();
						}
						return lock.isPresent();
					}));
				}
				int winners = 0;
				for (Future<Boolean> result : results) {
					winners += result.get(60, TimeUnit.SECONDS) ? 1 : 0; // any exception fails here
				}
				assertThat(winners).as("round %d", round).isEqualTo(1);
			}
		}
		finally {
			pool.shutdownNow();
		}
	}

	@Test
	void waitingIsInterruptibleAndLeavesNothingHeld() throws Exception {
		String resource = newResource();
		try (LockHandle held = this.nodeA.acquire(resource)) {
			AtomicInteger interruptedFlag = new AtomicInteger(-1);
			Thread waiter = new Thread(() -> {
				try {
					this.nodeB.acquire(resource, LockOptions.defaults().withWaitTime(Duration.ofSeconds(30)));
				}
				catch (LockInterruptedException ex) {
					interruptedFlag.set(Thread.currentThread().isInterrupted() ? 1 : 0);
				}
			});
			waiter.start();
			Thread.sleep(200);
			waiter.interrupt();
			waiter.join(5_000);
			assertThat(waiter.isAlive()).isFalse();
			assertThat(interruptedFlag).hasValue(1);
			assertThat(this.nodeB.localResourceCount()).isZero();
		}
	}

	@Test
	void aHandleMustBeClosedByTheThreadThatAcquiredIt() throws Exception {
		String resource = newResource();
		LockHandle lock = this.nodeA.acquire(resource);
		Throwable fromOtherThread = callInThread(() -> {
			try {
				lock.close();
				return null;
			}
			catch (IllegalStateException ex) {
				return ex;
			}
		});
		assertThat(fromOtherThread).isInstanceOf(IllegalStateException.class).hasMessageContaining(resource);
		assertThat(lock.isHeld()).isTrue();
		lock.close();
		lock.close(); // idempotent
		assertThat(this.nodeB.tryAcquire(resource).map((l) -> {
			l.close();
			return true;
		})).contains(true);
	}

	@Test
	void resourceNamesAreComparedExactlyAndMayBeAnyUnicodeUpTo255Characters() {
		String base = "Case-" + UUID.randomUUID();
		try (LockHandle upper = this.nodeA.acquire(base);
				LockHandle lower = this.nodeB.acquire(base.toLowerCase());
				LockHandle padded = this.nodeB.acquire(base + " ")) {
			assertThat(upper.resource()).isNotEqualTo(lower.resource());
			assertThat(padded.isHeld()).isTrue();
		}
		String emoji = "🔒".repeat(250) + UUID.randomUUID().toString().substring(0, 5);
		try (LockHandle lock = this.nodeA.acquire(emoji)) {
			assertThat(lock.resource()).isEqualTo(emoji);
			assertThat(this.nodeB.tryAcquire(emoji)).isEmpty();
		}
		assertThatIllegalArgumentException().isThrownBy(() -> this.nodeA.acquire(null)).withMessageContaining("null");
		assertThatIllegalArgumentException().isThrownBy(() -> this.nodeA.acquire("  ")).withMessageContaining("blank");
		assertThatIllegalArgumentException().isThrownBy(() -> this.nodeA.acquire("x".repeat(256)))
			.withMessageContaining("256");
		assertThatIllegalArgumentException().isThrownBy(() -> this.nodeA.acquire("bad\uD800"))
			.withMessageContaining("surrogate");
		assertThat(this.nodeA.localResourceCount()).isZero();
	}

	@Test
	void invalidOptionsAreRejectedAtCallTime() {
		assertThatIllegalArgumentException().isThrownBy(() -> LockOptions.defaults().withWaitTime(Duration.ofMillis(-1)));
		assertThatIllegalArgumentException().isThrownBy(() -> LockOptions.defaults().withLeaseTime(Duration.ZERO));
	}

	@Test
	void isHeldTurnsFalseOnceTheLeaseTimeHasElapsedLocally() throws Exception {
		String resource = newResource();
		LockHandle lock = this.nodeA.acquire(resource, LockOptions.defaults().withLeaseTime(Duration.ofMillis(150)));
		assertThat(lock.isHeld()).isTrue();
		Thread.sleep(250);
		assertThat(lock.isHeld()).isFalse();
		assertThatExceptionOfType(LockLostException.class).isThrownBy(lock::close);
	}

	// --- helpers ---

	private static <T> T callInThread(Callable<T> action) throws Exception {
		ExecutorService executor = Executors.newSingleThreadExecutor();
		try {
			return executor.submit(action).get(30, TimeUnit.SECONDS);
		}
		finally {
			executor.shutdownNow();
		}
	}

	private static void runAll(List<Callable<Void>> workers) throws Exception {
		ExecutorService pool = Executors.newFixedThreadPool(workers.size());
		try {
			List<Future<Void>> futures = pool.invokeAll(workers, 5, TimeUnit.MINUTES);
			for (Future<Void> future : futures) {
				future.get(); // propagates any worker failure
			}
		}
		finally {
			pool.shutdownNow();
		}
	}

	private String currentOwner(String resource) throws SQLException {
		try (Connection c = this.nodes.dataSource().getConnection();
				PreparedStatement ps = c.prepareStatement("SELECT owner_token FROM distributed_lock WHERE resource = ?")) {
			ps.setBytes(1, resource.getBytes(java.nio.charset.StandardCharsets.UTF_8));
			try (ResultSet rs = ps.executeQuery()) {
				assertThat(rs.next()).isTrue();
				return rs.getString(1);
			}
		}
	}

	private void createCounter(String name) throws SQLException {
		try (Connection c = this.nodes.dataSource().getConnection();
				PreparedStatement ps = c.prepareStatement("INSERT INTO lock_test_counter (name, value) VALUES (?, 0)")) {
			ps.setString(1, name);
			ps.executeUpdate();
		}
	}

	/** Read, then write: loses updates unless callers are mutually excluded. */
	private void incrementCounterNonAtomically(String name) {
		try (Connection c = this.nodes.dataSource().getConnection()) {
			long value;
			try (PreparedStatement read = c.prepareStatement("SELECT value FROM lock_test_counter WHERE name = ?")) {
				read.setString(1, name);
				try (ResultSet rs = read.executeQuery()) {
					rs.next();
					value = rs.getLong(1);
				}
			}
			Thread.yield();
			try (PreparedStatement write = c.prepareStatement("UPDATE lock_test_counter SET value = ? WHERE name = ?")) {
				write.setLong(1, value + 1);
				write.setString(2, name);
				write.executeUpdate();
			}
		}
		catch (SQLException ex) {
			throw new IllegalStateException(ex);
		}
	}

	private long readCounter(String name) throws SQLException {
		try (Connection c = this.nodes.dataSource().getConnection();
				PreparedStatement ps = c.prepareStatement("SELECT value FROM lock_test_counter WHERE name = ?")) {
			ps.setString(1, name);
			try (ResultSet rs = ps.executeQuery()) {
				rs.next();
				return rs.getLong(1);
			}
		}
	}

}
