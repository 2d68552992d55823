package io.github.dblock.sample;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import io.github.dblock.LockMode;
import io.github.dblock.LockType;
import io.github.dblock.sample.demo.FlashSaleDemo;
import io.github.dblock.sample.demo.FlashSaleDemo.SaleResult;
import io.github.dblock.sample.stock.StockService;
import io.github.dblock.testing.LockFaults;
import io.github.dblock.testing.LockRecorder;
import io.github.dblock.testing.autoconfigure.AutoConfigureDistributedLocks;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.core.ParameterizedTypeReference;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.web.client.RestClient;

import static io.github.dblock.testing.LockAssertions.assertThat;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The flash-sale demonstration and the stock endpoints, on the shared test database, with the test kit
 * ({@link AutoConfigureDistributedLocks}): the recorder shows the locks each sale ran under.
 */
@SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT,
		properties = { "sample.demo.enabled=false", "sample.report.enabled=false", "sample.stock.think-time=2ms",
				"sample.demo.sku=demo-sku-tests", "sample.demo.stock=10", "sample.demo.buyers=30",
				"sample.demo.threads=4" })
@AutoConfigureDistributedLocks
class FlashSaleDemoTests {

	@DynamicPropertySource
	static void database(DynamicPropertyRegistry registry) {
		SampleTestSupport.registerTestDatabase(registry);
	}

	@Autowired
	private FlashSaleDemo demo;

	@Autowired
	private StockService stockService;

	@Autowired
	private JdbcTemplate jdbc;

	@Autowired
	private LockRecorder locks;

	@Autowired
	private LockFaults faults;

	@Value("${local.server.port}")
	private int port;

	private final List<String> skus = new ArrayList<>();

	@AfterEach
	void deleteTestRows() {
		// The test database may be shared (-Dlock.test.jdbc-url); leave nothing behind but the tables.
		for (String sku : this.skus) {
			this.jdbc.update("DELETE FROM purchase WHERE sku = ?", sku);
			this.jdbc.update("DELETE FROM stock WHERE sku = ?", sku);
		}
	}

	@Test
	void withTheLockExactlyTheStockIsSold() {
		String sku = uniqueSku();
		SaleResult result = this.demo.run(sku, 20, 60, 8, true);
		assertThat(result.purchaseRows()).isEqualTo(20);
		assertThat(result.bought()).isEqualTo(20);
		assertThat(result.remaining()).isZero();
		assertThat(result.oversold()).isZero();
		assertThat(result.stockSoldColumn()).isEqualTo(20);
		assertThat(result.rejected()).isEqualTo(40);
		assertThat(result.failed()).isZero();
		assertThat(this.stockService.countPurchases(sku)).isEqualTo(20);
		// every buyer, and the reset before them, ran under the product's lock, each with a token of its own
		assertThat(this.locks).hasAcquired("stock:" + sku, 61)
			.hasMode(LockMode.LEASE)
			.hasType(LockType.EXCLUSIVE)
			.isNoLongerHeld();
		assertThat(this.locks.acquisitions("stock:" + sku)).extracting((recorded) -> recorded.fencingToken().orElseThrow())
			.doesNotHaveDuplicates();
		assertThat(this.faults).isFree("stock:" + sku);
	}

	@Test
	void withoutTheLockTheRunCompletes() {
		// A race is not guaranteed to happen, so only what holds either way is checked: every buyer got an
		// answer, and every "bought" answer has its purchase row.
		String sku = uniqueSku();
		SaleResult result = this.demo.run(sku, 20, 60, 8, false);
		assertThat(result.bought() + result.rejected() + result.failed()).isEqualTo(60);
		assertThat(result.purchaseRows()).isEqualTo(result.bought());
		// "sold out" is only read once 20 buyers wrote the stock row (each writes what it read minus one); a buyer that
		// wrote it and then failed counts among them
		assertThat(result.bought() + result.failed()).isGreaterThanOrEqualTo(20);
		assertThat(this.locks).as("only the reset locks").hasAcquired("stock:" + sku, 1);
	}

	@Test
	void runDemoUsesTheConfiguredSettingsAndReportsBothRuns() {
		this.skus.add("demo-sku-tests");
		List<SaleResult> results = this.demo.runDemo();
		assertThat(results).extracting(SaleResult::locked).containsExactly(true, false);
		SaleResult locked = results.get(0);
		assertThat(locked.initialStock()).isEqualTo(10);
		assertThat(locked.buyers()).isEqualTo(30);
		assertThat(locked.purchaseRows()).isEqualTo(10);
		assertThat(locked.oversold()).isZero();
	}

	@Test
	void restEndpoints() {
		String sku = uniqueSku();
		this.stockService.reset(sku, 2);
		RestClient http = RestClient.create("http://localhost:" + this.port);
		ParameterizedTypeReference<Map<String, Object>> json = new ParameterizedTypeReference<>() {
		};

		ResponseEntity<Map<String, Object>> bought = http.post()
			.uri("/stock/{sku}/purchase?buyer=alice&quantity=2", sku)
			.retrieve()
			.toEntity(json);
		assertThat(bought.getStatusCode()).isEqualTo(HttpStatus.OK);
		assertThat(bought.getBody()).containsEntry("purchased", true).containsEntry("available", 0);

		ResponseEntity<Map<String, Object>> soldOut = http.post()
			.uri("/stock/{sku}/purchase?buyer=bob", sku)
			.retrieve()
			.onStatus((status) -> true, (request, response) -> {
			})
			.toEntity(json);
		assertThat(soldOut.getStatusCode()).isEqualTo(HttpStatus.CONFLICT);
		assertThat(soldOut.getBody()).containsEntry("purchased", false);

		Map<String, Object> stock = http.get().uri("/stock/{sku}", sku).retrieve().body(json);
		assertThat(stock).containsEntry("sku", sku).containsEntry("available", 0).containsEntry("sold", 2);

		ResponseEntity<String> unknown = http.get()
			.uri("/stock/{sku}", "no-such-sku-" + UUID.randomUUID())
			.retrieve()
			.onStatus((status) -> true, (request, response) -> {
			})
			.toEntity(String.class);
		assertThat(unknown.getStatusCode()).isEqualTo(HttpStatus.NOT_FOUND);
	}

	private String uniqueSku() {
		String sku = "test-" + UUID.randomUUID();
		this.skus.add(sku);
		return sku;
	}

}
