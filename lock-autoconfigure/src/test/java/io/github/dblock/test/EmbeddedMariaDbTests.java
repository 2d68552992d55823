package io.github.dblock.test;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatException;

class EmbeddedMariaDbTests {

	@Test
	void aRestartedServerKeepsItsPortAndData() {
		EmbeddedMariaDb server = EmbeddedMariaDb.start("restart");
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(server.jdbcUrl());
		config.setUsername("root");
		config.setMinimumIdle(0);
		config.setConnectionTimeout(2_000);
		try (HikariDataSource ds = new HikariDataSource(config)) {
			JdbcTemplate jdbc = new JdbcTemplate(ds);
			jdbc.execute("CREATE TABLE kept (id INT PRIMARY KEY)");
			jdbc.update("INSERT INTO kept VALUES (42)");
			server.stop();
			assertThat(server.isRunning()).isFalse();
			assertThatException().isThrownBy(() -> jdbc.queryForObject("SELECT id FROM kept", Integer.class));
			server.restart();
			assertThat(jdbc.queryForObject("SELECT id FROM kept", Integer.class)).isEqualTo(42);
		}
		finally {
			server.stop();
		}
	}

}
