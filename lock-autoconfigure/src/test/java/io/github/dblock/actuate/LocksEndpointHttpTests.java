package io.github.dblock.actuate;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.UUID;

import io.github.dblock.LockHandle;
import io.github.dblock.LockTemplate;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The {@code locks} endpoint and the lock-table health over real HTTP, in a minimal web application with the
 * starter's auto-configuration on the real test database.
 */
class LocksEndpointHttpTests {

	private final HttpClient http = HttpClient.newHttpClient();

	private final String table = "lock_h_" + UUID.randomUUID().toString().replace("-", "").substring(0, 10);

	@AfterEach
	void dropTable() {
		try (var pool = TestDatabase.get().newDataSource(1)) {
			String t = this.table;
			new JdbcTemplate(pool).execute("DROP TABLE IF EXISTS `" + t + "`, `" + t + "_schema_history`, `" + t + "_rw`, `"
					+ t + "_rw_hold`, `" + t + "_sem`, `" + t + "_sem_hold`, `" + t + "_idem`");
		}
	}

	@Test
	void locksAndHealthOverHttpWithoutForceRelease() throws Exception {
		try (ConfigurableApplicationContext context = start(false)) {
			String base = "http://localhost:" + context.getEnvironment().getProperty("local.server.port") + "/actuator";
			String resource = "actuator-http-" + UUID.randomUUID();
			try (LockHandle lock = context.getBean(LockTemplate.class).acquire(resource + "/part")) {
				HttpResponse<String> locks = get(base + "/locks");
				assertThat(locks.statusCode()).isEqualTo(200);
				JsonNode body = JsonMapper.shared().readTree(locks.body());
				assertThat(body.get("table").asString()).isEqualTo(this.table);
				assertThat(body.get("truncated").asBoolean()).isFalse();
				assertThat(body.get("serverTime").asString()).endsWith("Z");
				JsonNode row = body.get("locks").get(0);
				assertThat(row.get("resource").asString()).isEqualTo(resource + "/part");
				assertThat(row.get("holder").asString()).startsWith("node-http [");
				assertThat(row.get("fencingToken").asLong()).isBetween(lock.fencingToken(), lock.fencingToken() + 1023);

				HttpResponse<String> one = get(base + "/locks/" + resource + "/part");
				assertThat(one.statusCode()).isEqualTo(200);
				assertThat(JsonMapper.shared().readTree(one.body()).get("held").asBoolean()).isTrue();
				assertThat(get(base + "/locks/actuator-unknown-" + UUID.randomUUID()).statusCode()).isEqualTo(404);

				HttpResponse<String> delete = send(HttpRequest.newBuilder(URI.create(base + "/locks/" + resource + "/part"))
					.DELETE()
					.build());
				assertThat(delete.statusCode()).as("force-release is not offered by default").isIn(404, 405);
				assertThat(lock.isHeld()).isTrue();
			}

			HttpResponse<String> health = get(base + "/health");
			assertThat(health.statusCode()).isEqualTo(200);
			JsonNode lockHealth = JsonMapper.shared().readTree(health.body()).get("components").get("distributedLock");
			assertThat(lockHealth.get("status").asString()).isEqualTo("UP");
			assertThat(lockHealth.get("details").get("table").asString()).isEqualTo(this.table);
		}
	}

	@Test
	void forceReleaseOverHttpWhenEnabled() throws Exception {
		try (ConfigurableApplicationContext context = start(true)) {
			String base = "http://localhost:" + context.getEnvironment().getProperty("local.server.port") + "/actuator";
			String resource = "actuator-http-force-" + UUID.randomUUID();
			LockHandle stale = context.getBean(LockTemplate.class).acquire(resource);
			HttpResponse<String> delete = send(
					HttpRequest.newBuilder(URI.create(base + "/locks/" + resource)).DELETE().build());
			assertThat(delete.statusCode()).isEqualTo(200);
			JsonNode body = JsonMapper.shared().readTree(delete.body());
			assertThat(body.get("wasHeld").asBoolean()).isTrue();
			assertThat(body.get("previousFencingToken").asLong()).isBetween(stale.fencingToken(), stale.fencingToken() + 1023);
			assertThat(body.get("fencingToken").asLong()).isGreaterThan(stale.fencingToken());
			assertThat(JsonMapper.shared().readTree(get(base + "/locks").body()).get("count").asInt()).isZero();
		}
	}

	private ConfigurableApplicationContext start(boolean forceRelease) {
		return new SpringApplicationBuilder(App.class).web(WebApplicationType.SERVLET)
			.properties(TestDatabase.get().springProperties())
			.properties("server.port=0", "spring.main.banner-mode=off", "distributed-lock.table-name=" + this.table,
					"distributed-lock.node-name=node-http", "distributed-lock.cleanup.enabled=false",
					"distributed-lock.endpoint.force-release.enabled=" + forceRelease,
					"management.endpoints.web.exposure.include=locks,health",
					"management.endpoint.health.show-details=always")
			.run();
	}

	private HttpResponse<String> get(String uri) throws Exception {
		return send(HttpRequest.newBuilder(URI.create(uri)).GET().build());
	}

	private HttpResponse<String> send(HttpRequest request) throws Exception {
		return this.http.send(request, HttpResponse.BodyHandlers.ofString());
	}

	@Configuration(proxyBeanMethods = false)
	@EnableAutoConfiguration
	static class App {

	}

}
