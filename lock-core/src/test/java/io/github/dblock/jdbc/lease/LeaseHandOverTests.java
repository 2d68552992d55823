package io.github.dblock.jdbc.lease;

import io.github.dblock.jdbc.sql.LeaseStatements;
import io.github.dblock.jdbc.sql.LockRows;
import io.github.dblock.jdbc.admin.LockTableAdmin;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A LEASE waiter on another node makes itself the next in line ({@code waiting_owner}), and the holder's release
 * hands the lease straight to it: nobody else can take the lock in between, the waiter's next attempt takes the row
 * as its owner, and a waiter that gives up or dies holds the lock up for a bounded time only.
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class LeaseHandOverTests {

	private HikariDataSource pool;

	private JdbcTemplate jdbc;

	private final String resource = "hand-over-" + UUID.randomUUID();

	@BeforeEach
	void pool() {
		this.pool = TestDatabase.get().newDataSource(6);
		LockNodes.migrateOnce(this.pool);
		this.jdbc = new JdbcTemplate(this.pool);
	}

	@AfterEach
	void close() {
		this.pool.close();
	}

	@Test
	void theReleaseHandsTheLeaseToTheWaiterNextInLineAndNobodyElseCanTakeItMeanwhile() throws Exception {
		LockTemplate holder = LockNodes.node(LockMode.LEASE, "holder", this.pool);
		// pauses of 0.5 to 1 s between attempts, so that the hand-over is seen before the waiter comes back
		LockTemplate waiter = slowNode("waiter");
		LockTemplate third = LockNodes.node(LockMode.LEASE, "third", this.pool);
		LockHandle held = holder.acquire(this.resource);
		Thread.sleep(300); // an older lease: the waiter polls at its back-off, not every couple of milliseconds
		CompletableFuture<Long> waited = CompletableFuture.supplyAsync(() -> {
			try (LockHandle lock = waiter.acquire(this.resource, LockOptions.defaults().withWaitTime(Duration.ofSeconds(20)))) {
				return lock.fencingToken();
			}
		});
		String nextInLine = awaitNextInLine();
		held.close();
		Map<String, Object> row = row();
		assertThat(row.get("owner_token")).as("the lease went to the waiter next in line").isEqualTo(nextInLine);
		assertThat(row.get("waiting_owner")).isNull();
		assertThat(third.tryAcquire(this.resource)).as("nobody else takes a handed-over lease").isEmpty();
		assertThat(waited.get(10, TimeUnit.SECONDS)).isGreaterThan(held.fencingToken());
		assertThat(row()).as("released by the waiter, nobody in line").containsEntry("owner_token", null)
			.containsEntry("waiting_owner", null).containsEntry("waiting_until", null);
	}

	@Test
	void aWaiterThatGivesUpIsTakenOutOfLine() throws Exception {
		LockTemplate holder = LockNodes.node(LockMode.LEASE, "holder", this.pool);
		LockTemplate waiter = LockNodes.node(new LeaseLockProvider(this.pool, LockNodes.TABLE, Duration.ofSeconds(5),
				Duration.ofMillis(50), Duration.ofMillis(50)), "waiter");
		try (LockHandle held = holder.acquire(this.resource)) {
			CompletableFuture<Optional<LockHandle>> gaveUp = CompletableFuture
				.supplyAsync(() -> waiter.tryAcquire(this.resource, Duration.ofMillis(1_500)));
			assertThat(awaitNextInLine()).as("the waiter put itself in line").isNotNull();
			assertThat(gaveUp.get(10, TimeUnit.SECONDS)).isEmpty();
			// the withdrawal runs in the background, so that it cannot stretch the caller's wait: soon, not at once
			long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
			while (row().get("waiting_owner") != null && System.nanoTime() < deadline) {
				Thread.sleep(10);
			}
			assertThat(row().get("waiting_owner")).as("withdrawn when its wait ended").isNull();
			assertThat(row().get("waiting_until")).as("and its announcement with it").isNull();
		}
		assertThat(row().get("owner_token")).as("freed, not handed to a waiter that left").isNull();
	}

	@Test
	void aLeaseHandedToAWaiterThatGaveUpMeanwhileIsFreedByItsWithdrawal() {
		LockRows rows = new LockRows(LockNodes.TABLE);
		LockTemplate holder = LockNodes.node(LockMode.LEASE, "holder", this.pool);
		String gone = UUID.randomUUID().toString();
		LockHandle held = holder.acquire(this.resource);
		nextInLine(gone, 60_000);
		held.close(); // hands the lease to the waiter, which is just giving up
		assertThat(row().get("owner_token")).isEqualTo(gone);
		this.jdbc.execute((java.sql.Connection connection) -> {
			rows.withdraw(connection, this.resource, gone, 5);
			return null;
		});
		assertThat(row().get("owner_token")).isNull();
		assertThat(row().get("waiting_until")).isNull();
		Optional<LockHandle> third = LockNodes.node(LockMode.LEASE, "third", this.pool).tryAcquire(this.resource);
		assertThat(third).isPresent();
		third.get().close();
	}

	@Test
	void aLeaseHandedToTheWaiterNextInLineNoLongerNamesTheReleaserAsItsHolder() {
		LockTemplate holder = LockNodes.node(LockMode.LEASE, "releaser", this.pool);
		LockHandle held = holder.acquire(this.resource);
		String waiter = UUID.randomUUID().toString();
		nextInLine(waiter, 60_000);
		held.close(); // hands the lease to the waiter, whose next attempt takes the row as its own
		assertThat(row().get("owner_token")).isEqualTo(waiter);
		LockTableAdmin admin = new LockTableAdmin(this.pool, LockNodes.TABLE, Duration.ofSeconds(2));
		assertThat(admin.find(this.resource)).get()
			.satisfies((row) -> assertThat(row.held()).isTrue())
			.satisfies((row) -> assertThat(row.holder()).doesNotStartWith("releaser [").contains("next waiter in line"));
		LockTableAdmin.ForceRelease forced = admin.forceRelease(this.resource, "test").orElseThrow();
		assertThat(forced.wasHeld()).isTrue();
		assertThat(forced.previousHolder()).as("not the releaser, whose hold ended at its release")
			.isEqualTo(LeaseStatements.HANDED_OVER_HOLDER);
	}

	@Test
	void aWaiterThatDiedWhileNextInLineHoldsTheLockUpForItsAnnouncementPlusASecondAtMost() {
		LockTemplate holder = LockNodes.node(LockMode.LEASE, "holder", this.pool);
		LockTemplate third = LockNodes.node(LockMode.LEASE, "third", this.pool);
		LockHandle held = holder.acquire(this.resource);
		String dead = UUID.randomUUID().toString();
		nextInLine(dead, 2_000);
		held.close();
		long released = System.nanoTime();
		assertThat(row().get("owner_token")).as("the release handed the lease to the waiter").isEqualTo(dead);
		// read from the server, so that a slow release cannot make the figures below miss
		long remainingMillis = this.jdbc.queryForObject("SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at)"
				+ " DIV 1000 FROM distributed_lock WHERE resource = ?", Long.class, LockRows.bytes(this.resource));
		assertThat(remainingMillis).as("the announcement (2 s) plus a second at most").isBetween(1L, 3_000L);
		try (LockHandle lock = third.acquire(this.resource, LockOptions.defaults().withWaitTime(Duration.ofSeconds(10)))) {
			long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - released);
			assertThat(waitedMillis).as("the dead waiter's lease ran out").isBetween(remainingMillis - 20,
					remainingMillis + 3_000);
			assertThat(lock.fencingToken()).isGreaterThan(held.fencingToken());
		}
	}

	@Test
	void aWaiterNextInLineIsNotReplacedByAnotherWhileItsAnnouncementRuns() {
		LockTemplate holder = LockNodes.node(LockMode.LEASE, "holder", this.pool);
		LockRows rows = new LockRows(LockNodes.TABLE);
		try (LockHandle held = holder.acquire(this.resource)) {
			String first = UUID.randomUUID().toString();
			String second = UUID.randomUUID().toString();
			assertThat(announce(rows, first)).isTrue();
			assertThat(announce(rows, second)).as("another waiter is next in line").isFalse();
			assertThat(announce(rows, first)).as("the one in line extends its announcement").isTrue();
			assertThat(announce(rows, ownerOfRow())).as("the holder itself is never next in line").isFalse();
			assertThat(row().get("waiting_owner")).isEqualTo(first);
		}
	}

	private boolean announce(LockRows rows, String owner) {
		Boolean next = this.jdbc.execute((java.sql.Connection connection) -> rows.announceSuccessor(connection,
				this.resource, owner, TimeUnit.SECONDS.toNanos(30), 5));
		return Boolean.TRUE.equals(next);
	}

	private String ownerOfRow() {
		return (String) row().get("owner_token");
	}

	private LockTemplate slowNode(String name) {
		return LockNodes.node(new LeaseLockProvider(this.pool, LockNodes.TABLE, Duration.ofSeconds(5),
				Duration.ofSeconds(1), Duration.ofSeconds(1)), name);
	}

	private void nextInLine(String owner, long millis) {
		this.jdbc.update("UPDATE distributed_lock SET waiting_owner = ?, waiting_until = UTC_TIMESTAMP(6)"
				+ " + INTERVAL ? MICROSECOND WHERE resource = ?", owner, millis * 1000, LockRows.bytes(this.resource));
	}

	private String awaitNextInLine() throws InterruptedException {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
		while (System.nanoTime() - deadline < 0) {
			Object owner = row().get("waiting_owner");
			if (owner != null) {
				return (String) owner;
			}
			Thread.sleep(10);
		}
		throw new AssertionError("no waiter announced itself as next in line");
	}

	private Map<String, Object> row() {
		return this.jdbc.queryForMap("SELECT owner_token, waiting_owner, waiting_until FROM distributed_lock WHERE resource = ?",
				LockRows.bytes(this.resource));
	}

}
