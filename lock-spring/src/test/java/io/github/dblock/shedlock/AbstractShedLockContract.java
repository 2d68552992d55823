package io.github.dblock.shedlock;

import java.time.Duration;
import java.util.Optional;

import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.test.support.AbstractExtensibleLockProviderIntegrationTest;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * ShedLock's own contract tests for an {@code ExtensibleLockProvider}, with one deliberate difference: the adapter
 * does not hand out a lease whose {@code lockAtMostFor} had passed when the reply to its take arrived, counted by this
 * JVM's clock from the sending of the take (docs/reference/safety.md, "Late replies"); ShedLock's providers return
 * such a lock, already over. ShedLock's {@code shouldNotBeAbleToExtendExpiredLock} takes a lock of 2 ms, which then
 * depends on how fast the machine answers; here it runs with a lease that outlasts a round trip.
 */
abstract class AbstractShedLockContract extends AbstractExtensibleLockProviderIntegrationTest {

	/** ShedLock's check with a lease of 200 ms instead of 2 ms: an expired lock cannot be extended. */
	@Override
	@Test
	public void shouldNotBeAbleToExtendExpiredLock() {
		Optional<SimpleLock> lock = getLockProvider().lock(lockConfig(LOCK_NAME1, Duration.ofMillis(200), Duration.ZERO));
		assertThat(lock).isNotEmpty();
		sleepFor(Duration.ofMillis(400));
		Optional<SimpleLock> extended = lock.get().extend(Duration.ofSeconds(10), Duration.ZERO);
		assertThat(extended).isEmpty();
		assertUnlocked(LOCK_NAME1);
	}

	/** The difference itself: a lock over before its reply arrives is not handed out, and the name stays free. */
	@Test
	void aLockWhoseLockAtMostForPassesBeforeTheReplyArrivesIsNotHandedOut() {
		// a zero lockAtMostFor becomes a lease of 1 µs, always over before the reply
		assertThat(getLockProvider().lock(lockConfig(LOCK_NAME1, Duration.ZERO, Duration.ZERO))).isEmpty();
		assertUnlocked(LOCK_NAME1);
		Optional<SimpleLock> next = getLockProvider().lock(lockConfig(LOCK_NAME1, Duration.ofSeconds(10), Duration.ZERO));
		assertThat(next).as("the name is free right after").isNotEmpty();
		next.get().unlock();
	}

}
