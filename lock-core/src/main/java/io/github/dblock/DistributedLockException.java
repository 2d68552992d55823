package io.github.dblock;

import org.jspecify.annotations.Nullable;

/**
 * Base class of the lock library's own exceptions. Database failures are not wrapped: they surface as Spring
 * {@link org.springframework.dao.DataAccessException}s.
 */
public abstract class DistributedLockException extends RuntimeException {

	private final String resource;

	protected DistributedLockException(String resource, String message, @Nullable Throwable cause) {
		super(message, cause);
		this.resource = resource;
	}

	/** The resource name the failure concerns. */
	public String getResource() {
		return this.resource;
	}

}
