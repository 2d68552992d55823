package io.github.dblock.autoconfigure;

import org.jspecify.annotations.Nullable;

/**
 * The library's own Flyway migrations of the lock table, under {@code distributed-lock.flyway.*}.
 * <p>
 * A group of {@link DistributedLockProperties}; not thread-safe (bound once at start-up, then only read).
 */
public class DistributedLockFlywayProperties {

	/**
	 * Whether to create and upgrade the lock table with the library's own Flyway migrations. When false,
	 * start-up only checks that the table exists with the expected columns.
	 */
	private boolean enabled = true;

	/**
	 * JDBC URL of the database to migrate, when the migration runs with its own credentials. Defaults to the lock
	 * DataSource's URL (from its connection metadata); needs user.
	 */
	@Nullable
	private String url;

	/**
	 * Login user of the database to migrate: a DDL-capable account for the migration only, so that the lock
	 * DataSource's user needs just SELECT, INSERT, UPDATE and DELETE on the lock table. Unset: the migration runs
	 * on the lock DataSource.
	 */
	@Nullable
	private String user;

	/**
	 * Login password of the database to migrate; needs user.
	 */
	@Nullable
	private String password;

	public boolean isEnabled() {
		return this.enabled;
	}

	public void setEnabled(boolean enabled) {
		this.enabled = enabled;
	}

	@Nullable
	public String getUrl() {
		return this.url;
	}

	public void setUrl(@Nullable String url) {
		this.url = (url != null && !url.isBlank()) ? url.trim() : null;
	}

	@Nullable
	public String getUser() {
		return this.user;
	}

	public void setUser(@Nullable String user) {
		this.user = (user != null && !user.isBlank()) ? user.trim() : null;
	}

	@Nullable
	public String getPassword() {
		return this.password;
	}

	public void setPassword(@Nullable String password) {
		this.password = password;
	}

}
