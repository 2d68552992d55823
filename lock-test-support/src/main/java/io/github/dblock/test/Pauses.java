package io.github.dblock.test;

/** Pauses of test code and worker JVMs. */
public final class Pauses {

	private Pauses() {
	}

	/**
	 * Sleeps for {@code millis} milliseconds.
	 * @throws IllegalStateException if interrupted, with the thread's interrupt status kept
	 */
	public static void sleep(long millis) {
		try {
			Thread.sleep(millis);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}

	/**
	 * Waits until {@code condition} holds, checking every 20 ms.
	 * @return whether it held within {@code timeout}
	 * @throws IllegalStateException if interrupted, with the thread's interrupt status kept
	 */
	public static boolean await(java.time.Duration timeout, java.util.function.BooleanSupplier condition) {
		long deadline = System.nanoTime() + timeout.toNanos();
		while (!condition.getAsBoolean()) {
			if (System.nanoTime() - deadline > 0) {
				return false;
			}
			sleep(20);
		}
		return true;
	}

}
