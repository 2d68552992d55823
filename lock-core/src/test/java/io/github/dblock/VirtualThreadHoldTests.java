package io.github.dblock;

import java.time.Duration;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.jdbc.JdbcLockTemplateBuilder;
import io.github.dblock.jdbc.admin.LockTableAdmin;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

/**
 * What holds for a lock taken on a virtual thread, as the README states it: the thread that acquires must release,
 * {@link CurrentLock} is per (virtual) thread, and interruption on loss interrupts the virtual thread that holds the
 * lock. On the real test database. Runs on JDK 21 or later only (tag {@code jdk21}, run by the JDK 25 step of
 * {@code .ci/run}); fails on an older JVM.
 */
@Tag("jdk21")
class VirtualThreadHoldTests {

	private static HikariDataSource pool;

	private static ThreadFactory virtualThreads;

	@BeforeAll
	static void onAVirtualThreadCapableJvm() throws ReflectiveOperationException {
		assertThat(Runtime.version().feature()).as("this test needs JDK 21+; .ci/run runs it on JDK 25, "
				+ "the default build excludes its tag").isGreaterThanOrEqualTo(21);
		Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
		virtualThreads = (ThreadFactory) Class.forName("java.lang.Thread$Builder").getMethod("factory").invoke(builder);
		pool = TestDatabase.get().newDataSource(4);
		LockNodes.migrateOnce(pool);
	}

	@AfterAll
	static void closePool() {
		if (pool != null) {
			pool.close();
		}
	}

	@Test
	void aHandleTakenOnAVirtualThreadIsReleasedOnlyByThatThreadAndIsVisibleOnlyThere() throws Exception {
		LockTemplate locks = JdbcLockTemplateBuilder.forDataSource(pool).createSchema(false).nodeName("vt-hold").build();
		String resource = "vt-hold-" + UUID.randomUUID();
		AtomicReference<LockHandle> handle = new AtomicReference<>();
		AtomicReference<Optional<LockHandle>> seenByAChild = new AtomicReference<>();
		AtomicReference<Throwable> closedElsewhere = new AtomicReference<>();
		onVirtualThread(() -> {
			LockHandle lock = locks.acquire(resource);
			handle.set(lock);
			assertThat(CurrentLock.get()).containsSame(lock);
			onVirtualThread(() -> seenByAChild.set(CurrentLock.get()));
			onVirtualThread(() -> {
				try {
					lock.close();
				}
				catch (Throwable ex) {
					closedElsewhere.set(ex);
				}
			});
			assertThat(locks.tryAcquire(resource, Duration.ZERO)).as("the holder re-enters").isPresent()
				.hasValueSatisfying(LockHandle::close);
			lock.close();
			assertThat(CurrentLock.get()).isEmpty();
		});
		assertThat(seenByAChild.get()).as("CurrentLock in a thread the holder started").isEmpty();
		assertThatIllegalStateException().isThrownBy(() -> {
			throw closedElsewhere.get();
		}).withMessageContaining("must be released by the thread that acquired it");
		assertThat(LockNodes.node(LockMode.LEASE, "vt-other", pool).tryAcquire(resource))
			.as("free once its own thread released it").isPresent().hasValueSatisfying(LockHandle::close);
	}

	@Test
	void aVirtualThreadHoldingALostLockIsInterruptedWhenInterruptOnLossIsOn() throws Exception {
		LockTemplate locks = JdbcLockTemplateBuilder.forDataSource(pool)
			.createSchema(false)
			.leaseTime(Duration.ofSeconds(3))
			.nodeName("vt-loss")
			.build();
		locks.setInterruptOnLoss(true);
		String resource = "vt-loss-" + UUID.randomUUID();
		CompletableFuture<String> outcome = new CompletableFuture<>();
		CompletableFuture<Void> holding = new CompletableFuture<>();
		Thread holder = virtualThreads.newThread(() -> {
			try (LockHandle lock = locks.acquire(resource)) {
				holding.complete(null);
				Thread.sleep(60_000);
				outcome.complete("slept through the loss on " + lock.resource());
			}
			catch (InterruptedException ex) {
				outcome.complete("interrupted");
			}
			catch (LockLostException ex) {
				outcome.complete("lost at release, not interrupted");
			}
			catch (Throwable ex) {
				outcome.completeExceptionally(ex);
			}
		});
		holder.start();
		holding.get(60, TimeUnit.SECONDS);
		// another party takes the lock away: the next renewal (a third of the lease) finds it lost
		assertThat(new LockTableAdmin(pool, LockNodes.TABLE, Duration.ofSeconds(5)).forceRelease(resource, "test"))
			.isPresent();
		assertThat(outcome.get(30, TimeUnit.SECONDS)).isEqualTo("interrupted");
		holder.join(TimeUnit.SECONDS.toMillis(30));
	}

	/** Runs the action on a new virtual thread and waits for it, failing with what it threw. */
	private static void onVirtualThread(ThrowingRunnable action) throws Exception {
		AtomicReference<Throwable> failure = new AtomicReference<>();
		Thread thread = virtualThreads.newThread(() -> {
			try {
				action.run();
			}
			catch (Throwable ex) {
				failure.set(ex);
			}
		});
		thread.start();
		thread.join(TimeUnit.MINUTES.toMillis(1));
		assertThat(thread.isAlive()).isFalse();
		if (failure.get() instanceof Exception ex) {
			throw ex;
		}
		if (failure.get() instanceof Error error) {
			throw error;
		}
	}

	@FunctionalInterface
	private interface ThrowingRunnable {

		void run() throws Exception;

	}

}
