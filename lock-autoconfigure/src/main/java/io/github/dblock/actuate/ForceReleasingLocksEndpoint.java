package io.github.dblock.actuate;

import java.security.Principal;
import java.util.Objects;

import io.github.dblock.jdbc.admin.LockTableAdmin;

import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.annotation.DeleteOperation;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.Selector.Match;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;

/**
 * The {@code locks} endpoint with one more operation, {@code DELETE /actuator/locks/{resource}}: forces a lock free
 * whatever its owner (see {@link LockTableAdmin#forceRelease(String, String)}). The former holder's release and
 * renewal then fail with {@link io.github.dblock.LockLostException}, and its fencing token is below every later
 * one. Every forced release is logged at WARN with the requesting principal ({@code unknown} without Spring
 * Security).
 * <p>
 * Registered instead of {@link LocksEndpoint} only when {@code distributed-lock.endpoint.force-release.enabled=true};
 * {@code management.endpoint.locks.access=read-only} also disables the operation. Answers 200 with what changed (a
 * {@link LockTableAdmin.ForceRelease}),
 * 404 if the table has no row for the resource, 409 if a PESSIMISTIC holder's open transaction kept the row locked
 * for the statement timeout.
 */
@Endpoint(id = LocksEndpoint.ID)
public class ForceReleasingLocksEndpoint extends LocksEndpoint {

	/** HTTP status for a row that stayed locked by another transaction. */
	static final int STATUS_CONFLICT = 409;

	public ForceReleasingLocksEndpoint(LockTableAdmin admin) {
		super(admin);
	}

	/**
	 * @param admin reads and changes the lock table
	 * @param locks the locks this node holds, from {@link io.github.dblock.LockTemplate#introspection()}; may be
	 * {@code null}
	 */
	public ForceReleasingLocksEndpoint(LockTableAdmin admin,
			io.github.dblock.@org.jspecify.annotations.Nullable LockIntrospection locks) {
		super(admin, locks);
	}

	/** Forces the lock on a resource free. */
	@DeleteOperation
	public WebEndpointResponse<Object> forceRelease(SecurityContext securityContext,
			@Selector(match = Match.ALL_REMAINING) String... resource) {
		String name = resourceName(resource);
		try {
			return admin().forceRelease(name, requester(securityContext))
				.map((released) -> new WebEndpointResponse<Object>(released))
				.orElseGet(() -> new WebEndpointResponse<>(WebEndpointResponse.STATUS_NOT_FOUND));
		}
		catch (IllegalStateException ex) {
			return new WebEndpointResponse<>(new Failure(name, Objects.requireNonNullElse(ex.getMessage(), ex.toString())),
					STATUS_CONFLICT);
		}
	}

	private static String requester(SecurityContext securityContext) {
		Principal principal = (securityContext != null) ? securityContext.getPrincipal() : null;
		return (principal != null && principal.getName() != null) ? "'" + principal.getName() + "'" : "unknown";
	}

	/**
	 * A forced release that did not happen.
	 * @param resource the lock name
	 * @param error why
	 */
	public record Failure(String resource, String error) {
	}

}
