package io.github.dblock.jdbc.sql;

import java.sql.SQLException;
import java.sql.SQLTimeoutException;
import java.sql.SQLTransactionRollbackException;

import org.junit.jupiter.api.Test;
import org.springframework.dao.CannotAcquireLockException;
import org.springframework.jdbc.CannotGetJdbcConnectionException;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The one classification of SQL errors, without a database.
 */
class SqlErrorsTests {

	@Test
	void eachCodeHasOneKind() {
		assertThat(SqlErrors.classify(new SQLException("wait", "HY000", 1205))).isEqualTo(SqlErrors.Kind.LOCK_WAIT_TIMEOUT);
		assertThat(SqlErrors.classify(new SQLTimeoutException("cancelled"))).isEqualTo(SqlErrors.Kind.STATEMENT_TIMEOUT);
		assertThat(SqlErrors.classify(new SQLException("max_statement_time", "70100", 1969)))
			.isEqualTo(SqlErrors.Kind.STATEMENT_TIMEOUT);
		assertThat(SqlErrors.classify(new SQLException("max_execution_time", "HY000", 3024)))
			.isEqualTo(SqlErrors.Kind.STATEMENT_TIMEOUT);
		assertThat(SqlErrors.classify(new SQLException("deadlock", "40001", 1213))).isEqualTo(SqlErrors.Kind.DEADLOCK);
		assertThat(SqlErrors.classify(new SQLTransactionRollbackException("certification", "40001", 0)))
			.isEqualTo(SqlErrors.Kind.DEADLOCK);
		assertThat(SqlErrors.classify(new SQLException("Record has changed since last read", "HY000", 1020)))
			.isEqualTo(SqlErrors.Kind.SNAPSHOT_CONFLICT);
		assertThat(SqlErrors.classify(new SQLException("dup", "23000", 1062))).isEqualTo(SqlErrors.Kind.DUPLICATE_KEY);
		assertThat(SqlErrors.classify(new SQLException("no table", "42S02", 1146))).isEqualTo(SqlErrors.Kind.NO_TABLE);
		assertThat(SqlErrors.classify(new SQLException("denied", "42000", 1142))).isEqualTo(SqlErrors.Kind.NO_TABLE);
		assertThat(SqlErrors.classify(new SQLException("gone", "08S01", 0))).isEqualTo(SqlErrors.Kind.CONNECTION_FAILURE);
		assertThat(SqlErrors.classify(new SQLException("syntax", "42000", 1064))).isEqualTo(SqlErrors.Kind.OTHER);
	}

	@Test
	void aTimedOutStatementIsAStatementTimeoutWhateverItsCode() {
		// the outcome of a statement ended by its time bound may be unknown: that wins over the code
		assertThat(SqlErrors.classify(new SQLTimeoutException("cancelled", "HY000", 1205)))
			.isEqualTo(SqlErrors.Kind.STATEMENT_TIMEOUT);
		assertThat(SqlErrors.isBusy(new SQLTimeoutException("cancelled", "HY000", 1205))).isTrue();
		assertThat(SqlErrors.isLockWaitTimeout(new SQLTimeoutException("cancelled", "HY000", 1205))).isTrue();
	}

	@Test
	void busyIsALockWaitTimeoutOrAStatementTimeout() {
		assertThat(SqlErrors.isBusy(new SQLException("wait", "HY000", 1205))).isTrue();
		assertThat(SqlErrors.isBusy(new SQLException("max_statement_time", "70100", 1969))).isTrue();
		assertThat(SqlErrors.isBusy(new SQLTimeoutException("cancelled"))).isTrue();
		assertThat(SqlErrors.isBusy(new SQLException("deadlock", "40001", 1213))).isFalse();
		assertThat(SqlErrors.isStatementTimeout(new SQLException("wait", "HY000", 1205))).isFalse();
	}

	@Test
	void questionsOverTheCauseChain() {
		CannotAcquireLockException wrappedWait = new CannotAcquireLockException("x",
				new SQLException("wait", "HY000", 1205));
		assertThat(SqlErrors.isTransient(wrappedWait)).isTrue();
		assertThat(SqlErrors.isRolledBackConflict(wrappedWait)).isFalse();
		assertThat(SqlErrors.isTooSlow(wrappedWait)).isTrue();
		CannotAcquireLockException wrappedDeadlock = new CannotAcquireLockException("x",
				new SQLException("deadlock", "40001", 1213));
		assertThat(SqlErrors.isTransient(wrappedDeadlock)).isTrue();
		assertThat(SqlErrors.isRolledBackConflict(wrappedDeadlock)).isTrue();
		assertThat(SqlErrors.isTooSlow(wrappedDeadlock)).isFalse();
		// MariaDB's snapshot isolation rolled the whole transaction back: like a deadlock, run it again
		org.springframework.jdbc.UncategorizedSQLException wrappedSnapshotConflict = new org.springframework.jdbc.UncategorizedSQLException(
				"x", null, new SQLException("Record has changed since last read", "HY000", 1020));
		assertThat(SqlErrors.isTransient(wrappedSnapshotConflict)).isTrue();
		assertThat(SqlErrors.isRolledBackConflict(wrappedSnapshotConflict)).isTrue();
		assertThat(SqlErrors.isTooSlow(wrappedSnapshotConflict)).isFalse();
		assertThat(SqlErrors.isBusy(new SQLException("Record has changed since last read", "HY000", 1020))).isFalse();
		CannotGetJdbcConnectionException refused = new CannotGetJdbcConnectionException("x",
				new SQLException("refused", "08001", 0, new java.net.ConnectException()));
		assertThat(SqlErrors.isConnectionFailure(refused)).isTrue();
		assertThat(SqlErrors.isUnreachable(refused)).isTrue();
		assertThat(SqlErrors.isTooSlow(new CannotGetJdbcConnectionException("x",
				new java.sql.SQLTransientConnectionException("pool timed out")))).isTrue();
		assertThat(SqlErrors.isMissingTable(new SQLException("no table", "42S02", 1146), false)).isTrue();
		assertThat(SqlErrors.isMissingTable(new SQLException("denied", "42000", 1142), false)).isFalse();
		assertThat(SqlErrors.isMissingTable(new SQLException("denied", "42000", 1142), true)).isTrue();
	}

}
