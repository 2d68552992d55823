package io.github.dblock.sample;

import java.io.File;
import java.time.Duration;

import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Settings of the sample application, under {@code sample.*}. The lock library's own settings are under
 * {@code distributed-lock.*}; see {@code application.yml}.
 */
@ConfigurationProperties("sample")
public class SampleProperties {

	private final EmbeddedDb embeddedDb = new EmbeddedDb();

	private final Stock stock = new Stock();

	private final Demo demo = new Demo();

	private final Report report = new Report();

	public EmbeddedDb getEmbeddedDb() {
		return this.embeddedDb;
	}

	public Stock getStock() {
		return this.stock;
	}

	public Demo getDemo() {
		return this.demo;
	}

	public Report getReport() {
		return this.report;
	}

	/**
	 * The embedded MariaDB that is started when {@code spring.datasource.url} is not set.
	 */
	public static class EmbeddedDb {

		/**
		 * TCP port of the embedded database, on 127.0.0.1. 0 picks a free port. Give a fixed one to let a
		 * second instance of the sample join this one's database.
		 */
		private int port;

		/**
		 * Directory for the embedded database's files. Default: a new temporary directory on every start, so
		 * every start begins with an empty database.
		 */
		@Nullable
		private File dataDir;

		public int getPort() {
			return this.port;
		}

		public void setPort(int port) {
			this.port = port;
		}

		@Nullable
		public File getDataDir() {
			return this.dataDir;
		}

		public void setDataDir(@Nullable File dataDir) {
			this.dataDir = dataDir;
		}

	}

	/**
	 * The stock service.
	 */
	public static class Stock {

		/**
		 * Pause between reading the stock and writing the purchase, standing in for real work such as a
		 * payment authorisation. It widens the race window that the lock closes.
		 */
		private Duration thinkTime = Duration.ofMillis(5);

		public Duration getThinkTime() {
			return this.thinkTime;
		}

		public void setThinkTime(Duration thinkTime) {
			this.thinkTime = thinkTime;
		}

	}

	/**
	 * The flash-sale demonstration that runs at start-up.
	 */
	public static class Demo {

		/**
		 * Whether to run the flash-sale demonstration at start-up.
		 */
		private boolean enabled = true;

		/**
		 * The product that is put on sale; its stock and purchases are reset before each run.
		 */
		private String sku = "demo-sku";

		/**
		 * Units in stock when the sale starts.
		 */
		private int stock = 50;

		/**
		 * Number of buyers; each tries to buy one unit.
		 */
		private int buyers = 200;

		/**
		 * Number of threads the buyers share.
		 */
		private int threads = 16;

		/**
		 * Whether to shut the application down once the demonstration has printed its results.
		 */
		private boolean exitAfter;

		public boolean isEnabled() {
			return this.enabled;
		}

		public void setEnabled(boolean enabled) {
			this.enabled = enabled;
		}

		public String getSku() {
			return this.sku;
		}

		public void setSku(String sku) {
			this.sku = sku;
		}

		public int getStock() {
			return this.stock;
		}

		public void setStock(int stock) {
			this.stock = stock;
		}

		public int getBuyers() {
			return this.buyers;
		}

		public void setBuyers(int buyers) {
			this.buyers = buyers;
		}

		public int getThreads() {
			return this.threads;
		}

		public void setThreads(int threads) {
			this.threads = threads;
		}

		public boolean isExitAfter() {
			return this.exitAfter;
		}

		public void setExitAfter(boolean exitAfter) {
			this.exitAfter = exitAfter;
		}

	}

	/**
	 * The scheduled daily-sales report.
	 */
	public static class Report {

		/**
		 * Whether to run the report on a schedule.
		 */
		private boolean enabled = true;

		/**
		 * When to run the report, as a Spring cron expression (second minute hour day month weekday), on the
		 * same wall-clock ticks on every instance.
		 */
		private String cron = "*/10 * * * * *";

		/**
		 * How long one report takes, simulated; while it runs, other instances skip theirs.
		 */
		private Duration workTime = Duration.ofSeconds(2);

		public boolean isEnabled() {
			return this.enabled;
		}

		public void setEnabled(boolean enabled) {
			this.enabled = enabled;
		}

		public String getCron() {
			return this.cron;
		}

		public void setCron(String cron) {
			this.cron = cron;
		}

		public Duration getWorkTime() {
			return this.workTime;
		}

		public void setWorkTime(Duration workTime) {
			this.workTime = workTime;
		}

	}

}
