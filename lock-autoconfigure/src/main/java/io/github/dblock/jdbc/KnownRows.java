package io.github.dblock.jdbc;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Resources whose lock row was seen to exist in the last minute, so that locking inside a caller's transaction
 * need not check for the row first. A hint, not a truth: entries expire after {@link #TTL_NANOS}, the map is
 * cleared when it reaches {@link #MAX_ENTRIES}, and a row found missing is forgotten. Thread-safe.
 */
final class KnownRows {

	static final long TTL_NANOS = TimeUnit.MINUTES.toNanos(1);

	static final int MAX_ENTRIES = 4096;

	private final Map<String, Long> seenAt = new ConcurrentHashMap<>();

	boolean contains(String resource) {
		Long seen = this.seenAt.get(resource);
		if (seen == null) {
			return false;
		}
		if (System.nanoTime() - seen > TTL_NANOS) {
			this.seenAt.remove(resource, seen);
			return false;
		}
		return true;
	}

	void add(String resource) {
		if (this.seenAt.size() >= MAX_ENTRIES) {
			this.seenAt.clear();
		}
		this.seenAt.put(resource, System.nanoTime());
	}

	void forget(String resource) {
		this.seenAt.remove(resource);
	}

}
