package io.github.dblock.engine;

/**
 * The text the lock, semaphore and idempotency tables keep in their {@code holder} column, shared by the templates
 * of the three features so that every table describes a holder the same way. Not meant for applications.
 */
public final class HolderDescriptions {

	private HolderDescriptions() {
	}

	/**
	 * Describes the current thread of a node: {@code node [thread]}, cut to 255 code points (never inside a
	 * surrogate pair).
	 * @param nodeName the node's name, not blank
	 * @return the description; thread-safe, reads only the current thread's name
	 */
	public static String ofCurrentThread(String nodeName) {
		return LockSettings.holderDescription(nodeName);
	}

}
