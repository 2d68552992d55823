package com.example.shop;

import io.github.dblock.DistributedLock;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

@Service
public class StockService {

	private final JdbcTemplate jdbc;

	public StockService(JdbcTemplate jdbc) {
		this.jdbc = jdbc;
	}

	// One caller per SKU at a time, across all instances: the lock is taken before the transaction
	// begins and released after it commits. Busy for more than 2 s: LockNotAcquiredException.
	@DistributedLock(resource = "stock:#{#sku}", waitTime = "2s")
	@Transactional
	public boolean deduct(String sku, int quantity) {
		int available = jdbc.queryForObject("SELECT available FROM stock WHERE sku = ?", Integer.class, sku);
		if (available < quantity) {
			return false;
		}
		jdbc.update("UPDATE stock SET available = ? WHERE sku = ?", available - quantity, sku);
		return true;
	}

}
