package io.github.dblock.jdbc.lease;

import io.github.dblock.jdbc.sql.CallDeadline;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The timing contract of {@link RenewableLease}, with real threads and stand-in statements (the statements themselves
 * are tested against the database by the providers' tests): a renewal stuck on a silent connection hides no loss
 * (the loss is declared when the lease runs out by the clock), delays no other lease's renewal and no release, and a
 * renewal that lands after the release cannot leave the lease extended.
 */
class RenewableLeaseTests {

	private final CountDownLatch unblock = new CountDownLatch(1);

	private final ScheduledThreadPoolExecutor scheduler = new ScheduledThreadPoolExecutor(1);

	@AfterEach
	void stop() {
		this.unblock.countDown();
		this.scheduler.shutdownNow();
	}

	/** A lease whose renewals block until {@link #unblock} when {@code stuck}, counting statements. */
	private final class StandIn extends RenewableLease {

		final boolean stuck;

		final AtomicInteger renewals = new AtomicInteger();

		final AtomicInteger releases = new AtomicInteger();

		final CountDownLatch renewalSent = new CountDownLatch(1);

		final AtomicLong lostAt = new AtomicLong();

		final CountDownLatch lostSignal = new CountDownLatch(1);

		volatile String lostReason;

		StandIn(long leaseMillis, boolean stuck) {
			this(leaseMillis, leaseMillis, stuck);
		}

		/** A lease of {@code leaseMillis} of which only {@code leftMillis} are left (a late grant). */
		StandIn(long leaseMillis, long leftMillis, boolean stuck) {
			super("r", "owner", TimeUnit.MILLISECONDS.toNanos(leaseMillis),
					System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(leftMillis));
			this.stuck = stuck;
		}

		@Override
		CallDeadline callDeadline() {
			return new CallDeadline(System.nanoTime() + TimeUnit.SECONDS.toNanos(4), TimeUnit.SECONDS.toNanos(4));
		}

		@Override
		boolean renewInDatabase(CallDeadline deadline) {
			this.renewals.incrementAndGet();
			this.renewalSent.countDown();
			if (this.stuck) {
				try {
					RenewableLeaseTests.this.unblock.await(30, TimeUnit.SECONDS);
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
			}
			return true;
		}

		@Override
		boolean releaseInDatabase(CallDeadline deadline) {
			this.releases.incrementAndGet();
			return true;
		}

		@Override
		boolean releaseKeepsOwner() {
			return true; // as a release that keeps the row for a minimum hold
		}

		@Override
		void onLost(String reason) {
			this.lostReason = reason;
			this.lostAt.set(System.nanoTime());
			this.lostSignal.countDown();
		}

	}

	@Test
	void aStuckRenewalDoesNotHideTheLossWhichIsDeclaredWhenTheLeaseRunsOut() throws Exception {
		long start = System.nanoTime();
		StandIn lease = new StandIn(600, true);
		lease.startRenewal(this.scheduler);
		assertThat(lease.lostSignal.await(10, TimeUnit.SECONDS)).as("told of the loss while the renewal is stuck").isTrue();
		long millis = TimeUnit.NANOSECONDS.toMillis(lease.lostAt.get() - start);
		assertThat(millis).as("not before the lease ran out").isGreaterThanOrEqualTo(600)
			.as("when it ran out, not when the renewal returns").isLessThan(600 + 1_000);
		assertThat(lease.renewals).as("one renewal in flight at a time").hasValue(1);
		assertThat(lease.lostReason).contains("renewal still waited");
		assertThat(lease.lost).isTrue();
		assertThat(lease.release()).as("a lost lease changes nothing at release").isFalse();
		assertThat(lease.releases).hasValue(0);
	}

	@Test
	void aLeaseGrantedWithLessThanTwoThirdsOfItLeftIsRenewedAtOnceAndKept() throws Exception {
		long start = System.nanoTime();
		StandIn lease = new StandIn(3_000, 600, false); // its take waited, or its reply came late
		lease.startRenewal(this.scheduler);
		assertThat(lease.renewalSent.await(10, TimeUnit.SECONDS)).isTrue();
		assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start))
			.as("renewed before the 600 ms left ran out, not a third of the lease after the grant").isLessThan(500);
		Thread.sleep(1_000);
		assertThat(lease.lost).as("renewed in time").isFalse();
	}

	@Test
	void aLeaseGrantedAtOnceIsRenewedAThirdOfItsLeaseAfterItsTake() throws Exception {
		long start = System.nanoTime();
		StandIn lease = new StandIn(1_500, false); // a third of the lease is 500 ms
		lease.startRenewal(this.scheduler);
		assertThat(lease.renewalSent.await(10, TimeUnit.SECONDS)).isTrue();
		long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
		assertThat(millis).as("when a third of the lease has passed since its take was sent").isGreaterThanOrEqualTo(450)
			.isLessThan(1_000);
	}

	@Test
	void theLossOfALeaseGrantedWithLittleLeftIsDeclaredWhenThatRunsOutWhileItsRenewalIsStuck() throws Exception {
		long start = System.nanoTime();
		StandIn lease = new StandIn(3_000, 300, true);
		lease.startRenewal(this.scheduler);
		assertThat(lease.lostSignal.await(10, TimeUnit.SECONDS)).as("told of the loss").isTrue();
		long millis = TimeUnit.NANOSECONDS.toMillis(lease.lostAt.get() - start);
		assertThat(millis).as("not before the 300 ms left ran out").isGreaterThanOrEqualTo(300)
			.as("when they ran out, not at a tick a third of the lease after the grant").isLessThan(800);
		assertThat(lease.lostReason).contains("renewal still waited");
	}

	@Test
	void aStuckRenewalDelaysNeitherAnotherLeasesRenewalNorTheRelease() throws Exception {
		StandIn stuck = new StandIn(900, true);
		StandIn healthy = new StandIn(900, false);
		stuck.startRenewal(this.scheduler); // one scheduler thread for both
		healthy.startRenewal(this.scheduler);
		assertThat(stuck.renewalSent.await(10, TimeUnit.SECONDS)).isTrue();
		Thread.sleep(2_000);
		assertThat(healthy.renewals.get()).as("the healthy lease kept being renewed").isGreaterThanOrEqualTo(4);
		assertThat(healthy.lost).as("and was never presumed lost").isFalse();
		assertThat(stuck.lost).isTrue();
		long before = System.nanoTime();
		assertThat(healthy.release()).isTrue();
		assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - before)).isLessThan(1_000);
	}

	@Test
	void aReleaseDoesNotWaitForARenewalInFlightAndAReleaseFollowsARenewalThatLandsAfterIt() throws Exception {
		StandIn lease = new StandIn(30_000, true);
		lease.renew(); // as the scheduler would: the statement runs on a background thread
		assertThat(lease.renewalSent.await(10, TimeUnit.SECONDS)).isTrue();
		long before = System.nanoTime();
		assertThat(lease.release()).isTrue();
		assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - before)).as("no wait for the renewal").isLessThan(1_000);
		assertThat(lease.releases).hasValue(1);
		this.unblock.countDown(); // the renewal lands after the release and finds the lease (it kept a minimum hold)
		long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
		while (lease.releases.get() < 2 && System.nanoTime() < until) {
			Thread.sleep(10);
		}
		assertThat(lease.releases).as("released again, so the late renewal cannot keep the lease").hasValue(2);
		lease.renew(); // a renewal the scheduler started late sends nothing
		Thread.sleep(100);
		assertThat(lease.renewals).hasValue(1);
	}

}
