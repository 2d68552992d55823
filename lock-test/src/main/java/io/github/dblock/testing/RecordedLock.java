package io.github.dblock.testing;

import java.util.Optional;
import java.util.OptionalLong;

import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockType;
import org.jspecify.annotations.Nullable;

/**
 * One acquisition a {@link LockRecorder} saw: a call of a {@link io.github.dblock.LockTemplate} (directly, through
 * {@code @DistributedLock}, or through an adapter) that asked for a lock, and how it ended. Immutable and
 * thread-safe; the handle it keeps is the one the caller got, so {@link LockHandle#isHeld()} tells whether the hold
 * is still held now.
 */
public final class RecordedLock {

	/** How an acquisition ended. */
	public enum Outcome {

		/** The lock was taken (also a re-entry by its holding thread). */
		ACQUIRED,

		/** Another owner held the lock for the whole wait time (or every OPTIMISTIC attempt conflicted). */
		NOT_ACQUIRED,

		/** The acquisition failed with an exception (an interrupt, a database failure, a refused request). */
		FAILED

	}

	private final String resource;

	private final LockMode mode;

	private final Outcome outcome;

	private final @Nullable LockHandle handle;

	private final @Nullable Throwable failure;

	private final String node;

	private final String thread;

	RecordedLock(String resource, LockMode mode, Outcome outcome, @Nullable LockHandle handle,
			@Nullable Throwable failure, String node, String thread) {
		this.resource = resource;
		this.mode = mode;
		this.outcome = outcome;
		this.handle = handle;
		this.failure = failure;
		this.node = node;
		this.thread = thread;
	}

	/** The resource name, exactly as given. */
	public String resource() {
		return this.resource;
	}

	/** The mode of the call (the template's default when the call chose none). */
	public LockMode mode() {
		return this.mode;
	}

	/** How the acquisition ended. */
	public Outcome outcome() {
		return this.outcome;
	}

	/** Whether the lock was taken. */
	public boolean isAcquired() {
		return this.outcome == Outcome.ACQUIRED;
	}

	/**
	 * The handle the caller got, for an acquired lock; empty when it was not acquired, and for
	 * {@link LockMode#OPTIMISTIC} work, whose handle exists only while the work runs.
	 */
	public Optional<LockHandle> handle() {
		return Optional.ofNullable(this.handle);
	}

	/** The kind of lock taken ({@link LockHandle#type()}); empty when there is no {@link #handle()}. */
	public Optional<LockType> type() {
		return handle().map(LockHandle::type);
	}

	/** The fencing token of the acquisition; empty when there is no {@link #handle()}. */
	public OptionalLong fencingToken() {
		return (this.handle != null) ? OptionalLong.of(this.handle.fencingToken()) : OptionalLong.empty();
	}

	/** The exception of a {@link Outcome#FAILED} acquisition, when the template reported one. */
	public Optional<Throwable> failure() {
		return Optional.ofNullable(this.failure);
	}

	/** The node name of the template that made the call. */
	public String node() {
		return this.node;
	}

	/** The name of the thread that made the call. */
	public String thread() {
		return this.thread;
	}

	@Override
	public String toString() {
		return "RecordedLock[resource=" + this.resource + ", mode=" + this.mode + ", outcome=" + this.outcome
				+ type().map((type) -> ", type=" + type).orElse("")
				+ ((this.handle != null) ? ", fencingToken=" + this.handle.fencingToken() : "") + ", node=" + this.node
				+ ", thread=" + this.thread + "]";
	}

}
