package io.github.dblock.engine;

import org.jspecify.annotations.Nullable;

/**
 * A thread's place at the head of a resource's local queue, taken before the transaction of its acquisition begins
 * ({@link ExclusiveHolds#admit}). Not thread-safe: used by the thread that took it, once.
 */
final class Admission {

	/** The thread holds the resource, or owns its gate, already: the call re-enters inside its transaction. */
	static final Admission REENTRY = new Admission(null, 0, null);

	/** The gate, until the acquisition takes it over or it is given back. */
	private @Nullable LocalLock entry;

	final long deadlineNanos;

	private final @Nullable String refusedBy;

	private Admission(@Nullable LocalLock entry, long deadlineNanos, @Nullable String refusedBy) {
		this.entry = entry;
		this.deadlineNanos = deadlineNanos;
		this.refusedBy = refusedBy;
	}

	/** The gate of the entry, owned by the current thread, until the deadline of its call. */
	static Admission admitted(LocalLock entry, long deadlineNanos) {
		return new Admission(entry, deadlineNanos, null);
	}

	static Admission refused(String holder) {
		return new Admission(null, 0, holder);
	}

	/** Whether the call has the gate and acquires from it. */
	boolean isAdmitted() {
		return this.entry != null;
	}

	/** Who kept the gate until the deadline, or {@code null} unless the admission was refused. */
	@Nullable String refusedBy() {
		return this.refusedBy;
	}

	/** The gate's entry, taken over by the acquisition. */
	LocalLock enter() {
		LocalLock admitted = this.entry;
		if (admitted == null) {
			throw new IllegalStateException("not admitted, or entered already");
		}
		this.entry = null;
		return admitted;
	}

	/** The gate's entry if the acquisition never took it over, once. */
	@Nullable LocalLock abandon() {
		LocalLock unused = this.entry;
		if (unused != null) {
			this.entry = null;
		}
		return unused;
	}

}
