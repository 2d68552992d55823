package io.github.dblock.autoconfigure;

import io.github.dblock.jdbc.sql.LockTable;
import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * Reports a lock table migration the database refused for lack of a privilege
 * ({@link LockTableMigrationDeniedException}) as Spring Boot's failure report: who was refused what as the
 * description, the privileges to grant or the ways around them as the action. Registered in
 * {@code META-INF/spring.factories}. Stateless and thread-safe.
 */
public class LockTableMigrationDeniedFailureAnalyzer
		extends AbstractFailureAnalyzer<LockTableMigrationDeniedException> {

	@Override
	protected FailureAnalysis analyze(Throwable rootFailure, LockTableMigrationDeniedException cause) {
		String description = cause.getAccount() + " may not create the lock table '" + cause.getTable()
				+ "': the database refused its migration.\n\n    Server: " + cause.getDenial();
		return new FailureAnalysis(description, LockTableMigrationDeniedException.action(LockTable.of(cause.getTable())),
				cause);
	}

}
