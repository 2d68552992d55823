package io.github.dblock.actuate;

import java.time.Instant;
import java.util.List;
import java.util.Objects;

import io.github.dblock.LockIntrospection;
import io.github.dblock.LockIntrospection.LocalHold;
import io.github.dblock.LockTemplate;
import io.github.dblock.jdbc.admin.LockTableAdmin;
import io.github.dblock.jdbc.admin.LockTableAdmin.HeldLocks;
import io.github.dblock.jdbc.admin.LockTableAdmin.LockRow;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.Selector.Match;

/**
 * The {@code locks} Actuator endpoint: the distributed locks held now, as the lock table shows them.
 * <ul>
 * <li>{@code GET /actuator/locks}: the server's current time and the held locks (an owner and a lease ending
 * after the server's current time), soonest expiry first, at most {@value #MAX_LOCKS}; {@code truncated} tells
 * whether there are more.</li>
 * <li>{@code GET /actuator/locks/{resource}}: the row of one resource, held or not ({@code held} tells); 404 if
 * the table has no row for it. Resource names may contain {@code /}.</li>
 * </ul>
 * Instants are the database server's clock, UTC. The lock table holds only committed state:
 * {@link io.github.dblock.LockMode#PESSIMISTIC PESSIMISTIC} holders have uncommitted row changes while they hold
 * the lock, so they are <em>not</em> listed (after their commit, the row shows as held during their minimum hold
 * time, if they had one). A LEASE lock released with a minimum hold keeps the resource busy until the hold ends
 * but no longer has an owner, so it is not listed either; the selector shows its {@code expiresAt}.
 * <p>
 * Forcing a lock free is a separate endpoint class, {@link ForceReleasingLocksEndpoint}, registered instead of
 * this one only when {@code distributed-lock.endpoint.force-release.enabled=true}.
 */
@Endpoint(id = LocksEndpoint.ID)
public class LocksEndpoint {

	/** The endpoint id. */
	public static final String ID = "locks";

	/** The most locks the list returns. */
	public static final int MAX_LOCKS = 1_000;

	private final LockTableAdmin admin;

	private final @Nullable LockIntrospection locks;

	public LocksEndpoint(LockTableAdmin admin) {
		this(admin, null);
	}

	/**
	 * @param admin reads the lock table
	 * @param locks the locks this node holds (with hold counts), from {@link LockTemplate#introspection()}; may be
	 * {@code null}
	 */
	public LocksEndpoint(LockTableAdmin admin, @Nullable LockIntrospection locks) {
		this.admin = admin;
		this.locks = locks;
	}

	/** The locks held now, according to the lock table. */
	@ReadOperation
	public LocksDescriptor locks() {
		HeldLocks held = this.admin.listHeld(MAX_LOCKS);
		return new LocksDescriptor(this.admin.table().name(), held.serverTime(), held.locks().size(), held.truncated(),
				held.locks(), (this.locks != null) ? this.locks.localHolds() : List.of());
	}

	/** The lock table's row of one resource, or {@code null} (404) if it has none. */
	@ReadOperation
	public @Nullable LockRow lock(@Selector(match = Match.ALL_REMAINING) String... resource) {
		return this.admin.find(resourceName(resource)).orElse(null);
	}

	/** The lock table behind the endpoint. */
	protected LockTableAdmin admin() {
		return this.admin;
	}

	/**
	 * The resource name from the selector's path segments, validated.
	 * @throws InvalidEndpointRequestException (400) if it is not a valid resource name
	 */
	protected static String resourceName(String[] segments) {
		String resource = String.join("/", segments);
		try {
			LockTemplate.validateResource(resource);
		}
		catch (IllegalArgumentException ex) {
			throw new InvalidEndpointRequestException(Objects.requireNonNullElse(ex.getMessage(), ex.toString()),
					"invalid resource name");
		}
		return resource;
	}

	/**
	 * The held locks.
	 * @param table the lock table
	 * @param serverTime the database server's current time (UTC) when the list was read
	 * @param count how many locks are listed
	 * @param truncated whether more locks are held than listed (at most {@value LocksEndpoint#MAX_LOCKS})
	 * @param locks the held locks, soonest expiry first
	 * @param localHolds the locks this node holds, with hold counts (including PESSIMISTIC ones, which the table
	 * cannot show while their transaction is open)
	 */
	public record LocksDescriptor(String table, Instant serverTime, int count, boolean truncated, List<LockRow> locks,
			List<LocalHold> localHolds) {
	}

}
