package io.github.dblock.jdbc;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * {@link JdbcLockTemplateBuilder}: a {@link LockTemplate} from a plain {@code DataSource}, without Spring Boot, as the
 * README shows it, against the real test database.
 */
class JdbcLockTemplateBuilderTests {

	@Test
	void aTemplateBuiltFromADataSourceCreatesItsTablesAndExcludesAcrossTemplates() throws Exception {
		String table = "plain_" + UUID.randomUUID().toString().substring(0, 8);
		try (HikariDataSource pool = TestDatabase.get().newDataSource(6)) {
			LockTemplate first = JdbcLockTemplateBuilder.forDataSource(pool).tableName(table).nodeName("first").build();
			LockTemplate second = JdbcLockTemplateBuilder.forDataSource(pool).tableName(table).nodeName("second")
				.createSchema(false).build();
			ExecutorService executor = Executors.newSingleThreadExecutor();
			try (LockHandle held = first.acquire("order-42")) {
				Future<Boolean> other = executor.submit(() -> second.tryAcquire("order-42").isPresent());
				assertThat(other.get(10, TimeUnit.SECONDS)).as("the other template is shut out").isFalse();
				assertThat(held.mode()).isEqualTo(LockMode.LEASE);
			}
			finally {
				executor.shutdownNow();
			}
			for (LockMode mode : new LockMode[] { LockMode.LEASE, LockMode.PESSIMISTIC, LockMode.OPTIMISTIC }) {
				Long token = second.execute("order-42", LockOptions.defaults().withMode(mode), LockHandle::fencingToken);
				assertThat(token).as("%s works on the built template", mode).isPositive();
			}
			Integer rows = new JdbcTemplate(pool).queryForObject("SELECT COUNT(*) FROM " + table
					+ " WHERE resource = ?", Integer.class, "order-42".getBytes(java.nio.charset.StandardCharsets.UTF_8));
			assertThat(rows).isEqualTo(1);
		}
	}

	@Test
	void aBadTableNameIsRefusedBeforeAnyStatement() {
		try (HikariDataSource pool = TestDatabase.get().newDataSource(1)) {
			assertThatIllegalArgumentException()
				.isThrownBy(() -> JdbcLockTemplateBuilder.forDataSource(pool).tableName("locks; DROP TABLE x").build());
			assertThatIllegalArgumentException().isThrownBy(() -> JdbcLockTemplateBuilder.forDataSource(pool)
				.leaseTime(Duration.ofMillis(10)).build());
		}
	}

}
