package io.github.dblock.sample.stock;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

import io.github.dblock.DistributedLock;
import io.github.dblock.sample.SampleProperties;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * Sells products from the {@code stock} table, writing one {@code purchase} row per order.
 * <p>
 * The purchase logic is a deliberately naive read-check-write, as often found in real code: read the units
 * available, check there are enough, do some work (here: sleep for {@code sample.stock.think-time}), then write
 * the new count. Two buyers that read the same count both succeed, and the stock is oversold; a database
 * transaction alone does not prevent it, because plain {@code SELECT}s do not block each other.
 * <p>
 * {@link #purchase} serialises buyers of the same product, across threads and across application instances,
 * with {@link DistributedLock @DistributedLock}; {@link #purchaseWithoutLock} is the same code without the lock,
 * for comparison. (An atomic {@code UPDATE ... SET available = available - ? WHERE available >= ?} would fix this
 * particular case without a lock; the lock fixes any read-check-write, including ones that call other systems.)
 */
@Service
public class StockService {

	private final JdbcTemplate jdbc;

	private final Duration thinkTime;

	public StockService(JdbcTemplate jdbc, SampleProperties properties) {
		this.jdbc = jdbc;
		this.thinkTime = properties.getStock().getThinkTime();
	}

	/**
	 * Buys units of a product while holding the lock {@code stock:<sku>}.
	 * <p>
	 * The lock is taken before the transaction begins and released after it has committed, so the next buyer
	 * reads the committed count. Buyers of the same product wait up to 30 seconds for their turn (the default
	 * would be {@code distributed-lock.wait-time}); buyers of different products do not wait for each other.
	 * @param sku the product
	 * @param quantity units to buy, at least 1
	 * @param buyer who buys, recorded in the purchase row
	 * @return {@code true} if bought, {@code false} if there were not enough units left
	 * @throws UnknownSkuException if the product has no stock row
	 * @throws io.github.dblock.LockNotAcquiredException if the lock was not free within 30 seconds
	 */
	@DistributedLock(resource = "stock:#{#sku}", waitTime = "30s")
	@Transactional
	public boolean purchase(String sku, int quantity, String buyer) {
		return readCheckWrite(sku, quantity, buyer);
	}

	/**
	 * The same as {@link #purchase}, without the lock: concurrent buyers can oversell the product.
	 */
	@Transactional
	public boolean purchaseWithoutLock(String sku, int quantity, String buyer) {
		return readCheckWrite(sku, quantity, buyer);
	}

	private boolean readCheckWrite(String sku, int quantity, String buyer) {
		if (quantity < 1) {
			throw new IllegalArgumentException("quantity must be at least 1, was " + quantity);
		}
		Stock stock = find(sku).orElseThrow(() -> new UnknownSkuException(sku));
		if (stock.available() < quantity) {
			return false;
		}
		think();
		this.jdbc.update("UPDATE stock SET available = ?, sold = ? WHERE sku = ?", stock.available() - quantity,
				stock.sold() + quantity, sku);
		this.jdbc.update("INSERT INTO purchase (sku, buyer, quantity) VALUES (?, ?, ?)", sku, buyer, quantity);
		return true;
	}

	/**
	 * Reads a product's stock row.
	 */
	public Optional<Stock> find(String sku) {
		List<Stock> rows = this.jdbc.query("SELECT sku, available, sold FROM stock WHERE sku = ?",
				(rs, row) -> new Stock(rs.getString("sku"), rs.getInt("available"), rs.getInt("sold")), sku);
		return rows.stream().findFirst();
	}

	/**
	 * Counts the purchase rows (orders) of a product.
	 */
	public int countPurchases(String sku) {
		Integer count = this.jdbc.queryForObject("SELECT COUNT(*) FROM purchase WHERE sku = ?", Integer.class, sku);
		return (count != null) ? count : 0;
	}

	/**
	 * Puts a product on sale with the given units, deleting its earlier purchases. Takes the same lock as
	 * {@link #purchase}: the lock protects the product's data, whichever method changes it.
	 */
	@DistributedLock(resource = "stock:#{#sku}", waitTime = "30s")
	@Transactional
	public void reset(String sku, int available) {
		this.jdbc.update("DELETE FROM purchase WHERE sku = ?", sku);
		this.jdbc.update("INSERT INTO stock (sku, available, sold) VALUES (?, ?, 0) "
				+ "ON DUPLICATE KEY UPDATE available = ?, sold = 0", sku, available, available);
	}

	private void think() {
		if (this.thinkTime.isZero() || this.thinkTime.isNegative()) {
			return;
		}
		try {
			Thread.sleep(this.thinkTime.toMillis(), this.thinkTime.toNanosPart() % 1_000_000);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Interrupted during purchase", ex);
		}
	}

}
