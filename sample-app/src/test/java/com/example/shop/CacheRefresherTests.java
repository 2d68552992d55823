package com.example.shop;

import java.time.Duration;

import io.github.dblock.LockMode;
import io.github.dblock.testing.InMemoryLockTemplate;
import org.junit.jupiter.api.Test;

import static io.github.dblock.testing.LockAssertions.assertThat;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A unit test of the README's {@link CacheRefresher} without a database, with the test kit's in-memory
 * {@code LockTemplate} (docs/reference/testing.md shows it).
 */
class CacheRefresherTests {

	private final InMemoryLockTemplate locks = new InMemoryLockTemplate();

	private final CacheRefresher refresher = new CacheRefresher(this.locks);

	@Test
	void refreshesUnderTheLockWhenNoOtherInstanceIs() {
		assertThat(this.refresher.refreshIfIdle()).isTrue();
		assertThat(this.locks.recorder()).hasAcquired("cache-refresh").hasMode(LockMode.LEASE).isNoLongerHeld();
		assertThat(this.locks.store()).isFree("cache-refresh");
	}

	@Test
	void skipsTheRefreshWhileAnotherInstanceHoldsTheLock() {
		this.locks.faults().takeOver("cache-refresh", Duration.ofMinutes(1));
		assertThat(this.refresher.refreshIfIdle()).isFalse();
		assertThat(this.locks.recorder()).hasFoundBusy("cache-refresh");
		assertThat(this.locks.recorder()).hasNotAcquired("cache-refresh");
	}

}
