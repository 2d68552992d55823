package io.github.dblock;

import java.time.Duration;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A LEASE hold whose lease has ended (an explicit lease time that ran out, or a renewed lease found lost) is over
 * inside its JVM too: its thread cannot re-enter it (the call is a new acquisition from the database), and the other
 * threads of its JVM are not kept waiting for it. The stale holder's later {@code close()} throws
 * {@link LockLostException} and releases nothing of the next holder's. Without a proxy: the lease simply runs out.
 */
class ExpiredLeaseTests {

	private static final Duration SHORT = Duration.ofMillis(200);

	/**
	 * The wait of a first take on a free resource: a take whose reply comes after its 200 ms lease is given back
	 * (a late grant), which a loaded machine can cause; with a wait the take is simply tried again.
	 */
	private static final Duration FIRST_TAKE_WAIT = Duration.ofSeconds(10);

	private HikariDataSource pool;

	private JdbcTemplate jdbc;

	private LockTemplate nodeA;

	private LockTemplate nodeB;

	private final String resource = "expired-" + UUID.randomUUID();

	/** Two threads of node A, so that holds can be left open on one while the other acts. */
	private final ExecutorService threadT1 = Executors.newSingleThreadExecutor();

	private final ExecutorService threadT2 = Executors.newSingleThreadExecutor();

	private final ExecutorService threadT3 = Executors.newSingleThreadExecutor();

	@BeforeEach
	void nodes() {
		this.pool = TestDatabase.get().newDataSource(8);
		LockNodes.migrateOnce(this.pool);
		this.jdbc = new JdbcTemplate(this.pool);
		this.nodeA = LockNodes.node(LockMode.LEASE, "node-a", this.pool);
		this.nodeB = LockNodes.node(LockMode.LEASE, "node-b", this.pool);
	}

	@AfterEach
	void close() {
		this.threadT1.shutdownNow();
		this.threadT2.shutdownNow();
		this.threadT3.shutdownNow();
		this.pool.close();
	}

	private static LockOptions lease(Duration leaseTime, Duration waitTime) {
		return LockOptions.defaults().withMode(LockMode.LEASE).withLeaseTime(leaseTime).withWaitTime(waitTime);
	}

	private <T> T on(ExecutorService thread, Callable<T> action) throws Exception {
		return thread.submit(action).get(30, TimeUnit.SECONDS);
	}

	private String rowOwner() {
		return this.jdbc.queryForObject("SELECT holder FROM distributed_lock WHERE resource = ?"
				+ " AND expires_at > UTC_TIMESTAMP(6)", String.class, LockNodesBytes.of(this.resource));
	}

	private int liveRows() {
		return this.jdbc.queryForObject("SELECT COUNT(*) FROM distributed_lock WHERE resource = ?"
				+ " AND expires_at > UTC_TIMESTAMP(6)", Integer.class, LockNodesBytes.of(this.resource));
	}

	@Test
	void reEntryOfAnExpiredLeaseWhileAnotherNodeHoldsItFindsItBusy() throws Exception {
		LockHandle outer = on(this.threadT1, () -> this.nodeA.tryAcquire(this.resource, lease(SHORT, FIRST_TAKE_WAIT))
			.orElseThrow());
		Thread.sleep(400);
		LockHandle other = this.nodeB.tryAcquire(this.resource, lease(Duration.ofSeconds(30), Duration.ZERO)).orElseThrow();
		assertThat(other.fencingToken()).isGreaterThan(outer.fencingToken());

		Optional<LockHandle> inner = on(this.threadT1,
				() -> this.nodeA.tryAcquire(this.resource, lease(SHORT, Duration.ZERO)));
		assertThat(inner).as("node B holds the lock: no handle for node A's thread").isEmpty();
		assertThat(outer.isHeld()).isFalse();
		assertThat(on(this.threadT1, () -> closeFails(outer))).as("the outer hold is lost").isTrue();
		assertThat(rowOwner()).as("node B's lease is untouched").startsWith("node-b");
		other.close();
		assertThat(this.nodeA.introspection().localResourceCount()).isZero();
	}

	@Test
	void reEntryOfAnExpiredLeaseThatNobodyTookIsANewAcquisitionWithANewToken() throws Exception {
		LockHandle outer = on(this.threadT1, () -> this.nodeA.tryAcquire(this.resource, lease(SHORT, FIRST_TAKE_WAIT))
			.orElseThrow());
		Thread.sleep(400);
		LockHandle inner = on(this.threadT1,
				() -> this.nodeA.tryAcquire(this.resource, lease(Duration.ofSeconds(30), Duration.ZERO)).orElseThrow());
		assertThat(inner.fencingToken()).as("a new acquisition from the database").isGreaterThan(outer.fencingToken());
		assertThat(inner.isHeld()).isTrue();
		assertThat(liveRows()).isEqualTo(1);
		assertThat(on(this.threadT1, () -> closeFails(outer))).as("the outer hold was lost").isTrue();
		assertThat(inner.isHeld()).as("closing the stale hold releases nothing of the new one").isTrue();
		assertThat(this.nodeB.tryAcquire(this.resource)).as("the new hold still excludes other nodes").isEmpty();
		assertThat(on(this.threadT1, () -> closeFails(inner))).isFalse();
		assertThat(liveRows()).isZero();
		assertThat(this.nodeA.introspection().localResourceCount()).isZero();
	}

	@Test
	void anExpiredHoldDoesNotKeepTheOtherThreadsOfItsJvmWaiting() throws Exception {
		LockHandle stale = on(this.threadT1, () -> this.nodeA.tryAcquire(this.resource, lease(SHORT, FIRST_TAKE_WAIT))
			.orElseThrow());
		long start = System.nanoTime();
		LockHandle next = on(this.threadT2, () -> this.nodeA.acquire(this.resource,
				lease(Duration.ofSeconds(30), Duration.ofSeconds(5))));
		long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
		assertThat(waitedMillis).as("got the lock soon after the stale lease ended, not at the end of its wait time")
			.isLessThan(3_000);
		assertThat(next.fencingToken()).isGreaterThan(stale.fencingToken());
		assertThat(on(this.threadT1, () -> closeFails(stale))).as("the stale holder learns it lost the lock").isTrue();
		assertThat(next.isHeld()).isTrue();
		assertThat(rowOwner()).as("the stale close released nothing of the next holder's").startsWith("node-a");
		assertThat(this.nodeB.tryAcquire(this.resource)).isEmpty();
		assertThat(on(this.threadT2, () -> closeFails(next))).isFalse();
		assertThat(liveRows()).isZero();
		assertThat(this.nodeA.introspection().localResourceCount()).isZero();
	}

	@Test
	void aLocalWaiterIsNotKeptWaitingByAnExpiredHoldWhileAnotherNodeTakesTheLock() throws Exception {
		on(this.threadT1, () -> this.nodeA.tryAcquire(this.resource, lease(SHORT, FIRST_TAKE_WAIT)).orElseThrow());
		Thread.sleep(400);
		LockHandle other = this.nodeB.tryAcquire(this.resource, lease(Duration.ofSeconds(1), Duration.ZERO)).orElseThrow();
		long start = System.nanoTime();
		LockHandle next = on(this.threadT2, () -> this.nodeA.acquire(this.resource,
				lease(Duration.ofSeconds(30), Duration.ofSeconds(10))));
		assertThat(next.fencingToken()).isGreaterThan(other.fencingToken());
		assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).as("waited for node B's lease, not more")
			.isLessThan(5_000);
		on(this.threadT2, () -> closeFails(next));
	}

	/**
	 * The second waiter in the gate's queue becomes the first while the gate passes to a holder whose lease is short
	 * and which never closes: it takes the gate when that lease ends, not at the end of its own wait time.
	 */
	@Test
	void aWaiterThatMovesUpTheQueueIsNotKeptWaitingByAnExpiredHoldTakenAfterItQueued() throws Exception {
		LockHandle first = on(this.threadT1, () -> this.nodeA.acquire(this.resource,
				lease(Duration.ofSeconds(30), FIRST_TAKE_WAIT)));
		java.util.concurrent.Future<LockHandle> stale = this.threadT2.submit(() -> this.nodeA.acquire(this.resource,
				lease(SHORT, Duration.ofSeconds(20))));
		Thread.sleep(300); // T2 is first in the gate's queue
		java.util.concurrent.Future<LockHandle> next = this.threadT3.submit(() -> this.nodeA.acquire(this.resource,
				lease(Duration.ofSeconds(30), Duration.ofSeconds(10))));
		Thread.sleep(300); // T3 is second
		on(this.threadT1, () -> closeFails(first));
		LockHandle staleHold = stale.get(30, TimeUnit.SECONDS);
		long start = System.nanoTime();
		LockHandle nextHold = next.get(30, TimeUnit.SECONDS);
		assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start))
			.as("T3 took the gate soon after T2's 200 ms lease ended, not at the end of its 10 s wait time")
			.isLessThan(5_000);
		assertThat(nextHold.fencingToken()).isGreaterThan(staleHold.fencingToken());
		assertThat(on(this.threadT2, () -> closeFails(staleHold))).as("the stale holder learns it lost the lock").isTrue();
		assertThat(on(this.threadT3, () -> closeFails(nextHold))).isFalse();
		assertThat(this.nodeA.introspection().localResourceCount()).isZero();
	}

	@Test
	void reEntryOfAnExpiredReadOrWriteLeaseIsANewAcquisition() throws Exception {
		LockOptions write = lease(SHORT, Duration.ZERO).withType(LockType.WRITE);
		LockOptions firstWrite = lease(SHORT, FIRST_TAKE_WAIT).withType(LockType.WRITE);
		LockHandle outer = on(this.threadT1, () -> this.nodeA.tryAcquire(this.resource, firstWrite).orElseThrow());
		Thread.sleep(400);
		LockHandle other = this.nodeB.tryAcquire(this.resource, lease(Duration.ofSeconds(30), Duration.ZERO)
			.withType(LockType.WRITE)).orElseThrow();
		assertThat(on(this.threadT1, () -> this.nodeA.tryAcquire(this.resource, write)))
			.as("node B holds the write lock").isEmpty();
		assertThat(on(this.threadT1, () -> this.nodeA.tryAcquire(this.resource, write.withType(LockType.READ))))
			.as("nor can the stale write hold serve a read").isEmpty();
		assertThat(on(this.threadT1, () -> closeFails(outer))).isTrue();
		other.close();
		LockOptions laterWrite = lease(Duration.ofSeconds(30), FIRST_TAKE_WAIT).withType(LockType.WRITE);
		LockHandle again = on(this.threadT1, () -> this.nodeA.tryAcquire(this.resource, laterWrite).orElseThrow());
		assertThat(again.fencingToken()).isGreaterThan(other.fencingToken());
		assertThat(on(this.threadT1, () -> closeFails(again))).isFalse();
		assertThat(this.nodeA.introspection().localResourceCount()).isZero();
	}

	/** Closes the handle; whether that threw {@link LockLostException}. */
	private static boolean closeFails(LockHandle handle) {
		try {
			handle.close();
			return false;
		}
		catch (LockLostException ex) {
			return true;
		}
	}

	/** The lock table's key for a resource name. */
	private static final class LockNodesBytes {

		static byte[] of(String resource) {
			return resource.getBytes(java.nio.charset.StandardCharsets.UTF_8);
		}

	}

}
