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

}
