package io.github.dblock;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * One {@link LockTemplate} serves every mode, and the threads of one JVM share the local queue of a resource whatever
 * mode they ask for. A caller only ever gets a hold of the mode it asked for: the in-memory hand-off of a LEASE goes
 * to a queued thread of the same mode only, and a thread that holds a resource in one mode and asks for it in another
 * gets {@link LockModeConflictException} at once (never a hold of the other mode, never a wait for itself). Checked
 * against the real server, with a second node and a second connection probing the row.
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class CrossModeHoldTests {

	private HikariDataSource pool;

	private HikariDataSource otherPool;

	private LockTemplate node;

	private LockTemplate otherNode;

	private final String resource = "cross-mode-" + UUID.randomUUID();

	@BeforeEach
	void nodes() {
		this.pool = TestDatabase.get().newDataSource(8);
		this.otherPool = TestDatabase.get().newDataSource(4);
		LockNodes.migrateOnce(this.pool);
		this.node = new LockTemplate(List.of(LockNodes.provider(LockMode.LEASE, this.pool),
				LockNodes.provider(LockMode.PESSIMISTIC, this.pool), LockNodes.provider(LockMode.OPTIMISTIC, this.pool)),
				LockMode.LEASE, Duration.ofSeconds(10), Duration.ofSeconds(30), "cross-mode");
		this.otherNode = LockNodes.node(LockMode.LEASE, "other-node", this.otherPool);
	}

	@AfterEach
	void close() {
		this.pool.close();
		this.otherPool.close();
	}

	/**
	 * The case of issue 29: thread L holds the LEASE lock; thread P, inside its transaction, asks for the PESSIMISTIC
	 * lock and queues behind L in the JVM. When L closes, P must not be handed L's lease: its lock must be the row lock
	 * of its transaction, held until the commit (safety.md), so that another connection cannot lock the row while P
	 * works and another node cannot take the lock after P's handle closed and before P's transaction commits.
	 */
	@Test
	void aPessimisticCallerQueuedBehindALocalLeaseHolderHoldsTheRowLockUntilItsCommit() throws Exception {
		LockHandle lease = this.node.acquire(this.resource);
		TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(this.pool));
		CompletableFuture<StringBuilder> pessimistic = CompletableFuture.supplyAsync(() -> transactions.execute((status) -> {
			StringBuilder seen = new StringBuilder();
			TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
				@Override
				public void beforeCommit(boolean readOnly) {
					Optional<LockHandle> taken = CrossModeHoldTests.this.otherNode.tryAcquire(CrossModeHoldTests.this.resource);
					taken.ifPresent(LockHandle::close);
					seen.append("; before commit: another node took it=").append(taken.isPresent());
				}
			});
			this.node.executeWithoutResult(this.resource, LockOptions.defaults().withMode(LockMode.PESSIMISTIC),
					(lock) -> seen.append("mode=").append(lock.mode())
						.append(", token from the lease's block=").append(lock.fencingToken() == lease.fencingToken() + 1)
						.append(", row lockable by another connection=").append(rowLockable()));
			return seen; // completed by beforeCommit
		}));
		awaitQueued();
		lease.close();
		assertThat(pessimistic.get(30, TimeUnit.SECONDS)).hasToString("mode=PESSIMISTIC, token from the lease's block="
				+ "false, row lockable by another connection=false; before commit: another node took it=false");
		try (LockHandle next = this.otherNode.acquire(this.resource)) {
			assertThat(next.fencingToken()).as("free after the commit").isPositive();
		}
		assertThat(this.node.introspection().localResourceCount()).isZero();
	}

	/** A thread holding the LEASE lock asks for the PESSIMISTIC lock of the same resource inside a transaction. */
	@Test
	void aLeaseHolderAskingForThePessimisticLockIsRefusedAtOnceAndKeepsItsLease() {
		TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(this.pool));
		try (LockHandle lease = this.node.acquire(this.resource)) {
			long start = System.nanoTime();
			assertThatThrownBy(() -> transactions.executeWithoutResult((status) -> this.node.executeWithoutResult(
					this.resource, LockOptions.defaults().withMode(LockMode.PESSIMISTIC), (lock) -> {
					})))
				.isInstanceOfSatisfying(LockModeConflictException.class, (ex) -> {
					assertThat(ex.getHeldMode()).isEqualTo(LockMode.LEASE);
					assertThat(ex.getRequestedMode()).isEqualTo(LockMode.PESSIMISTIC);
					assertThat(ex.getMessage()).contains(this.resource, "LEASE", "PESSIMISTIC");
				});
			assertThatThrownBy(() -> this.node.executeWithoutResult(this.resource,
					LockOptions.defaults().withMode(LockMode.PESSIMISTIC), (lock) -> {
					}))
				.as("outside a transaction too").isInstanceOf(LockModeConflictException.class);
			assertThat(Duration.ofNanos(System.nanoTime() - start)).as("at once").isLessThan(Duration.ofSeconds(2));
			assertThat(lease.isHeld()).isTrue();
			assertThat(this.otherNode.tryAcquire(this.resource)).as("the lease is still held").isEmpty();
			try (LockHandle again = this.node.acquire(this.resource)) {
				assertThat(again.fencingToken()).as("LEASE re-entry still works").isEqualTo(lease.fencingToken());
			}
		}
		assertThat(this.node.introspection().localResourceCount()).isZero();
		assertThat(this.otherNode.tryAcquire(this.resource)).as("released").isPresent().get()
			.satisfies(LockHandle::close);
	}

	/**
	 * A thread holding the PESSIMISTIC lock (on a connection of its own, or inside its transaction) asks for the LEASE
	 * lock of the same resource: a LEASE take would wait for the thread's own row lock.
	 */
	@Test
	void aPessimisticHolderAskingForTheLeaseLockIsRefusedAtOnce() {
		LockOptions pessimistic = LockOptions.defaults().withMode(LockMode.PESSIMISTIC);
		try (LockHandle held = this.node.acquire(this.resource, pessimistic)) {
			long start = System.nanoTime();
			assertThatThrownBy(() -> this.node.acquire(this.resource))
				.isInstanceOfSatisfying(LockModeConflictException.class, (ex) -> {
					assertThat(ex.getHeldMode()).isEqualTo(LockMode.PESSIMISTIC);
					assertThat(ex.getRequestedMode()).isEqualTo(LockMode.LEASE);
				});
			assertThat(Duration.ofNanos(System.nanoTime() - start)).as("at once").isLessThan(Duration.ofSeconds(2));
			assertThat(held.isHeld()).isTrue();
			try (LockHandle again = this.node.acquire(this.resource, pessimistic)) {
				assertThat(again.fencingToken()).isEqualTo(held.fencingToken());
			}
		}
		this.node.executeWithoutResult(this.resource, pessimistic, (outer) -> assertThatThrownBy(
				() -> this.node.tryAcquire(this.resource, LockOptions.defaults().withMode(LockMode.LEASE)))
			.as("inside the PESSIMISTIC lock's transaction").isInstanceOf(LockModeConflictException.class));
		assertThat(this.node.introspection().localResourceCount()).isZero();
		assertThat(this.otherNode.tryAcquire(this.resource)).as("released").isPresent().get()
			.satisfies(LockHandle::close);
	}

	/**
	 * OPTIMISTIC work under the thread's own LEASE lock of the resource could never commit (the row is leased), and
	 * LEASE inside OPTIMISTIC work would change the version the work's commit checks.
	 */
	@Test
	void optimisticWorkAndAnExclusiveLockOfTheSameResourceDoNotNest() {
		LockOptions optimistic = LockOptions.defaults().withMode(LockMode.OPTIMISTIC);
		try (LockHandle lease = this.node.acquire(this.resource)) {
			long start = System.nanoTime();
			assertThatThrownBy(() -> this.node.executeWithoutResult(this.resource, optimistic, (lock) -> {
			})).isInstanceOfSatisfying(LockModeConflictException.class,
					(ex) -> assertThat(ex.getRequestedMode()).isEqualTo(LockMode.OPTIMISTIC));
			assertThat(Duration.ofNanos(System.nanoTime() - start)).as("at once").isLessThan(Duration.ofSeconds(2));
		}
		assertThatThrownBy(() -> this.node.executeWithoutResult(this.resource, optimistic,
				(work) -> this.node.acquire(this.resource).close()))
			.isInstanceOfSatisfying(LockModeConflictException.class,
					(ex) -> assertThat(ex.getHeldMode()).isEqualTo(LockMode.OPTIMISTIC));
		assertThat(this.node.introspection().localResourceCount()).isZero();
	}

	/**
	 * Whether another connection can lock the lock row right now ({@code FOR UPDATE NOWAIT}); it gives the row back at
	 * once.
	 */
	private boolean rowLockable() {
		try (Connection connection = this.otherPool.getConnection()) {
			connection.setAutoCommit(false);
			try (PreparedStatement select = connection
				.prepareStatement("SELECT resource FROM distributed_lock WHERE resource = ? FOR UPDATE NOWAIT")) {
				select.setBytes(1, this.resource.getBytes(StandardCharsets.UTF_8));
				select.executeQuery().close();
				return true;
			}
			catch (SQLException ex) {
				if (ex.getErrorCode() == 1205 || ex.getErrorCode() == 3572) {
					return false; // locked by another transaction (MariaDB reports NOWAIT as 1205, MySQL as 3572)
				}
				throw ex;
			}
			finally {
				connection.rollback();
				connection.setAutoCommit(true);
			}
		}
		catch (SQLException ex) {
			throw new IllegalStateException(ex);
		}
	}

	private void awaitQueued() throws InterruptedException {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
		while (!this.node.introspection().hasQueuedThreads(this.resource)) {
			assertThat(System.nanoTime() - deadline).as("a local thread queued").isNegative();
			Thread.sleep(5);
		}
	}

}
