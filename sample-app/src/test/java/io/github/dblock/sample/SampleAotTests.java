package io.github.dblock.sample;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import io.github.dblock.sample.demo.FlashSaleDemo;
import io.github.dblock.sample.demo.FlashSaleDemo.SaleResult;
import io.github.dblock.sample.embedded.EmbeddedMariaDb;
import io.github.dblock.sample.stock.StockService;
import org.junit.jupiter.api.Test;
import org.springframework.aot.AotDetector;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.AnnotationConfigUtils;
import org.springframework.util.ClassUtils;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The sample after Spring AOT processing ({@code process-aot} in the {@code aot} profile of sample-app's pom), started
 * from the generated code with {@code -Dspring.aot.enabled=true} on its own embedded MariaDB, as
 * {@code java -Dspring.aot.enabled=true -jar} would start it: it sells its flash sale without overselling, through the
 * service and over HTTP, and the native-image hints of the lock library are among those generated. Runs only in the
 * {@code aot} profile ({@code .ci/run} runs it); elsewhere it fails rather than pass without AOT.
 */
class SampleAotTests {

	private static final String GENERATED_INITIALIZER = SampleApplication.class.getName()
			+ "__ApplicationContextInitializer";

	@Test
	void theAotProcessedSampleStartsOnItsEmbeddedDatabaseAndSellsItsFlashSaleWithoutOverselling() throws Exception {
		assertThat(AotDetector.useGeneratedArtifacts()).as("-Dspring.aot.enabled=true (the aot profile)").isTrue();
		assertThat(ClassUtils.isPresent(GENERATED_INITIALIZER, getClass().getClassLoader()))
			.as("process-aot generated " + GENERATED_INITIALIZER).isTrue();
		// the demo runs at start-up as configured at build time; its size is a property, bound at run time
		SpringApplication application = new SpringApplication(SampleApplication.class);
		// the generated initializer is looked up by the main class's name, not the test runner's
		application.setMainApplicationClass(SampleApplication.class);
		try (ConfigurableApplicationContext context = application.run("--server.port=0", "--sample.demo.stock=10", "--sample.demo.buyers=30", "--sample.demo.threads=4",
				"--sample.demo.sku=aot-demo", "--sample.stock.think-time=2ms", "--spring.main.banner-mode=off")) {
			// started from the generated bean definitions: no configuration class was parsed at run time
			assertThat(context.containsBean(AnnotationConfigUtils.CONFIGURATION_ANNOTATION_PROCESSOR_BEAN_NAME)).isFalse();
			assertThat(context.getBeansOfType(EmbeddedMariaDb.class)).hasSize(1);

			String sku = "aot-" + UUID.randomUUID();
			SaleResult sale = context.getBean(FlashSaleDemo.class).run(sku, 20, 60, 8, true);
			assertThat(sale.bought()).isEqualTo(20);
			assertThat(sale.purchaseRows()).isEqualTo(20);
			assertThat(sale.remaining()).isZero();
			assertThat(sale.oversold()).isZero();
			assertThat(sale.rejected()).isEqualTo(40);
			assertThat(sale.failed()).isZero();

			int port = ((WebServerApplicationContext) context).getWebServer().getPort();
			sellOverHttp(context.getBean(StockService.class), "http://127.0.0.1:" + port);
		}
	}

	/** 30 buyers at once over HTTP for 10 units: exactly 10 get one, 20 are told it is sold out. */
	private static void sellOverHttp(StockService stock, String base) throws Exception {
		String sku = "aot-http-" + UUID.randomUUID();
		stock.reset(sku, 10);
		HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
		ExecutorService buyers = Executors.newFixedThreadPool(10);
		List<Future<Integer>> answers = new ArrayList<>();
		try {
			for (int i = 0; i < 30; i++) {
				URI purchase = URI.create(base + "/stock/" + sku + "/purchase?buyer=buyer-" + i);
				answers.add(buyers.submit(() -> http
					.send(HttpRequest.newBuilder(purchase).timeout(Duration.ofSeconds(60)).POST(
							HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.discarding())
					.statusCode()));
			}
			List<Integer> statuses = new ArrayList<>();
			for (Future<Integer> answer : answers) {
				statuses.add(answer.get());
			}
			assertThat(statuses).filteredOn((status) -> status == 200).hasSize(10);
			assertThat(statuses).filteredOn((status) -> status == 409).hasSize(20);
		}
		finally {
			buyers.shutdownNow();
		}
		String after = get(http, base + "/stock/" + sku);
		assertThat(after).contains("\"available\":0").contains("\"sold\":10");
		assertThat(stock.countPurchases(sku)).isEqualTo(10);
		String health = get(http, base + "/actuator/health");
		assertThat(health).endsWith(",\"status\":\"UP\"}")
			.containsPattern("\"distributedLock\":\\{\"details\":\\{[^}]*\"server\":\"MariaDB [^}]*\\},\"status\":\"UP\"\\}");
		assertThat(get(http, base + "/actuator/locks")).contains("\"table\":\"distributed_lock\"");
	}

	private static String get(HttpClient http, String uri) throws IOException, InterruptedException {
		HttpResponse<String> response = http.send(HttpRequest.newBuilder(URI.create(uri)).GET().build(),
				HttpResponse.BodyHandlers.ofString());
		assertThat(response.statusCode()).as(uri).isEqualTo(200);
		return response.body();
	}

	@Test
	void theLockLibrarysNativeImageHintsAreAmongTheGeneratedOnes() throws IOException {
		String metadata;
		try (InputStream in = getClass().getResourceAsStream(
				"/META-INF/native-image/io.github.dblock/sample-app/reachability-metadata.json")) {
			assertThat(in).as("process-aot's reachability metadata").isNotNull();
			metadata = new String(in.readAllBytes(), StandardCharsets.UTF_8).replace("\\/", "/"); // JSON's escaped /
		}
		// the lock tables' migrations, read by Flyway from the class path
		assertThat(metadata).contains("io/github/dblock/db/migration/*.sql");
		// the SpEL root object, and the sample's locked methods (their parameters' names are #sku in the resources)
		assertThat(metadata).contains("io.github.dblock.interceptor.LockExpressionRootObject")
			.containsPattern("\"type\": \"io.github.dblock.sample.stock.StockService\",[^}]*\"methods\": \\[\\s*\\{\\s*"
					+ "\"name\": \"purchase\"");
		// the synthesized @DistributedLock proxies
		assertThat(metadata).contains("io.github.dblock.DistributedLock");
	}

}
