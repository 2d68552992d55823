package com.example.shop;

import io.github.dblock.LockTemplate;
import org.springframework.stereotype.Component;

@Component
public class CacheRefresher {

	private final LockTemplate locks;

	public CacheRefresher(LockTemplate locks) {
		this.locks = locks;
	}

	// Without the annotation: refresh unless another instance is refreshing right now.
	public boolean refreshIfIdle() {
		return locks.tryAcquire("cache-refresh").map((lock) -> {
			try (lock) {
				refresh();
				return true;
			}
		}).orElse(false);
	}

	private void refresh() {
		// rebuild the cache
	}

}
