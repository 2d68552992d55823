package io.github.dblock;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.jdbc.lease.LeaseLockProvider;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

import static io.github.dblock.test.Pauses.sleep;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * Commit-time validation: a transaction on the lock's data source that runs while its thread holds a LEASE lock
 * commits only while the lock is held. Node A, node B and the "stalled" holders are
 * {@link CommitValidationTestSupport}'s.
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class CommitValidationTests extends CommitValidationTestSupport {

	CommitValidationTests() {
		super("commit-check-", lease(Duration.ofSeconds(10)));
	}

	private static LockOptions lease(Duration leaseTime) {
		return LockOptions.defaults().withMode(LockMode.LEASE).withLeaseTime(leaseTime);
	}

	/**
	 * The holder's transaction writes inside {@code execute}, stalls past its lease, node B takes the lock and commits
	 * its write, then the holder's transaction tries to commit: it rolls back with {@link LockLostException}.
	 */
	@Test
	void aStaleHoldersTransactionRollsBackAndOnlyTheNextHoldersWriteSurvives() throws Exception {
		Future<?> holder = holderStalledWhileBTakesOver((stall) -> this.txA.executeWithoutResult((status) ->
			this.nodeA.executeWithoutResult(this.resource, lease(LEASE), (lock) -> {
				insert(this.poolA, "A");
				stall.run();
			})));
		assertThatExceptionOfType(java.util.concurrent.ExecutionException.class)
			.isThrownBy(() -> holder.get(30, TimeUnit.SECONDS))
			.withCauseInstanceOf(LockLostException.class)
			.withMessageContaining("was no longer held when its transaction was about to commit");
		assertThat(committedWriters()).containsExactly("B");
	}

	/** The same without validation: the stale holder's write commits after B's, which the lock did not prevent. */
	@Test
	void withoutValidationTheStaleHoldersWriteCommitsToo() throws Exception {
		this.nodeA.setValidateAtCommit(false);
		Future<?> holder = holderStalledWhileBTakesOver((stall) -> this.txA.executeWithoutResult((status) -> {
			try (LockHandle lock = this.nodeA.acquire(this.resource, lease(LEASE))) {
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
	 * A handle acquired before the transaction began (as {@code @DistributedLock} does outside
	 * {@code @Transactional}): the transaction manager's listener registers the validation when it begins.
	 */
	@Test
	void aLockTakenBeforeTheTransactionBeganIsValidatedAtItsCommit() throws Exception {
		Future<?> holder = holderStalledWhileBTakesOver((stall) -> {
			try (LockHandle lock = this.nodeA.acquire(this.resource, lease(LEASE))) {
				this.txA.executeWithoutResult((status) -> {
					insert(this.poolA, "A");
					stall.run();
				});
			}
		});
		assertThatExceptionOfType(java.util.concurrent.ExecutionException.class)
			.isThrownBy(() -> holder.get(30, TimeUnit.SECONDS))
			.withCauseInstanceOf(LockLostException.class);
		assertThat(committedWriters()).containsExactly("B");
	}

	/**
	 * A lock whose lease has already ended by this JVM's clock when the transaction begins is checked too (found by
	 * the cross-process test: on a loaded machine the transaction began after a short lease had ended, and its commit
	 * went unchecked).
	 */
	@Test
	void aLockWhoseLeaseEndedBeforeTheTransactionBeganIsCheckedToo() throws Exception {
		Future<?> holder = this.holderThread.submit(() -> {
			try (LockHandle lock = this.nodeA.acquire(this.resource, lease(Duration.ofMillis(50)))) {
				nodeBTakesOverAndWrites(); // waits for A's lease to end
				assertThat(lock.isHeld()).isFalse();
				this.txA.executeWithoutResult((status) -> insert(this.poolA, "A"));
			}
		});
		assertThatExceptionOfType(java.util.concurrent.ExecutionException.class)
			.isThrownBy(() -> holder.get(30, TimeUnit.SECONDS))
			.withCauseInstanceOf(LockLostException.class)
			.withMessageContaining("was no longer held when its transaction was about to commit");
		assertThat(committedWriters()).containsExactly("B");
	}

	/**
	 * Inside a transaction, {@code execute} keeps the lock until the transaction has completed: released at the end of
	 * the action, another owner could take it and act before the commit (and the validation would then fail).
	 */
	@Test
	void insideATransactionTheLockIsReleasedOnlyAfterTheCommit() throws Exception {
		List<String> seen = new java.util.ArrayList<>();
		this.txA.executeWithoutResult((status) -> {
			this.nodeA.executeWithoutResult(this.resource, lease(Duration.ofSeconds(10)), (lock) -> insert(this.poolA, "A"));
			seen.add("after execute, before commit: free for B=" + freeForB());
			TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
				@Override
				public void afterCommit() {
					seen.add("after commit: free for B=" + freeForB());
				}
			});
		});
		assertThat(seen).containsExactly("after execute, before commit: free for B=false",
				"after commit: free for B=false");
		assertThat(freeForB()).isTrue();
		assertThat(committedWriters()).containsExactly("A");
		assertThat(this.nodeA.introspection().localResourceCount()).isZero();
	}

	/** A lock re-entered, closed and held again in the same transaction is released after it, once. */
	@Test
	void reEnteringInTheTransactionKeepsOneHoldUntilItEnds() {
		this.txA.executeWithoutResult((status) -> {
			try (LockHandle outer = this.nodeA.acquire(this.resource, lease(Duration.ofSeconds(10)))) {
				try (LockHandle inner = this.nodeA.acquire(this.resource, lease(Duration.ofSeconds(10)))) {
					assertThat(inner.fencingToken()).isEqualTo(outer.fencingToken());
				}
			}
			// closed, but the release waits for the commit; this thread may take it again meanwhile
			try (LockHandle again = this.nodeA.acquire(this.resource, lease(Duration.ofSeconds(10)))) {
				insert(this.poolA, "A");
			}
			assertThat(freeForB()).isFalse();
		});
		assertThat(freeForB()).isTrue();
		assertThat(committedWriters()).containsExactly("A");
		assertThat(this.nodeA.introspection().localResourceCount()).as("no JVM-local state left behind by the deferred releases")
			.isZero();
	}

	/** A rolled-back transaction releases the lock too. */
	@Test
	void aRollbackReleasesTheLockToo() {
		assertThatExceptionOfType(IllegalStateException.class).isThrownBy(() -> this.txA.executeWithoutResult((status) ->
			this.nodeA.executeWithoutResult(this.resource, lease(Duration.ofSeconds(10)), (lock) -> {
				insert(this.poolA, "A");
				throw new IllegalStateException("boom");
			})));
		assertThat(freeForB()).isTrue();
		assertThat(committedWriters()).isEmpty();
	}

	/**
	 * Once the validation has locked the row, the lease may end while the commit still runs (here a slow
	 * {@code beforeCompletion}): a competing take waits for the commit, so the commit succeeds and the next holder
	 * comes strictly after it.
	 */
	@Test
	void aCompetingTakeWaitsForTheValidatedCommitEvenIfTheLeaseEndsMeanwhile() throws Exception {
		CountDownLatch checked = new CountDownLatch(1);
		long[] commitSentAfter = new long[1];
		Future<?> holder = this.holderThread.submit(() -> this.txA.executeWithoutResult((status) ->
			this.nodeA.executeWithoutResult(this.resource, lease(LEASE), (lock) -> {
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
		try (LockHandle taken = this.nodeB.acquire(this.resource, lease(Duration.ofSeconds(10))
			.withWaitTime(Duration.ofSeconds(5)))) {
			long takenAt = System.nanoTime();
			holder.get(30, TimeUnit.SECONDS);
			assertThat(takenAt - commitSentAfter[0]).isPositive(); // B was granted the row only at A's commit
		}
		assertThat(committedWriters()).containsExactly("A");
	}

	/**
	 * The lock's own renewal, on another connection, waits for the validated commit (the row is locked) and then
	 * succeeds: no deadlock, and the lock is not lost.
	 */
	@Test
	void theHoldersOwnRenewalWaitsForTheCommitWithoutDeadlock() throws Exception {
		LockTemplate renewing = new LockTemplate(List.of(LockNodes.provider(LockMode.LEASE, this.poolA)), LockMode.LEASE,
				Duration.ZERO, Duration.ofSeconds(3), "node-a-renewing"); // renewed every second, room for a loaded machine
		long[] renewedBefore = new long[1];
		Future<?> holder = this.holderThread.submit(() -> {
			try (LockHandle lock = renewing.acquire(this.resource)) {
				this.txA.executeWithoutResult((status) -> {
					insert(this.poolA, "A");
					TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
						@Override
						public void beforeCompletion() {
							renewedBefore[0] = expiresAtMicros();
							sleep(1_200); // spans at least one renewal (every second), which waits for the row
						}
					});
				});
				assertThat(lock.isHeld()).isTrue();
				sleep(1_200); // the waiting renewal has gone through, and one more
				assertThat(expiresAtMicros()).isGreaterThan(renewedBefore[0]);
				assertThat(lock.isHeld()).isTrue();
			}
			return null;
		});
		holder.get(30, TimeUnit.SECONDS);
		assertThat(committedWriters()).containsExactly("A");
	}

	/**
	 * The lock's release, on another connection, while a transaction holds the row locked by the validation: it waits
	 * for the commit and then succeeds.
	 */
	@Test
	void aReleaseOnAnotherConnectionWaitsForTheValidatedCommit() throws Exception {
		LeaseLockProvider provider = (LeaseLockProvider) LockNodes.provider(LockMode.LEASE, this.poolA);
		io.github.dblock.spi.HeldLock held = provider.acquire(new io.github.dblock.spi.LockRequest(this.resource,
				Duration.ofSeconds(10), false, Duration.ZERO, System.nanoTime(), "node-a"))
			.lock();
		assertThat(held).isInstanceOf(io.github.dblock.spi.TransactionCheckedLock.class);
		io.github.dblock.spi.TransactionCheckedLock checked = (io.github.dblock.spi.TransactionCheckedLock) held;
		CompletableFuture<Boolean> release = new CompletableFuture<>();
		this.txA.executeWithoutResult((status) -> {
			assertThat(checked.inTransactionOfItsDatabase()).isTrue();
			assertThat(checked.lockRowInTransaction()).isTrue();
			this.holderThread.submit(() -> release.complete(held.release()));
			sleep(400);
			assertThat(release).isNotDone(); // waits for the row this transaction locked
		});
		assertThat(release.get(10, TimeUnit.SECONDS)).isTrue();
		assertThat(freeForB()).isTrue();
		// outside a transaction on its database, the check does not apply
		assertThat(checked.inTransactionOfItsDatabase()).isFalse();
		this.txB.executeWithoutResult((status) -> assertThat(checked.inTransactionOfItsDatabase()).isFalse());
	}

	/** A read-only transaction is not checked: it has nothing to protect. */
	@Test
	void readOnlyTransactionsAreNotChecked() throws Exception {
		TransactionTemplate readOnly = new TransactionTemplate(this.txA.getTransactionManager());
		readOnly.setReadOnly(true);
		CountDownLatch read = new CountDownLatch(1);
		CountDownLatch resume = new CountDownLatch(1);
		Future<?> holder = this.holderThread.submit(() -> readOnly.executeWithoutResult((status) -> {
			try (LockHandle lock = this.nodeA.acquire(this.resource, lease(LEASE))) {
				read.countDown();
				await(resume);
			}
			catch (LockLostException expected) {
				// the release finds the lease gone (after the transaction: deferred); not reached here
			}
		}));
		assertThat(read.await(10, TimeUnit.SECONDS)).isTrue();
		nodeBTakesOverAndWrites();
		resume.countDown();
		holder.get(30, TimeUnit.SECONDS); // commits: nothing was validated
		assertThat(committedWriters()).containsExactly("B");
	}

	/** PESSIMISTIC joining the transaction holds its row lock until the commit: the same guarantee, without a check. */
	@Test
	void pessimisticInTheTransactionHoldsTheRowUntilTheCommit() throws Exception {
		LockTemplate pessimistic = new LockTemplate(List.of(LockNodes.provider(LockMode.PESSIMISTIC, this.poolA)),
				LockMode.PESSIMISTIC, Duration.ZERO, Duration.ofSeconds(30), "node-a-pessimistic");
		CountDownLatch written = new CountDownLatch(1);
		CountDownLatch resume = new CountDownLatch(1);
		Future<?> holder = this.holderThread.submit(() -> this.txA.executeWithoutResult((status) -> {
			pessimistic.executeWithoutResult(this.resource, (lock) -> insert(this.poolA, "A"));
			written.countDown(); // the action is over; the transaction, and with it the row lock, goes on
			await(resume);
		}));
		assertThat(written.await(10, TimeUnit.SECONDS)).isTrue();
		Optional<LockHandle> meanwhile = this.nodeB.tryAcquire(this.resource, lease(Duration.ofSeconds(10))
			.withWaitTime(Duration.ofSeconds(1)));
		meanwhile.ifPresent(LockHandle::close);
		assertThat(meanwhile).isEmpty();
		resume.countDown();
		holder.get(30, TimeUnit.SECONDS);
		nodeBTakesOverAndWrites();
		assertThat(committedWriters()).containsExactly("A", "B");
	}

	/**
	 * A lock whose holder's connection is lost while its transaction is open (here killed by the server, as when the
	 * holder stalls and its connection is dropped): the server rolls the transaction back, which is what frees the
	 * row, so the holder's write is gone before anyone else can take the lock. Until then the lock cannot pass to
	 * another owner, however long the holder stalls (well past its 300 ms lease time, which PESSIMISTIC
	 * does not use for a row lock): PESSIMISTIC joined to the transaction gives the commit-time guarantee by construction.
	 */
	@Test
	void pessimisticInTheTransactionCannotBeLostWithoutLosingTheTransaction() throws Exception {
		LockTemplate pessimistic = new LockTemplate(List.of(LockNodes.provider(LockMode.PESSIMISTIC, this.poolA)),
				LockMode.PESSIMISTIC, Duration.ZERO, Duration.ofSeconds(30), "node-a-pessimistic");
		CountDownLatch written = new CountDownLatch(1);
		CountDownLatch resume = new CountDownLatch(1);
		long[] connectionId = new long[1];
		Future<?> holder = this.holderThread.submit(() -> this.txA.executeWithoutResult((status) ->
			pessimistic.executeWithoutResult(this.resource, LockOptions.defaults().withMode(LockMode.PESSIMISTIC)
				.withLeaseTime(LEASE), (lock) -> {
				insert(this.poolA, "A");
				connectionId[0] = new JdbcTemplate(this.poolA).queryForObject("SELECT CONNECTION_ID()", Long.class);
				written.countDown();
				await(resume);
			})));
		assertThat(written.await(10, TimeUnit.SECONDS)).isTrue();
		sleep(LEASE.toMillis() + 200); // past the lease time: nothing expires for a row lock
		Optional<LockHandle> meanwhile = this.nodeB.tryAcquire(this.resource, lease(Duration.ofSeconds(10))
			.withWaitTime(Duration.ofSeconds(1)));
		meanwhile.ifPresent(LockHandle::close);
		assertThat(meanwhile).as("taken by B while A's transaction was open").isEmpty();
		new JdbcTemplate(this.poolB).execute("KILL CONNECTION " + connectionId[0]);
		nodeBTakesOverAndWrites(); // the server rolled A's transaction back: the row is free
		resume.countDown();
		assertThatExceptionOfType(java.util.concurrent.ExecutionException.class)
			.isThrownBy(() -> holder.get(30, TimeUnit.SECONDS))
			.satisfies((ex) -> assertThat(ex.getCause()).as("the commit on the killed connection")
				.isInstanceOfAny(org.springframework.transaction.TransactionSystemException.class,
						org.springframework.dao.DataAccessException.class));
		assertThat(committedWriters()).containsExactly("B");
	}

	/**
	 * A transaction on another data source than the lock's (a separate lock {@code DataSource}) cannot lock the lock
	 * row, so it is not checked even with the listener on its manager: a stale holder's write there commits. This is
	 * the documented limit (fencing tokens protect such writes), shown so that it is not mistaken for a guarantee.
	 */
	@Test
	void aTransactionOnAnotherDataSourceIsNotChecked() throws Exception {
		HikariDataSource applicationPool = TestDatabase.get().newDataSource(2);
		try {
			DataSourceTransactionManager manager = new DataSourceTransactionManager(applicationPool);
			manager.addListener(new CommitValidation());
			TransactionTemplate application = new TransactionTemplate(manager);
			CountDownLatch written = new CountDownLatch(1);
			CountDownLatch resume = new CountDownLatch(1);
			Future<?> holder = this.holderThread.submit(() -> {
				try (LockHandle lock = this.nodeA.acquire(this.resource, lease(LEASE))) {
					application.executeWithoutResult((status) -> {
						insert(applicationPool, "A");
						assertThat(TransactionSynchronizationManager.getSynchronizations()).isEmpty(); // no check
						written.countDown();
						await(resume);
					});
				}
				catch (LockLostException expected) {
					// the release after the commit finds the lease gone; the transaction has committed
				}
			});
			assertThat(written.await(10, TimeUnit.SECONDS)).isTrue();
			nodeBTakesOverAndWrites();
			resume.countDown();
			holder.get(30, TimeUnit.SECONDS);
			assertThat(committedWriters()).containsExactlyInAnyOrder("A", "B");
		}
		finally {
			applicationPool.close();
		}
	}

	private boolean freeForB() {
		Optional<LockHandle> probe = this.nodeB.tryAcquire(this.resource, lease(Duration.ofSeconds(10)));
		probe.ifPresent(LockHandle::close);
		return probe.isPresent();
	}

	private long expiresAtMicros() {
		return new JdbcTemplate(this.poolB).queryForObject("SELECT TIMESTAMPDIFF(MICROSECOND, '2000-01-01', expires_at)"
				+ " FROM distributed_lock WHERE resource = ?", Long.class,
				this.resource.getBytes(java.nio.charset.StandardCharsets.UTF_8));
	}

}
