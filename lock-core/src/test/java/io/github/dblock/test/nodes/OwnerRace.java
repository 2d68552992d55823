package io.github.dblock.test.nodes;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import io.github.dblock.LockHandle;
import io.github.dblock.LockTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Nodes racing for never-seen resources with a zero wait: in each round every racer tries the same new resource
 * at the same moment, a winner holds the lock until every racer has tried, and the round must end with exactly one
 * owner and no exception. Races that lose only now and then show under load; {@code -Dlock.test.race-rounds=N}
 * (passed to the forked test JVM, for example with {@code -DargLine=-Dlock.test.race-rounds=1000}) runs N rounds
 * instead of the test's default.
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
public final class OwnerRace {

	private OwnerRace() {
	}

	/** A node, and how it makes its attempt: directly, or wrapped (for example in a transaction). */
	public record Racer(LockTemplate node, Around around) {

		/** A racer that tries directly. */
		public static Racer direct(LockTemplate node) {
			return new Racer(node, Supplier::get);
		}

	}

	/** Runs one attempt in the racer's context and returns its result. */
	@FunctionalInterface
	public interface Around {

		boolean run(Supplier<Boolean> attempt);

	}

	/**
	 * Runs the rounds and asserts that each has exactly one owner; an exception in any attempt fails the test.
	 * @param defaultRounds the rounds unless {@code lock.test.race-rounds} says otherwise
	 */
	public static void assertExactlyOneOwnerPerRound(int defaultRounds, Supplier<String> newResource, List<Racer> racers)
			throws Exception {
		int rounds = Integer.getInteger("lock.test.race-rounds", defaultRounds);
		ExecutorService pool = Executors.newFixedThreadPool(racers.size());
		try {
			for (int round = 0; round < rounds; round++) {
				String resource = newResource.get();
				CyclicBarrier start = new CyclicBarrier(racers.size());
				CountDownLatch allTried = new CountDownLatch(racers.size());
				List<Future<Boolean>> results = new ArrayList<>();
				for (Racer racer : racers) {
					results.add(pool.submit(() -> {
						start.await();
						return racer.around().run(() -> attempt(racer.node(), resource, allTried));
					}));
				}
				int owners = 0;
				for (Future<Boolean> result : results) {
					owners += result.get(60, TimeUnit.SECONDS) ? 1 : 0; // any exception fails here
				}
				assertThat(owners).as("owners in round %d of '%s'", round, resource).isEqualTo(1);
			}
		}
		finally {
			pool.shutdownNow();
		}
	}

	private static boolean attempt(LockTemplate node, String resource, CountDownLatch allTried) {
		Optional<LockHandle> lock;
		try {
			lock = node.tryAcquire(resource);
		}
		finally {
			allTried.countDown();
		}
		if (lock.isEmpty()) {
			return false;
		}
		try (LockHandle held = lock.get()) {
			allTried.await(); // hold until every racer has tried
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("interrupted while holding '" + resource + "'", ex);
		}
		return true;
	}

}
