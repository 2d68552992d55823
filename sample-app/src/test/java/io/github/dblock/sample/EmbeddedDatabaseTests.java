package io.github.dblock.sample;

import java.io.IOException;
import java.net.Socket;

import io.github.dblock.LockTemplate;
import io.github.dblock.sample.embedded.EmbeddedMariaDb;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * The sample as a newcomer runs it, with no database configured: it must start its own embedded MariaDB, run
 * the demo on it, and stop it on shutdown.
 */
class EmbeddedDatabaseTests {

	@Test
	void startsOnItsOwnEmbeddedDatabaseWhenNoUrlIsConfigured() {
		int port;
		try (ConfigurableApplicationContext context = new SpringApplicationBuilder(SampleApplication.class)
			.run("--server.port=0", "--sample.report.enabled=false", "--sample.demo.stock=5", "--sample.demo.buyers=20",
					"--sample.demo.threads=4")) {
			assertThat(context.getEnvironment().getProperty("spring.datasource.url"))
				.as("this test needs spring.datasource.url to be unset (also SPRING_DATASOURCE_URL)")
				.isNull();
			EmbeddedMariaDb db = context.getBean(EmbeddedMariaDb.class);
			port = db.getPort();
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			assertThat(jdbc.queryForObject("SELECT 1", Integer.class)).isEqualTo(1);
			assertThat(jdbc.queryForObject("SELECT DATABASE()", String.class)).isEqualTo("sample");
			assertThat(jdbc.queryForObject("SELECT VERSION()", String.class)).containsIgnoringCase("mariadb");
			// the demo ran at start-up and left its product behind
			assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM stock WHERE sku = 'demo-sku'", Integer.class))
				.isEqualTo(1);
			try (var lock = context.getBean(LockTemplate.class).acquire("embedded-db-test")) {
				assertThat(lock.fencingToken()).isPositive();
			}
		}
		assertThatExceptionOfType(IOException.class).as("the embedded database is stopped with the application")
			.isThrownBy(() -> new Socket("127.0.0.1", port).close());
	}

}
