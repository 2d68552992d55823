package io.github.dblock.jdbc.sql;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link InsertIds#generatedKey} reads Connector/J's insert id without a result set; it must return exactly
 * what {@code getGeneratedKeys()} returns for the same executed statement, through the pool's proxies, in every case
 * the lock statements meet: a value set with {@code LAST_INSERT_ID(expr)} on a changed row, no value, an upsert that
 * updated, and a value set on a statement that changed no row (where the driver returns no key).
 */
class GeneratedKeyTests {

	private HikariDataSource pool;

	@BeforeEach
	void setUp() {
		this.pool = TestDatabase.get().newDataSource(2);
		TestDatabase.get().execute("DROP TABLE IF EXISTS generated_key_test",
				"CREATE TABLE generated_key_test (id INT PRIMARY KEY, v BIGINT NOT NULL)",
				"INSERT INTO generated_key_test VALUES (1, 10), (2, 20)");
	}

	@AfterEach
	void tearDown() {
		TestDatabase.get().execute("DROP TABLE IF EXISTS generated_key_test");
		this.pool.close();
	}

	@Test
	void aValueSetOnAChangedRowIsReadFromTheStatement() throws Exception {
		assertSameAsTheDriver("UPDATE generated_key_test SET v = LAST_INSERT_ID(v + 1) WHERE id = 1", 11, 11);
	}

	@Test
	void noValueIsZero() throws Exception {
		assertSameAsTheDriver("UPDATE generated_key_test SET v = v + 1 WHERE id = 1", 0, 0);
		assertSameAsTheDriver("UPDATE generated_key_test SET v = LAST_INSERT_ID(v + 1) WHERE id = 99", 0, 0);
	}

	@Test
	void anUpsertThatUpdatedReturnsItsValue() throws Exception {
		assertSameAsTheDriver("INSERT INTO generated_key_test (id, v) VALUES (2, 0) ON DUPLICATE KEY UPDATE"
				+ " v = LAST_INSERT_ID(v + 5)", 25, 25);
	}

	@Test
	void aValueSetByAStatementThatChangedNoRowIsNotAKey() throws Exception {
		// LAST_INSERT_ID(9) is evaluated on the matched row, whose other condition then fails: the OK packet carries
		// 9, but no row changed, so the driver returns no generated key, and neither may the fast path
		assertSameAsTheDriver("UPDATE generated_key_test SET v = 0 WHERE id = 1 AND LAST_INSERT_ID(9) = 9 AND v = -1",
				9, 0);
	}

	/**
	 * Runs the statement and checks Connector/J's raw insert id, the value {@code getGeneratedKeys()} gives and that
	 * {@link InsertIds#generatedKey} gives the same.
	 */
	private void assertSameAsTheDriver(String sql, long insertId, long key) throws Exception {
		try (Connection connection = this.pool.getConnection();
				PreparedStatement ps = connection.prepareStatement(sql, Statement.RETURN_GENERATED_KEYS)) {
			ps.executeUpdate();
			assertThat(InsertIds.ConnectorJ.lastInsertId(ps)).as("Connector/J's insert id").isEqualTo(insertId);
			long fromDriver;
			try (ResultSet keys = ps.getGeneratedKeys()) {
				fromDriver = keys.next() ? keys.getLong(1) : 0;
			}
			assertThat(fromDriver).as("getGeneratedKeys()").isEqualTo(key);
			assertThat(InsertIds.generatedKey(ps)).as("generatedKey").isEqualTo(key);
		}
	}

}
