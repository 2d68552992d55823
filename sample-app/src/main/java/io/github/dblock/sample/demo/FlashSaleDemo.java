package io.github.dblock.sample.demo;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.dblock.sample.SampleProperties;
import io.github.dblock.sample.stock.Stock;
import io.github.dblock.sample.stock.StockService;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.stereotype.Component;

/**
 * The flash-sale demonstration: many buyers rush for a few units of one product, once through
 * {@link StockService#purchase} (with {@code @DistributedLock}) and once through
 * {@link StockService#purchaseWithoutLock}, and the outcomes are printed side by side.
 * <p>
 * With the lock, exactly the units in stock are sold. Without it, buyers read the same count at the same time,
 * and more units are sold than exist (how many more varies from run to run: it is a race).
 */
@Component
public class FlashSaleDemo {

	private static final Log logger = LogFactory.getLog(FlashSaleDemo.class);

	private final StockService stockService;

	private final SampleProperties properties;

	public FlashSaleDemo(StockService stockService, SampleProperties properties) {
		this.stockService = stockService;
		this.properties = properties;
	}

	/**
	 * Runs the sale with the lock, then without, with the {@code sample.demo.*} settings, and logs the results
	 * as a table.
	 * @return the two results, with the lock first
	 */
	public List<SaleResult> runDemo() {
		SampleProperties.Demo demo = this.properties.getDemo();
		logger.info("Flash-sale demo: " + demo.getBuyers() + " buyers on " + demo.getThreads() + " threads rush for "
				+ demo.getStock() + " units of '" + demo.getSku() + "', first with @DistributedLock, then without");
		SaleResult locked = run(demo.getSku(), demo.getStock(), demo.getBuyers(), demo.getThreads(), true);
		SaleResult unlocked = run(demo.getSku(), demo.getStock(), demo.getBuyers(), demo.getThreads(), false);
		logger.info(table(locked, unlocked));
		return List.of(locked, unlocked);
	}

	/**
	 * Puts {@code stock} units of {@code sku} on sale and lets {@code buyers} buyers, each wanting one unit, call
	 * the stock service from {@code threads} threads at once.
	 * @param locked whether to use {@link StockService#purchase} (with the lock) or
	 * {@link StockService#purchaseWithoutLock}
	 * @return what happened
	 */
	public SaleResult run(String sku, int stock, int buyers, int threads, boolean locked) {
		if (stock < 0 || buyers < 1 || threads < 1) {
			throw new IllegalArgumentException("Need stock >= 0, buyers >= 1 and threads >= 1; was " + stock + ", "
					+ buyers + " and " + threads);
		}
		this.stockService.reset(sku, stock);
		AtomicInteger bought = new AtomicInteger();
		AtomicInteger rejected = new AtomicInteger();
		AtomicInteger failed = new AtomicInteger();
		List<String> failures = new ArrayList<>();
		long[] latencies = new long[buyers];
		CountDownLatch start = new CountDownLatch(1);
		ExecutorService pool = Executors.newFixedThreadPool(threads, threadFactory(locked ? "locked-buyer-" : "unlocked-buyer-"));
		long elapsed;
		try {
			List<Future<?>> calls = new ArrayList<>(buyers);
			for (int i = 0; i < buyers; i++) {
				int buyer = i;
				calls.add(pool.submit(() -> {
					start.await();
					long callStart = System.nanoTime();
					try {
						String name = "buyer-" + (buyer + 1);
						boolean ok = locked ? this.stockService.purchase(sku, 1, name)
								: this.stockService.purchaseWithoutLock(sku, 1, name);
						(ok ? bought : rejected).incrementAndGet();
					}
					catch (RuntimeException ex) {
						failed.incrementAndGet();
						synchronized (failures) {
							failures.add(ex.toString());
						}
					}
					finally {
						latencies[buyer] = System.nanoTime() - callStart;
					}
					return null;
				}));
			}
			long begin = System.nanoTime();
			start.countDown();
			for (Future<?> call : calls) {
				call.get();
			}
			elapsed = System.nanoTime() - begin;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Demo interrupted", ex);
		}
		catch (ExecutionException ex) {
			throw new IllegalStateException("Demo buyer failed unexpectedly", ex.getCause());
		}
		finally {
			pool.shutdownNow();
		}
		Stock after = this.stockService.find(sku).orElseThrow();
		int purchaseRows = this.stockService.countPurchases(sku);
		if (!failures.isEmpty()) {
			logger.warn(failures.size() + " purchase call(s) failed " + (locked ? "with" : "without")
					+ " the lock; first: " + failures.get(0));
		}
		Arrays.sort(latencies);
		return new SaleResult(locked, stock, buyers, threads, purchaseRows, bought.get(), after.available(),
				after.sold(), rejected.get(), failed.get(), percentile(latencies, 0.50), percentile(latencies, 0.99),
				Duration.ofNanos(latencies[latencies.length - 1]), Duration.ofNanos(elapsed),
				failures.isEmpty() ? null : failures.get(0));
	}

	private static Duration percentile(long[] sorted, double p) {
		int rank = (int) Math.ceil(p * sorted.length);
		return Duration.ofNanos(sorted[Math.max(0, rank - 1)]);
	}

	private static ThreadFactory threadFactory(String prefix) {
		AtomicInteger count = new AtomicInteger();
		return (runnable) -> {
			Thread thread = new Thread(runnable, prefix + count.incrementAndGet());
			thread.setDaemon(true);
			return thread;
		};
	}

	/** Formats the two runs side by side. */
	String table(SaleResult locked, SaleResult unlocked) {
		StringBuilder out = new StringBuilder();
		out.append(String.format(Locale.ROOT, "%n%nFlash sale: %d units, %d buyers wanting 1 unit each, %d threads, "
				+ "think time %d ms%n%n", locked.initialStock(), locked.buyers(), locked.threads(),
				this.properties.getStock().getThinkTime().toMillis()));
		row(out, "", "WITH @DistributedLock", "WITHOUT lock");
		row(out, "sold (purchase rows)", locked.purchaseRows(), unlocked.purchaseRows());
		row(out, "remaining stock", locked.remaining(), unlocked.remaining());
		row(out, "OVERSOLD", locked.oversold(), unlocked.oversold());
		row(out, "rejected: sold out", locked.rejected(), unlocked.rejected());
		row(out, "failed: error", locked.failed(), unlocked.failed());
		row(out, "stock.sold column", locked.stockSoldColumn(), unlocked.stockSoldColumn());
		row(out, "call latency p50", millis(locked.latencyP50()), millis(unlocked.latencyP50()));
		row(out, "call latency p99", millis(locked.latencyP99()), millis(unlocked.latencyP99()));
		row(out, "call latency max", millis(locked.latencyMax()), millis(unlocked.latencyMax()));
		row(out, "elapsed", millis(locked.elapsed()), millis(unlocked.elapsed()));
		out.append(String.format(Locale.ROOT, "%n"));
		out.append(verdict(locked, unlocked));
		out.append(String.format(Locale.ROOT, "%nCall latency is the time each purchase() call took, including the "
				+ "wait for the lock; with the lock, buyers of one product take turns.%n"));
		return out.toString();
	}

	private static String verdict(SaleResult locked, SaleResult unlocked) {
		StringBuilder out = new StringBuilder();
		if (locked.oversold() == 0 && locked.purchaseRows() + locked.remaining() == locked.initialStock()) {
			out.append("With the lock: every unit was sold exactly once, nothing oversold.");
		}
		else {
			out.append("With the lock: UNEXPECTED, the stock does not add up; please report this.");
		}
		out.append(String.format(Locale.ROOT, "%n"));
		if (unlocked.oversold() > 0) {
			out.append(String.format(Locale.ROOT, "Without the lock: %d units sold that did not exist. Buyers read "
					+ "the same stock count at the same time and each wrote their own new count; "
					+ "the stock row lost updates (sold column %d, orders %d).", unlocked.oversold(),
					unlocked.stockSoldColumn(), unlocked.purchaseRows()));
		}
		else {
			out.append("Without the lock: no oversell this time (it is a race; try more buyers or threads).");
		}
		return out.toString();
	}

	private static void row(StringBuilder out, String label, Object locked, Object unlocked) {
		out.append(String.format(Locale.ROOT, "  %-22s %22s %16s%n", label, locked, unlocked));
	}

	private static String millis(Duration duration) {
		return String.format(Locale.ROOT, "%d ms", duration.toMillis());
	}

	/**
	 * The outcome of one sale.
	 *
	 * @param locked whether purchases went through the lock
	 * @param initialStock units on sale at the start
	 * @param buyers number of buyers, one unit each
	 * @param threads threads the buyers shared
	 * @param purchaseRows orders written to the {@code purchase} table: the units actually sold
	 * @param bought calls that returned {@code true}
	 * @param remaining the {@code stock.available} column at the end
	 * @param stockSoldColumn the {@code stock.sold} column at the end
	 * @param rejected calls that returned {@code false}: sold out
	 * @param failed calls that threw an exception
	 * @param latencyP50 median duration of a purchase call
	 * @param latencyP99 99th percentile duration of a purchase call
	 * @param latencyMax longest purchase call
	 * @param elapsed time from the start signal until every buyer was done
	 * @param firstFailure the first exception, if any call failed
	 */
	public record SaleResult(boolean locked, int initialStock, int buyers, int threads, int purchaseRows, int bought,
			int remaining, int stockSoldColumn, int rejected, int failed, Duration latencyP50, Duration latencyP99,
			Duration latencyMax, Duration elapsed, @Nullable String firstFailure) {

		/** Units sold beyond the initial stock; 0 when the stock was respected. */
		public int oversold() {
			return Math.max(0, this.purchaseRows - this.initialStock);
		}

	}

}
