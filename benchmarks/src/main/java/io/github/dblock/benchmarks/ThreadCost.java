package io.github.dblock.benchmarks;

import java.lang.management.ManagementFactory;

/**
 * The current thread's CPU time and allocated bytes so far, read from the JVM's {@code ThreadMXBean} (HotSpot's
 * {@code com.sun.management} extension for the bytes). The difference of two readings on one thread is what that
 * thread spent between them: the JVM's own cost of the operations it ran, which the machine's noise (other
 * processes, the database server sharing the cores) leaves nearly untouched.
 * @param cpuNanos CPU time of the thread, user and system, in nanoseconds; -1 if the JVM does not measure it
 * @param allocatedBytes heap bytes the thread allocated; -1 if the JVM does not measure it
 */
public record ThreadCost(long cpuNanos, long allocatedBytes) {

	private static final java.lang.management.ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

	/** A reading on the current thread. */
	public static ThreadCost now() {
		long cpu = THREADS.isCurrentThreadCpuTimeSupported() ? THREADS.getCurrentThreadCpuTime() : -1;
		long bytes = (THREADS instanceof com.sun.management.ThreadMXBean hotSpot)
				? hotSpot.getCurrentThreadAllocatedBytes() : -1;
		return new ThreadCost(cpu, bytes);
	}

	/** This cost less another, component by component. */
	public ThreadCost minus(ThreadCost other) {
		return new ThreadCost(this.cpuNanos - other.cpuNanos, this.allocatedBytes - other.allocatedBytes);
	}

	/** This cost and another, component by component. */
	public ThreadCost plus(ThreadCost other) {
		return new ThreadCost(this.cpuNanos + other.cpuNanos, this.allocatedBytes + other.allocatedBytes);
	}

	/** What the current thread spent since this reading, as a reading of its own. */
	public ThreadCost since() {
		ThreadCost now = now();
		return new ThreadCost(now.cpuNanos - this.cpuNanos, now.allocatedBytes - this.allocatedBytes);
	}

}
