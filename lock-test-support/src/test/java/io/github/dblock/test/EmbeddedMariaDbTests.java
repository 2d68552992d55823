package io.github.dblock.test;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import ch.vorburger.exec.OutputStreamType;
import org.junit.jupiter.api.Test;
import org.slf4j.event.Level;
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

	@Test
	void aServerThatCannotStartIsRetriedOnAnotherPortAndTheErrorNamesEachAttemptsCause() {
		assertThatException().isThrownBy(() -> EmbeddedMariaDb.start(2, 10_000, "broken", "--no-such-option-at-all"))
			.isInstanceOf(IllegalStateException.class)
			.satisfies((ex) -> System.out.println("The failure reads: " + ex.getMessage()))
			.withMessageContaining("in 2 attempts, each on a new free port")
			.withMessageContaining("attempt 1 on port ")
			.withMessageContaining("attempt 2 on port ")
			.withMessageContaining("the server reported")
			.withMessageContaining("unknown option '--no-such-option-at-all'")
			.withMessageNotContaining("Is the port free");
	}

	@Test
	void theServersConsoleIsLoggedAtItsOwnLevels() {
		EmbeddedMariaDb.ServerLogLevels levels = new EmbeddedMariaDb.ServerLogLevels();
		assertThat(levels.dispatch(OutputStreamType.STDERR, "2026-11-24 11:17:07 12 [Warning] Aborted connection 12 to "
				+ "db: 'locktest' user: 'root' host: 'localhost' (Got an error reading communication packets)"))
			.isEqualTo(Level.DEBUG);
		assertThat(levels.dispatch(OutputStreamType.STDERR, "2026-11-24 11:17:06 0 [Warning] Could not increase number "
				+ "of max_open_files")).isEqualTo(Level.WARN);
		assertThat(levels.dispatch(OutputStreamType.STDERR, "2026-11-24 11:17:06 0 [Note] InnoDB: error log opened"))
			.isEqualTo(Level.INFO);
		assertThat(levels.dispatch(OutputStreamType.STDERR, "2026-11-24 11:17:06 0 [ERROR] Aborting"))
			.isEqualTo(Level.ERROR);
		assertThat(levels.dispatch(OutputStreamType.STDERR, "ERROR 2026 (HY000): TLS/SSL error")).isEqualTo(Level.ERROR);
	}

}
