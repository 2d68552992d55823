package io.github.dblock.jdbc;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Resources for which something was seen recently: by default, that their lock row exists (in the last minute), so
 * that locking inside a caller's transaction need not check for the row first; {@link LeaseLockProvider} also keeps
 * the resources that another node wanted recently. A hint, not a truth: entries expire after their time to live
 * ({@link #TTL_NANOS} by default), the map is cleared when it reaches {@link #MAX_ENTRIES}, and a row found missing
 * is forgotten. Thread-safe.
 */
final class KnownRows {

	static final long TTL_NANOS = TimeUnit.MINUTES.toNanos(1);

	static final int MAX_ENTRIES = 4096;

	private final Map<String, Long> seenAt = new ConcurrentHashMap<>();

	private final long ttlNanos;

	/** Entries that live {@link #TTL_NANOS}. */
	KnownRows() {
		this(TTL_NANOS);
	}

	/** Entries that live {@code ttlNanos}. */
	KnownRows(long ttlNanos) {
		this.ttlNanos = ttlNanos;
	}

	boolean contains(String resource) {
		Long seen = this.seenAt.get(resource);
		if (seen == null) {
			return false;
		}
		if (System.nanoTime() - seen > this.ttlNanos) {
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
