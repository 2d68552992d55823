package io.github.dblock.jdbc.lease;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link RenewalScheduler}: a renewal scheduled while renewals are in use is never the head of the delay queue (so
 * scheduling it wakes no scheduler thread), renewals still run on time, and the pacer stops once renewals stop.
 */
class RenewalSchedulerTests {

	private static final ThreadFactory DAEMONS = (task) -> {
		Thread thread = new Thread(task, "renewal-scheduler-test");
		thread.setDaemon(true);
		return thread;
	};

	@Test
	void aRenewalIsQueuedBehindThePacerAndCancellingItLeavesOnlyThePacer() {
		RenewalScheduler scheduler = new RenewalScheduler(2, DAEMONS);
		try {
			ScheduledFuture<?> first = scheduler.scheduleWithFixedDelay(() -> { }, 10, 10, TimeUnit.SECONDS);
			ScheduledFuture<?> second = scheduler.scheduleWithFixedDelay(() -> { }, 10, 10, TimeUnit.SECONDS);
			Delayed head = (Delayed) scheduler.getQueue().peek();
			assertThat(head).isNotSameAs(first).isNotSameAs(second);
			assertThat(head.getDelay(TimeUnit.NANOSECONDS)).isLessThanOrEqualTo(RenewalScheduler.PACE_NANOS);
			assertThat(scheduler.getQueue()).hasSize(3);
			first.cancel(false);
			second.cancel(false);
			assertThat(scheduler.getQueue()).as("cancelled renewals leave the queue at once").hasSize(1);
		}
		finally {
			scheduler.shutdownNow();
		}
	}

	@Test
	void renewalsRunOnTheirScheduleWhileThePacerRuns() throws Exception {
		RenewalScheduler scheduler = new RenewalScheduler(2, DAEMONS, TimeUnit.MILLISECONDS.toNanos(20),
				TimeUnit.SECONDS.toNanos(10));
		try {
			CountDownLatch threeRuns = new CountDownLatch(3);
			long start = System.nanoTime();
			ScheduledFuture<?> renewal = scheduler.scheduleWithFixedDelay(threeRuns::countDown, 100, 100,
					TimeUnit.MILLISECONDS);
			assertThat(threeRuns.await(5, TimeUnit.SECONDS)).isTrue();
			assertThat(System.nanoTime() - start).as("not before its delays").isGreaterThanOrEqualTo(
					TimeUnit.MILLISECONDS.toNanos(300));
			renewal.cancel(false);
		}
		finally {
			scheduler.shutdownNow();
		}
	}

	@Test
	void thePacerStopsWhenNoRenewalWasScheduledForTheIdleTimeAndStartsAgainWithTheNext() throws Exception {
		// the pacer's first run finds the idle time (1 ns) over; its 1 s period leaves time to look at the queue
		RenewalScheduler scheduler = new RenewalScheduler(2, DAEMONS, TimeUnit.SECONDS.toNanos(1), 1);
		try {
			scheduler.scheduleWithFixedDelay(() -> { }, 10, 10, TimeUnit.SECONDS).cancel(false);
			long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
			while (!scheduler.getQueue().isEmpty() && System.nanoTime() < deadline) {
				Thread.sleep(10);
			}
			assertThat(scheduler.getQueue()).as("the pacer stopped").isEmpty();
			ScheduledFuture<?> next = scheduler.scheduleWithFixedDelay(() -> { }, 10, 10, TimeUnit.SECONDS);
			assertThat(scheduler.getQueue()).as("pacer and renewal").hasSize(2);
			assertThat(scheduler.getQueue().peek()).isNotSameAs(next);
		}
		finally {
			scheduler.shutdownNow();
		}
	}

	@Test
	void aShutDownSchedulerRejectsRenewalsAsBefore() {
		RenewalScheduler scheduler = new RenewalScheduler(2, DAEMONS);
		scheduler.shutdownNow();
		org.assertj.core.api.Assertions
			.assertThatExceptionOfType(java.util.concurrent.RejectedExecutionException.class)
			.isThrownBy(() -> scheduler.scheduleWithFixedDelay(() -> { }, 1, 1, TimeUnit.SECONDS));
	}

}
