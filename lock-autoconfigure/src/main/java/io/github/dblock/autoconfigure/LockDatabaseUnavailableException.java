package io.github.dblock.autoconfigure;

import org.jspecify.annotations.Nullable;
import org.springframework.dao.DataAccessResourceFailureException;

/**
 * Thrown at start-up when the lock database cannot be reached or refuses the connection: the lock database is a
 * start-up dependency, because the starter checks the server, its topology and the lock table before the
 * application starts. Names the data source's URL when it can be read from the data source's configuration;
 * {@link LockDatabaseUnavailableFailureAnalyzer} turns it into a start-up report with the root cause and what to do.
 */
public class LockDatabaseUnavailableException extends DataAccessResourceFailureException {

	private static final long serialVersionUID = 1L;

	private final @Nullable String url;

	/**
	 * @param url the lock data source's JDBC URL, or {@code null} if it could not be read
	 * @param cause the failure to connect (or to ask the server for its version)
	 */
	public LockDatabaseUnavailableException(@Nullable String url, Throwable cause) {
		super("Could not connect to the lock database at " + ((url != null) ? url : "(URL unknown)") + ": "
				+ cause.getMessage(), cause);
		this.url = url;
	}

	/** The lock data source's JDBC URL, or {@code null} if it could not be read from its configuration. */
	public @Nullable String getUrl() {
		return this.url;
	}

}
