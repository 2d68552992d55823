package com.example.shop;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.github.dblock.LockHandle;
import io.github.dblock.LockTemplate;
import io.github.dblock.test.TestDatabase;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The README's quick start is this package: its four Java classes must appear verbatim in the README (tabs shown as
 * four spaces), and the application they make must start on a real database and lock as the README says, with the
 * README's Actuator exposure line. Runs on the shared test database ({@link TestDatabase}), never skipped.
 */
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class ReadmeQuickStartTests {

	private static final List<String> CLASSES = List.of("ShopApplication.java", "StockService.java",
			"InvoiceExportJob.java", "CacheRefresher.java");

	private static final String EXPOSURE = "management.endpoints.web.exposure.include=health,locks";

	@Test
	void theReadmeShowsExactlyTheseClasses() throws Exception {
		List<String> blocks = javaBlocks(Files.readString(Path.of("..", "README.md"), StandardCharsets.UTF_8));
		for (String name : CLASSES) {
			String source = Files.readString(Path.of("src/test/java/com/example/shop", name), StandardCharsets.UTF_8)
				.replace("\t", "    ")
				.strip();
			assertThat(blocks).as("a java block of the README equal to %s", name).contains(source);
		}
	}

	@Test
	void theReadmeShowsTheActuatorExposureLine() throws Exception {
		String readme = Files.readString(Path.of("..", "README.md"), StandardCharsets.UTF_8);
		assertThat(readme).contains("""
				management:
				  endpoints:
				    web:
				      exposure:
				        include: health,locks""");
	}

	@Test
	void theQuickStartApplicationStartsAndLocks() {
		TestDatabase database = TestDatabase.get();
		database.execute("CREATE TABLE IF NOT EXISTS stock (sku VARCHAR(64) NOT NULL, available INT NOT NULL, "
				+ "sold INT NOT NULL DEFAULT 0, PRIMARY KEY (sku)) ENGINE = InnoDB");
		String sku = "readme-" + UUID.randomUUID();
		database.execute("INSERT INTO stock (sku, available) VALUES ('" + sku + "', 3)");
		List<String> arguments = new ArrayList<>();
		for (String property : database.springProperties()) {
			arguments.add("--" + property);
		}
		// not the sample's own application.yml, which is on this class path too
		arguments.add("--spring.config.name=readme-quick-start");
		arguments.add("--server.port=0");
		arguments.add("--distributed-lock.wait-time=5s");
		arguments.add("--distributed-lock.lease-time=30s");
		arguments.add("--" + EXPOSURE);
		try (ConfigurableApplicationContext context = new SpringApplicationBuilder(ShopApplication.class)
			.run(arguments.toArray(String[]::new))) {
			StockService stock = context.getBean(StockService.class);
			assertThat(stock.deduct(sku, 2)).isTrue();
			assertThat(stock.deduct(sku, 2)).isFalse();
			assertThat(context.getBean(JdbcTemplate.class)
				.queryForObject("SELECT available FROM stock WHERE sku = ?", Integer.class, sku)).isEqualTo(1);

			CacheRefresher refresher = context.getBean(CacheRefresher.class);
			LockTemplate locks = context.getBean(LockTemplate.class);
			assertThat(refresher.refreshIfIdle()).isTrue();
			try (LockHandle busy = locks.acquire("cache-refresh")) {
				// another thread (standing in for another instance) finds it busy
				assertThat(java.util.concurrent.CompletableFuture.supplyAsync(refresher::refreshIfIdle).join()).isFalse();
			}

			InvoiceExportJob job = context.getBean(InvoiceExportJob.class);
			job.exportInvoices(); // runs, or skips if another run of this test holds its minimum hold time
			job.exportInvoices(); // within the minimum hold time of a minute: skipped
			MeterRegistry meters = context.getBean(MeterRegistry.class);
			assertThat(meters.get("distributed.lock.acquire").tag("outcome", "skipped").timer().count())
				.isGreaterThanOrEqualTo(1);
			assertThat(meters.get("distributed.lock.acquire").tag("outcome", "timed_out").timer().count())
				.as("only the refresher's tryAcquire of a busy lock; the job's skips are not time-outs")
				.isEqualTo(1);
			assertThat(context.getEnvironment().getProperty("management.endpoints.web.exposure.include"))
				.isEqualTo("health,locks");
		}
		finally {
			database.execute("DELETE FROM stock WHERE sku = '" + sku + "'");
		}
	}

	private static List<String> javaBlocks(String markdown) {
		List<String> blocks = new ArrayList<>();
		Matcher m = Pattern.compile("```java\\n(.*?)\\n```", Pattern.DOTALL).matcher(markdown);
		while (m.find()) {
			blocks.add(m.group(1).strip());
		}
		return blocks;
	}

}
