package io.github.dblock.jdbc.pessimistic;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.RepeatedTest;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A PESSIMISTIC {@code execute} whose pooled connection was killed while it sat idle in the pool (as a server restart
 * or a failover does): the row check before the transaction fails on a broken connection, which HikariCP then closes.
 * The call must take that as a lost connection and try again within its wait time, not fail with the pool's
 * "Connection is closed" raised while cleaning up.
 */
class PessimisticConnectionLossTests {

	private HikariDataSource dataSource;

	private LockTemplate node;

	@BeforeEach
	void node() {
		this.dataSource = TestDatabase.get().newDataSource(1);
		LockNodes.migrateOnce(this.dataSource);
		this.node = LockNodes.node(LockMode.PESSIMISTIC, "node-a", this.dataSource);
	}

	@AfterEach
	void close() {
		this.dataSource.close();
	}

	@RepeatedTest(3)
	void anExecuteWhoseIdleConnectionWasKilledRunsItsActionOnceOnAFreshConnection() throws Exception {
		long connectionId;
		try (Connection connection = this.dataSource.getConnection(); Statement statement = connection.createStatement();
				ResultSet rs = statement.executeQuery("SELECT CONNECTION_ID()")) {
			rs.next();
			connectionId = rs.getLong(1);
		}
		// HikariCP hands out a connection used within the last 500 ms without testing it: the call gets the dead one
		TestDatabase.get().execute("KILL CONNECTION " + connectionId);
		AtomicInteger runs = new AtomicInteger();

		String result = this.node.execute("connection-loss-" + UUID.randomUUID(),
				LockOptions.defaults().withWaitTime(Duration.ofSeconds(10)), (lock) -> {
					runs.incrementAndGet();
					return "done";
				});

		assertThat(result).isEqualTo("done");
		assertThat(runs).hasValue(1);
	}

}
