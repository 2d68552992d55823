package io.github.dblock;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.github.dblock.jdbc.lease.LeaseLockProvider;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockRequest;
import io.github.dblock.spi.TransactionCheckedLock;
import io.github.dblock.test.nodes.LockNodes;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

import static io.github.dblock.test.Pauses.sleep;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * Commit-time validation of the WRITE side of read/write locks: a transaction on the lock's data source that runs
 * while its thread holds a LEASE WRITE lock commits only while that lock is held. Node A, node B and the
 * "stalled" holders are {@link CommitValidationTestSupport}'s.
 * READ holds are not validated (readers share the lock).
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class ReadWriteCommitValidationTests extends CommitValidationTestSupport {

	ReadWriteCommitValidationTests() {
		super("rw-commit-check-", write(Duration.ofSeconds(10)));
	}

	private static LockOptions write(Duration leaseTime) {
		return LockOptions.defaults().withMode(LockMode.LEASE).withType(LockType.WRITE).withLeaseTime(leaseTime);
	}

	private static LockOptions read(Duration leaseTime) {
		return LockOptions.defaults().withMode(LockMode.LEASE).withType(LockType.READ).withLeaseTime(leaseTime);
	}

	private boolean freeForB(LockType type) {
		Optional<LockHandle> probe = this.nodeB.tryAcquire(this.resource,
				LockOptions.defaults().withMode(LockMode.LEASE).withType(type).withLeaseTime(Duration.ofSeconds(10)));
		probe.ifPresent(LockHandle::close);
		return probe.isPresent();
	}

	/**
	 * The holder's transaction writes inside {@code execute} under a WRITE lock, stalls past its lease, node B takes
	 * the WRITE lock and commits its write, then the holder's transaction tries to commit: it rolls back with
	 * {@link LockLostException}, and only B's write survives.
	 */
	@Test
	void aStaleWritersTransactionRollsBackAndOnlyTheNextWritersWriteSurvives() throws Exception {
		Future<?> holder = holderStalledWhileBTakesOver((stall) -> this.txA.executeWithoutResult((status) ->
			this.nodeA.executeWithoutResult(this.resource, write(LEASE), (lock) -> {
				assertThat(lock.type()).isEqualTo(LockType.WRITE);
				insert(this.poolA, "A");
				stall.run();
			})));
		assertThatExceptionOfType(ExecutionException.class).isThrownBy(() -> holder.get(30, TimeUnit.SECONDS))
			.withCauseInstanceOf(LockLostException.class)
			.withMessageContaining("was no longer held when its transaction was about to commit");
		assertThat(committedWriters()).containsExactly("B");
	}

	/** The same without validation: the stale writer's write commits after B's, which the lock did not prevent. */
	@Test
	void withoutValidationTheStaleWritersWriteCommitsToo() throws Exception {
		this.nodeA.setValidateAtCommit(false);
		Future<?> holder = holderStalledWhileBTakesOver((stall) -> this.txA.executeWithoutResult((status) -> {
			try (LockHandle lock = this.nodeA.acquire(this.resource, write(LEASE))) {
				insert(this.poolA, "A");
				stall.run();
			}
			catch (LockLostException expected) {
				// its release finds the lease gone, but the transaction still commits
			}
		}));
		holder.get(30, TimeUnit.SECONDS);
		assertThat(committedWriters()).containsExactlyInAnyOrder("A", "B");
	}

	/**
	 * A WRITE handle acquired before the transaction began (as {@code @DistributedLock(type = WRITE)} outside
	 * {@code @Transactional}): the transaction manager's listener registers the validation when it begins.
	 */
	@Test
	void aWriteLockTakenBeforeTheTransactionBeganIsValidatedAtItsCommit() throws Exception {
		Future<?> holder = holderStalledWhileBTakesOver((stall) -> {
			try (LockHandle lock = this.nodeA.acquire(this.resource, write(LEASE))) {
				this.txA.executeWithoutResult((status) -> {
					insert(this.poolA, "A");
					stall.run();
				});
			}
		});
		assertThatExceptionOfType(ExecutionException.class).isThrownBy(() -> holder.get(30, TimeUnit.SECONDS))
			.withCauseInstanceOf(LockLostException.class);
		assertThat(committedWriters()).containsExactly("B");
	}

	/**
	 * Once the validation has locked the holder row, the lease may end while the commit still runs (a slow
	 * {@code beforeCompletion}): a competing writer's grant waits for the commit, so the commit succeeds and the next
	 * writer comes strictly after it.
	 */
	@Test
	void aCompetingWriterWaitsForTheValidatedCommitEvenIfTheLeaseEndsMeanwhile() throws Exception {
		competitorWaitsForTheValidatedCommit(LockType.WRITE);
	}

	/** The same for a competing reader: readers are kept out by a writer until its validated commit. */
	@Test
	void aCompetingReaderWaitsForTheValidatedCommitEvenIfTheLeaseEndsMeanwhile() throws Exception {
		competitorWaitsForTheValidatedCommit(LockType.READ);
	}

	private void competitorWaitsForTheValidatedCommit(LockType competitor) throws Exception {
		CountDownLatch checked = new CountDownLatch(1);
		long[] commitSentAfter = new long[1];
		Future<?> holder = this.holderThread.submit(() -> this.txA.executeWithoutResult((status) ->
			this.nodeA.executeWithoutResult(this.resource, write(LEASE), (lock) -> {
				insert(this.poolA, "A");
				TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
					@Override
					public void beforeCompletion() { // runs after every beforeCommit, the validation's included
						checked.countDown();
						sleep(LEASE.toMillis() + 700);
						commitSentAfter[0] = System.nanoTime(); // the COMMIT is sent after this
					}
				});
			})));
		assertThat(checked.await(10, TimeUnit.SECONDS)).isTrue();
		sleep(LEASE.toMillis() + 100); // A's lease has ended by the server's clock; its commit has not happened yet
		try (LockHandle taken = this.nodeB.acquire(this.resource, LockOptions.defaults().withMode(LockMode.LEASE)
			.withType(competitor).withLeaseTime(Duration.ofSeconds(10)).withWaitTime(Duration.ofSeconds(5)))) {
			long takenAt = System.nanoTime();
			holder.get(30, TimeUnit.SECONDS);
			assertThat(takenAt - commitSentAfter[0]).as("granted only after A's commit").isPositive();
		}
		assertThat(committedWriters()).containsExactly("A");
	}

	/**
	 * Inside a transaction, {@code execute} keeps the WRITE lock until the transaction has completed, and a hold
	 * re-entered and closed again in it is released once, after it.
	 */
	@Test
	void insideATransactionTheWriteLockIsReleasedOnlyAfterTheCommit() {
		List<String> seen = new java.util.ArrayList<>();
		this.txA.executeWithoutResult((status) -> {
			this.nodeA.executeWithoutResult(this.resource, write(Duration.ofSeconds(10)), (lock) -> insert(this.poolA, "A"));
			seen.add("after execute: writer free=" + freeForB(LockType.WRITE) + ", reader free=" + freeForB(LockType.READ));
			try (LockHandle again = this.nodeA.acquire(this.resource, write(Duration.ofSeconds(10)))) {
				try (LockHandle inner = this.nodeA.acquire(this.resource, read(Duration.ofSeconds(10)))) {
					assertThat(inner.fencingToken()).isEqualTo(again.fencingToken());
				}
			}
			TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
				@Override
				public void afterCommit() {
					seen.add("after commit: writer free=" + freeForB(LockType.WRITE));
				}
			});
		});
		assertThat(seen).containsExactly("after execute: writer free=false, reader free=false",
				"after commit: writer free=false");
		assertThat(freeForB(LockType.WRITE)).isTrue();
		assertThat(committedWriters()).containsExactly("A");
		assertThat(holderRows()).as("the holder row was deleted by the one deferred release").isZero();
	}

	/** A READ hold is not validated: readers share the lock, so a reader's commit has nothing exclusive to protect. */
	@Test
	void aReadHoldIsNotValidated() throws Exception {
		Future<?> holder = holderStalledWhileBTakesOver((stall) -> this.txA.executeWithoutResult((status) -> {
			try (LockHandle lock = this.nodeA.acquire(this.resource, read(LEASE))) {
				insert(this.poolA, "A");
				stall.run();
			}
			catch (LockLostException expected) {
				// released at once (not deferred), after its lease had ended
			}
		}));
		holder.get(30, TimeUnit.SECONDS);
		assertThat(committedWriters()).containsExactlyInAnyOrder("A", "B");
	}

	/**
	 * The write lease's own release and renewal, on other connections, while a transaction holds its holder row
	 * locked by the check: they wait for the commit and then succeed (no deadlock). On one primary the check is two
	 * locking reads that change nothing, of the resource's row (which every acquisition locks first) and of the
	 * holder row; a released lease fails it.
	 */
	@Test
	void theWriteLeasesOwnRenewalAndReleaseWaitForTheValidatedCommit() throws Exception {
		LeaseLockProvider provider = (LeaseLockProvider) LockNodes.provider(LockMode.LEASE, this.poolA);
		assertThat(readWriteCommitCheckSql(provider)).containsExactly(
				"SELECT fencing_token FROM `distributed_lock_rw` WHERE resource = ? FOR UPDATE",
				"SELECT fencing_token FROM `distributed_lock_rw_hold` WHERE resource = ? AND owner_token = ? AND"
						+ " expires_at > UTC_TIMESTAMP(6) FOR UPDATE");
		HeldLock held = provider.acquire(new LockRequest(this.resource, Duration.ofMillis(1500), true, Duration.ZERO,
				System.nanoTime(), "node-a"), LockType.WRITE).lock();
		assertThat(held).isInstanceOf(TransactionCheckedLock.class);
		TransactionCheckedLock checked = (TransactionCheckedLock) held;
		long token = tokenCounter();
		CompletableFuture<Boolean> release = new CompletableFuture<>();
		this.txA.executeWithoutResult((status) -> {
			assertThat(checked.inTransactionOfItsDatabase()).isTrue();
			assertThat(checked.lockRowInTransaction()).isTrue();
			sleep(600); // spans a renewal (every 500 ms), which waits for the row
			this.holderThread.submit(() -> release.complete(held.release()));
			sleep(300);
			assertThat(release).isNotDone(); // waits for the row this transaction locked
		});
		assertThat(release.get(10, TimeUnit.SECONDS)).as("renewed after the commit, then released").isTrue();
		assertThat(held.isLost()).isFalse();
		assertThat(tokenCounter()).as("the locking read changes nothing").isEqualTo(token);
		assertThat(holderRows()).isZero();
		assertThat(Boolean.TRUE.equals(this.txA.execute((status) -> checked.lockRowInTransaction()))).isFalse();
		assertThat(checked.inTransactionOfItsDatabase()).isFalse();
		this.txB.executeWithoutResult((status) -> assertThat(checked.inTransactionOfItsDatabase()).isFalse());
		provider.close();
	}

	/**
	 * On a multi-primary cluster the check first writes the resource's row (a real change, which certification
	 * orders against another node's grant, which writes that row too), then locks the holder row; rolled back with
	 * its transaction. Run here on the single test server: the choice of statements and their outcome.
	 */
	@Test
	void onAMultiPrimaryClusterTheWriteChecksWritesTheResourceRow() throws Exception {
		LeaseLockProvider provider = (LeaseLockProvider) LockNodes.provider(LockMode.LEASE, this.poolA);
		provider.setMultiPrimary(true);
		assertThat(readWriteCommitCheckSql(provider)).containsExactly(
				"UPDATE `distributed_lock_rw` SET fencing_token = fencing_token + 1 WHERE resource = ?",
				"SELECT fencing_token FROM `distributed_lock_rw_hold` WHERE resource = ? AND owner_token = ? AND"
						+ " expires_at > UTC_TIMESTAMP(6) FOR UPDATE");
		TransactionCheckedLock checked = (TransactionCheckedLock) provider.acquire(new LockRequest(this.resource,
				Duration.ofSeconds(30), false, Duration.ZERO, System.nanoTime(), "node-a"), LockType.WRITE).lock();
		long token = tokenCounter();
		assertThat(Boolean.TRUE.equals(this.txA.execute((status) -> checked.lockRowInTransaction()))).isTrue();
		assertThat(tokenCounter()).isEqualTo(token + 1);
		assertThat(Boolean.TRUE.equals(this.txA.execute((status) -> {
			boolean ours = checked.lockRowInTransaction();
			status.setRollbackOnly();
			return ours;
		}))).isTrue();
		assertThat(tokenCounter()).isEqualTo(token + 1);
		assertThat(checked.release()).isTrue();
		try (LockHandle next = this.nodeB.acquire(this.resource, write(Duration.ofSeconds(10)))) {
			assertThat(next.fencingToken()).as("tokens still increase past the checks").isEqualTo(token + 2);
		}
		assertThat(Boolean.TRUE.equals(this.txA.execute((status) -> checked.lockRowInTransaction()))).isFalse();
		provider.close();
	}

	@SuppressWarnings("unchecked")
	private static List<String> readWriteCommitCheckSql(LeaseLockProvider provider) throws Exception {
		java.lang.reflect.Method method = LeaseLockProvider.class.getDeclaredMethod("readWriteCommitCheckSql");
		method.setAccessible(true);
		return (List<String>) method.invoke(provider);
	}

	private long tokenCounter() {
		return new JdbcTemplate(this.poolB).queryForObject("SELECT fencing_token FROM distributed_lock_rw WHERE resource"
				+ " = ?", Long.class, this.resource.getBytes(StandardCharsets.UTF_8));
	}

	private int holderRows() {
		return new JdbcTemplate(this.poolB).queryForObject("SELECT COUNT(*) FROM distributed_lock_rw_hold WHERE resource"
				+ " = ?", Integer.class, this.resource.getBytes(StandardCharsets.UTF_8));
	}

}
