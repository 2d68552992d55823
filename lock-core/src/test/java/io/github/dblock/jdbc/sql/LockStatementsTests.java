package io.github.dblock.jdbc.sql;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The statements of both dialects, without a database: the same text everywhere except how a statement is bounded.
 */
class LockStatementsTests {

	private static final LockTable TABLE = LockTable.of("my_locks");

	@Test
	void theDialectsSendTheSameStatementsAndOnlyTheLockTableIsSpliced() throws Exception {
		LockStatements mariaDb = LockStatements.of(TABLE, LockDialect.MARIADB);
		LockStatements mySql = LockStatements.of(TABLE, LockDialect.MYSQL);
		int statements = 0;
		for (Field group : LockStatements.class.getDeclaredFields()) {
			if (Modifier.isStatic(group.getModifiers()) || !LockTableSql.class.isAssignableFrom(group.getType())) {
				continue;
			}
			statements += compareStrings(group.getType(), group.get(mariaDb), group.get(mySql));
		}
		statements += compareStrings(LockStatements.class, mariaDb, mySql);
		assertThat(statements).isGreaterThan(60);
		assertThat(mariaDb.dialect()).isEqualTo(LockDialect.MARIADB);
		assertThat(mySql.dialect()).isEqualTo(LockDialect.MYSQL);
		assertThat(LockStatements.of(TABLE, null).dialect()).isNull();
	}

	/** Compares the SQL text fields of two statement sets of one type; returns how many there were. */
	private static int compareStrings(Class<?> type, Object mariaDb, Object mySql) throws Exception {
		int statements = 0;
		for (Field field : type.getDeclaredFields()) {
			if (Modifier.isStatic(field.getModifiers()) || field.getType() != String.class) {
				continue;
			}
			String sql = (String) field.get(mariaDb);
			assertThat(sql).as(field.getName()).isEqualTo(field.get(mySql))
				.doesNotContain("{", "\n", "  ")
				.containsPattern("`my_locks(_rw|_rw_hold|_sem|_sem_hold|_idem)?`");
			statements++;
		}
		return statements;
	}

	@Test
	void cleanupStatementsGetOneParameterPerKey() {
		LockStatements sql = LockStatements.of(TABLE, null);
		assertThat(LockStatements.withKeys(sql.cleanup.lockCleanup.delete(), 3)).isEqualTo("DELETE `my_locks` FROM `my_locks`"
				+ " FORCE INDEX (PRIMARY) WHERE resource IN (?, ?, ?) AND expires_at < UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND"
				+ " AND fencing_token < TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) - ?");
	}

	@Test
	void theReplicaStatusFollowsTheServer() {
		assertThat(LockStatements.replicaStatus(DatabaseServer.parse("MariaDB", "10.11.6-MariaDB")))
			.isEqualTo("SHOW ALL SLAVES STATUS");
		assertThat(LockStatements.replicaStatus(DatabaseServer.parse("MySQL", "8.4.0"))).isEqualTo("SHOW REPLICA STATUS");
		assertThat(LockStatements.replicaStatus(DatabaseServer.parse("MySQL", "8.0.36"))).isEqualTo("SHOW SLAVE STATUS");
	}

	@Test
	void mariaDbBoundsAStatementWithTheSameTextAndBuildsItOncePerTimeout() {
		MariaDbStatements sql = (MariaDbStatements) LockStatements.of(TABLE, LockDialect.MARIADB);
		String statement = "UPDATE `my_locks` SET owner = ? WHERE resource = ?";
		String first = sql.bounded(statement, 5);
		assertThat(first).isEqualTo("SET STATEMENT max_statement_time=5 FOR " + statement);
		assertThat(sql.bounded(statement, 5)).isSameAs(first);
		assertThat(sql.bounded(statement, 6)).isEqualTo("SET STATEMENT max_statement_time=6 FOR " + statement);
		assertThat(sql.bounded(statement, 3600)).isEqualTo("SET STATEMENT max_statement_time=3600 FOR " + statement);
	}

}
