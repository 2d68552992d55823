package io.github.dblock.sample;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.github.dblock.LockLostException;
import io.github.dblock.sample.stock.StockService;
import io.github.dblock.testing.LockFaults;
import io.github.dblock.testing.LockRecorder;
import io.github.dblock.testing.autoconfigure.AutoConfigureDistributedLocks;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import static io.github.dblock.testing.LockAssertions.assertThat;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * What a purchase does when its lock is lost or busy, in milliseconds instead of lease times, with the test kit's
 * faults on the real lock table ({@link AutoConfigureDistributedLocks}, docs/reference/testing.md). A purchase thinks
 * for 200 ms under the lock here, so that the test can act while it holds it.
 */
@SpringBootTest(properties = { "sample.demo.enabled=false", "sample.report.enabled=false",
		"sample.stock.think-time=200ms" })
@AutoConfigureDistributedLocks
class StockLockFaultTests {

	@DynamicPropertySource
	static void database(DynamicPropertyRegistry registry) {
		SampleTestSupport.registerTestDatabase(registry);
	}

	@Autowired
	private StockService stockService;

	@Autowired
	private LockRecorder locks;

	@Autowired
	private LockFaults faults;

	@Autowired
	private JdbcTemplate jdbc;

	private final String sku = "faults-" + UUID.randomUUID();

	private final ExecutorService buyer = Executors.newSingleThreadExecutor();

	@AfterEach
	void cleanUp() {
		this.buyer.shutdownNow();
		this.faults.expire("stock:" + this.sku);
		this.jdbc.update("DELETE FROM purchase WHERE sku = ?", this.sku);
		this.jdbc.update("DELETE FROM stock WHERE sku = ?", this.sku);
	}

	@Test
	void aPurchaseWhoseLockIsTakenOverWhileItRunsIsRolledBackWithinASecond() throws Exception {
		this.stockService.reset(this.sku, 5);
		this.locks.clear();
		long start = System.nanoTime();
		Future<Boolean> purchase = this.buyer.submit(() -> this.stockService.purchase(this.sku, 1, "alice"));
		awaitHeld("stock:" + this.sku);
		// another instance takes the lock over while the purchase thinks (as after a pause longer than the lease)
		long otherOwner = this.faults.takeOver("stock:" + this.sku, Duration.ofSeconds(5));
		assertThatExceptionOfType(ExecutionException.class).isThrownBy(() -> purchase.get(5, TimeUnit.SECONDS))
			.withCauseInstanceOf(LockLostException.class);
		assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(1));
		assertThat(this.locks).hasAcquired("stock:" + this.sku, 1).hasFencingTokenGreaterThan(0);
		assertThat(otherOwner).isGreaterThan(this.locks.lastAcquired("stock:" + this.sku).orElseThrow()
			.fencingToken().orElseThrow());
		// its transaction was rolled back at the commit: nothing sold
		assertThat(this.stockService.find(this.sku).orElseThrow().available()).isEqualTo(5);
		assertThat(this.stockService.countPurchases(this.sku)).isZero();
	}

	@Test
	void aPurchaseWaitsForALockHeldElsewhereAndThenRunsUnderANewerToken() {
		this.stockService.reset(this.sku, 5);
		this.locks.clear();
		long otherOwner = this.faults.takeOver("stock:" + this.sku, Duration.ofMillis(300));
		long start = System.nanoTime();
		assertThat(this.stockService.purchase(this.sku, 1, "bob")).isTrue();
		assertThat(Duration.ofNanos(System.nanoTime() - start)).as("waited for the other owner's lease")
			.isBetween(Duration.ofMillis(250), Duration.ofSeconds(5));
		assertThat(this.locks).hasAcquired("stock:" + this.sku, 1).hasFencingTokenGreaterThan(otherOwner)
			.isNoLongerHeld();
		assertThat(this.faults).isFree("stock:" + this.sku);
	}

	/** Waits until the purchase holds its lock (the recorder sees an acquisition once it is taken). */
	private void awaitHeld(String resource) throws InterruptedException {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
		while (this.locks.lastAcquired(resource).isEmpty()) {
			assertThat(System.nanoTime() - deadline).as("the purchase took its lock").isNegative();
			Thread.sleep(2);
		}
	}

}
