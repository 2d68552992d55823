package io.github.dblock.jdbc.sql;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Resources for which something was seen recently: by default, that their lock row exists (in the last minute), so
 * that locking inside a caller's transaction need not check for the row first; {@code LeaseLockProvider} also keeps
 * the resources that another node wanted recently. A hint, not a truth: entries expire after their time to live
 * ({@link #TTL_NANOS} by default), the map is cleared when it reaches {@link #MAX_ENTRIES}, and a row found missing
 * is forgotten. Thread-safe.
 * <p>
 * Internal machinery of the JDBC engine, public only so that the other {@code io.github.dblock.jdbc} packages
 * can use it: not API, may change in any release.
 */
public final class KnownRows {

	public static final long TTL_NANOS = TimeUnit.MINUTES.toNanos(1);

	static final int MAX_ENTRIES = 4096;

	private final Map<String, Long> seenAt = new ConcurrentHashMap<>();

	private final long ttlNanos;

	/** Entries that live {@link #TTL_NANOS}. */
	public KnownRows() {
		this(TTL_NANOS);
	}

	/** Entries that live {@code ttlNanos}. */
	public KnownRows(long ttlNanos) {
		this.ttlNanos = ttlNanos;
	}

	public boolean contains(String resource) {
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

	public void add(String resource) {
		if (this.seenAt.size() >= MAX_ENTRIES) {
			this.seenAt.clear();
		}
		this.seenAt.put(resource, System.nanoTime());
	}

	public void forget(String resource) {
		this.seenAt.remove(resource);
	}

}
