package io.github.dblock.semaphore;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

import io.github.dblock.LockLostException;
import io.github.dblock.spi.HeldLock;
import io.micrometer.observation.Observation;

/** The {@link PermitHandle} of {@link SemaphoreTemplate}: the provider's lease and the hold's observation. */
final class HeldPermit implements PermitHandle {

	private final String name;

	private final HeldLock held;

	private final Observation holding;

	private final AtomicBoolean closed = new AtomicBoolean();

	HeldPermit(String name, HeldLock held, Observation holding) {
		this.name = name;
		this.held = held;
		this.holding = holding;
	}

	@Override
	public String name() {
		return this.name;
	}

	@Override
	public long fencingToken() {
		return this.held.fencingToken();
	}

	@Override
	public boolean isHeld() {
		return !this.closed.get() && !this.held.isLost() && System.nanoTime() - this.held.validUntilNanos() < 0;
	}

	@Override
	public void onLost(Consumer<? super PermitHandle> listener) {
		this.held.onLost(() -> listener.accept(this));
	}

	@Override
	public void close() {
		if (!this.closed.compareAndSet(false, true)) {
			return;
		}
		boolean released;
		try {
			released = this.held.release();
		}
		finally {
			this.holding.stop();
		}
		if (!released) {
			throw new LockLostException(this.name, this.held.fencingToken(), "Permit of semaphore '" + this.name
					+ "' (fencing token " + this.held.fencingToken() + ") was no longer held at release: its lease "
					+ "had expired, and another owner may have been admitted in its place");
		}
	}

	@Override
	public String toString() {
		return "PermitHandle[semaphore=" + this.name + ", fencingToken=" + fencingToken() + ", held=" + isHeld() + "]";
	}

}
