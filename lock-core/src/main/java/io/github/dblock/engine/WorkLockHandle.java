package io.github.dblock.engine;

import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;

/**
 * The {@link LockHandle} an {@link LockMode#OPTIMISTIC} unit of work sees: it is valid while the work runs, and
 * closing it does nothing (the template ends the work's transaction).
 */
final class WorkLockHandle implements LockHandle {

	private final String resource;

	private final LockMode mode;

	private final long fencingToken;

	/** The engine whose work this is: an exclusive lock of the same resource from it is refused inside the work. */
	final Object engine;

	WorkLockHandle(String resource, LockMode mode, long fencingToken, Object engine) {
		this.resource = resource;
		this.mode = mode;
		this.fencingToken = fencingToken;
		this.engine = engine;
	}

	@Override
	public String resource() {
		return this.resource;
	}

	@Override
	public LockMode mode() {
		return this.mode;
	}

	@Override
	public long fencingToken() {
		return this.fencingToken;
	}

	@Override
	public boolean isHeld() {
		return true;
	}

	@Override
	public void onLost(java.util.function.Consumer<? super LockHandle> listener) {
		// nothing is held, so nothing can be lost
	}

	@Override
	public void close() {
	}

	@Override
	public String toString() {
		return "LockHandle[resource=" + this.resource + ", mode=" + this.mode + ", fencingToken=" + this.fencingToken + "]";
	}

}
