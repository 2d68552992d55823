package io.github.dblock.jdbc;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The ordering contract of {@link RenewableLease} between the scheduler's renewal and the owner's release, with
 * real threads: a release never sends its statement while a renewal is in flight, and a renewal that started
 * before the release is not followed by another. (The statements themselves are tested against the database by
 * the providers' tests; here they are stand-ins that record overlap.)
 */
class RenewableLeaseTests {

	@Test
	void aReleaseWaitsForTheRenewalInFlightAndNoRenewalFollowsIt() throws Exception {
		CountDownLatch renewalSent = new CountDownLatch(1);
		CountDownLatch renewalMayFinish = new CountDownLatch(1);
		AtomicBoolean renewing = new AtomicBoolean();
		AtomicBoolean overlapped = new AtomicBoolean();
		AtomicInteger renewalsAfterRelease = new AtomicInteger();
		AtomicBoolean releasedInDatabase = new AtomicBoolean();
		RenewableLease lease = new RenewableLease("r", "owner", TimeUnit.SECONDS.toNanos(30),
				System.nanoTime() + TimeUnit.SECONDS.toNanos(30)) {

			@Override
			boolean renewInDatabase() {
				if (releasedInDatabase.get()) {
					renewalsAfterRelease.incrementAndGet();
				}
				renewing.set(true);
				renewalSent.countDown();
				try {
					renewalMayFinish.await(10, TimeUnit.SECONDS);
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
				renewing.set(false);
				return true;
			}

			@Override
			boolean releaseInDatabase() {
				overlapped.compareAndSet(false, renewing.get());
				releasedInDatabase.set(true);
				return true;
			}

			@Override
			void onLost(String reason) {
			}

		};
		CompletableFuture<Void> renewal = CompletableFuture.runAsync(lease::renew);
		assertThat(renewalSent.await(10, TimeUnit.SECONDS)).isTrue();
		CompletableFuture<Boolean> release = CompletableFuture.supplyAsync(lease::release);
		Thread.sleep(200);
		assertThat(release).as("the release waits while the renewal is in flight").isNotDone();
		renewalMayFinish.countDown();
		renewal.get(10, TimeUnit.SECONDS);
		assertThat(release.get(10, TimeUnit.SECONDS)).isTrue();
		lease.renew(); // a renewal the scheduler started late
		assertThat(overlapped).as("release statement sent during a renewal").isFalse();
		assertThat(renewalsAfterRelease).as("renewals sent after the release").hasValue(0);
		assertThat(lease.released).isTrue();
	}

}
