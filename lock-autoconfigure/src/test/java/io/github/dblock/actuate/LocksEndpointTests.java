package io.github.dblock.actuate;

import java.security.Principal;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

import io.github.dblock.LockHandle;
import io.github.dblock.LockLostException;
import io.github.dblock.LockMode;
import io.github.dblock.LockTemplate;
import io.github.dblock.jdbc.admin.LockTableAdmin;
import io.github.dblock.jdbc.admin.LockTableAdmin.ForceRelease;
import io.github.dblock.jdbc.admin.LockTableAdmin.LockRow;
import io.github.dblock.test.nodes.LockNodes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * The {@code locks} endpoint on the shared lock table of the real test database, with {@link LockTemplate}s acting as
 * separate nodes ({@link LockNodes}). Resource names are unique, so rows of other tests are filtered out.
 */
@ExtendWith(OutputCaptureExtension.class)
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class LocksEndpointTests {

	private static LockNodes nodes;

	private static ForceReleasingLocksEndpoint endpoint;

	@BeforeAll
	static void setUp() {
		nodes = new LockNodes(8);
		endpoint = new ForceReleasingLocksEndpoint(
				new LockTableAdmin(nodes.dataSource(), LockNodes.TABLE, Duration.ofSeconds(2)));
	}

	@AfterAll
	static void tearDown() {
		nodes.close();
	}

	@Test
	void theLocksThisNodeHoldsAreListedWithHoldCountsIncludingPessimisticOnes() {
		LockTemplate node = LockNodes.node(LockMode.PESSIMISTIC, "node-local", nodes.dataSource());
		LocksEndpoint endpoint = new LocksEndpoint(new LockTableAdmin(nodes.dataSource(), LockNodes.TABLE,
				Duration.ofSeconds(2)), node.introspection());
		String resource = "local-" + java.util.UUID.randomUUID();
		try (LockHandle outer = node.acquire(resource); LockHandle inner = node.acquire(resource)) {
			assertThat(endpoint.locks().locks()).as("uncommitted, so not in the table")
				.noneMatch((row) -> row.resource().equals(resource));
			assertThat(endpoint.locks().localHolds()).singleElement().satisfies((hold) -> {
				assertThat(hold.resource()).isEqualTo(resource);
				assertThat(hold.mode()).isEqualTo(LockMode.PESSIMISTIC);
				assertThat(hold.holdCount()).isEqualTo(2);
				assertThat(hold.fencingToken()).isEqualTo(outer.fencingToken());
				assertThat(hold.holder()).startsWith("node-local");
			});
		}
		assertThat(endpoint.locks().localHolds()).isEmpty();
	}

	@Test
	void aHeldLockIsListedWithItsHolderAndTokenAndDisappearsAfterRelease() {
		LockTemplate nodeX = LockNodes.node(LockMode.LEASE, "node-x", nodes.dataSource());
		String resource = "actuator-list-" + UUID.randomUUID();
		try (LockHandle lock = nodeX.acquire(resource)) {
			LocksEndpoint.LocksDescriptor locks = endpoint.locks();
			assertThat(locks.table()).isEqualTo(LockNodes.TABLE.name());
			List<LockRow> mine = locks.locks().stream().filter((row) -> row.resource().equals(resource)).toList();
			assertThat(mine).singleElement().satisfies((row) -> {
				assertThat(row.holder()).startsWith("node-x [");
				assertThat(row.fencingToken()).isBetween(lock.fencingToken(), lock.fencingToken() + 1023);
				assertThat(row.held()).isTrue();
				assertThat(row.acquiredAt()).isBeforeOrEqualTo(locks.serverTime());
				assertThat(row.expiresAt()).isAfter(locks.serverTime())
					.isBeforeOrEqualTo(locks.serverTime().plusSeconds(30));
			});
			LockRow one = endpoint.lock(resource);
			assertThat(one).isNotNull();
			assertThat(one.fencingToken()).isBetween(lock.fencingToken(), lock.fencingToken() + 1023);
			assertThat(one.held()).isTrue();
		}
		assertThat(endpoint.locks().locks()).noneMatch((row) -> row.resource().equals(resource));
		LockRow released = endpoint.lock(resource);
		assertThat(released).isNotNull();
		assertThat(released.held()).isFalse();
	}

	@Test
	void theSelectorJoinsPathSegmentsAndAnswersNullForUnknownOrRejectsInvalidNames() {
		LockTemplate nodeX = LockNodes.node(LockMode.LEASE, "node-x", nodes.dataSource());
		String prefix = "actuator-path-" + UUID.randomUUID();
		try (LockHandle lock = nodeX.acquire(prefix + "/a/b")) {
			LockRow row = endpoint.lock(prefix, "a", "b");
			assertThat(row).isNotNull();
			assertThat(row.resource()).isEqualTo(prefix + "/a/b");
		}
		assertThat(endpoint.lock("actuator-unknown-" + UUID.randomUUID())).isNull();
		assertThatExceptionOfType(InvalidEndpointRequestException.class)
			.isThrownBy(() -> endpoint.lock("x".repeat(LockTemplate.MAX_RESOURCE_LENGTH + 1)));
	}

	@Test
	void forceReleaseFreesAHeldLockAdvancesTheFencingTokenAndIsLogged(CapturedOutput output) {
		LockTemplate nodeX = LockNodes.node(LockMode.LEASE, "node-x", nodes.dataSource());
		LockTemplate nodeY = LockNodes.node(LockMode.LEASE, "node-y", nodes.dataSource());
		String resource = "actuator-force-" + UUID.randomUUID();
		LockHandle stale = nodeX.acquire(resource);
		long staleToken = stale.fencingToken();
		assertThat(nodeY.tryAcquire(resource)).as("busy before the forced release").isEmpty();

		WebEndpointResponse<Object> response = endpoint.forceRelease(SecurityContext.NONE, resource);

		assertThat(response.getStatus()).isEqualTo(200);
		ForceRelease released = (ForceRelease) response.getBody();
		assertThat(released.resource()).isEqualTo(resource);
		assertThat(released.wasHeld()).isTrue();
		assertThat(released.previousHolder()).startsWith("node-x [");
		assertThat(released.previousFencingToken()).isBetween(staleToken, staleToken + 1023);
		assertThat(released.fencingToken()).isGreaterThan(staleToken);
		assertThat(endpoint.locks().locks()).noneMatch((row) -> row.resource().equals(resource));

		Optional<LockHandle> next = nodeY.tryAcquire(resource);
		assertThat(next).as("free right after the forced release").isPresent();
		try (LockHandle lock = next.get()) {
			assertThat(lock.fencingToken()).isGreaterThan(released.fencingToken()).isGreaterThan(staleToken + 1);
		}
		assertThatExceptionOfType(LockLostException.class).isThrownBy(stale::close);
		assertThat(output).contains("Lock '" + resource + "' in " + LockNodes.TABLE.name()
				+ " force-released at the request of unknown: it was held by node-x [");
		assertThat(output).contains("fencing token " + released.previousFencingToken() + " -> " + released.fencingToken());
	}

	@Test
	void forceReleaseLogsThePrincipalAndAnswers404ForAnUnknownResource(CapturedOutput output) {
		LockTemplate nodeX = LockNodes.node(LockMode.LEASE, "node-x", nodes.dataSource());
		String resource = "actuator-force-principal-" + UUID.randomUUID();
		nodeX.acquire(resource).close();
		Principal alice = () -> "alice";
		SecurityContext security = new SecurityContext() {

			@Override
			public Principal getPrincipal() {
				return alice;
			}

			@Override
			public boolean isUserInRole(String role) {
				return false;
			}

		};
		WebEndpointResponse<Object> response = endpoint.forceRelease(security, resource);
		assertThat(response.getStatus()).isEqualTo(200);
		assertThat(((ForceRelease) response.getBody()).wasHeld()).isFalse();
		assertThat(output).contains("Lock '" + resource + "' in " + LockNodes.TABLE.name()
				+ " force-released at the request of 'alice': it was not held");

		WebEndpointResponse<Object> unknown = endpoint.forceRelease(security, "actuator-unknown-" + UUID.randomUUID());
		assertThat(unknown.getStatus()).isEqualTo(404);
	}

	@Test
	void forceReleaseOfAPessimisticHolderAnswers409AfterTheStatementTimeout() {
		LockTemplate nodeP = LockNodes.node(LockMode.PESSIMISTIC, "node-p", nodes.dataSource());
		String resource = "actuator-force-pessimistic-" + UUID.randomUUID();
		try (LockHandle lock = nodeP.acquire(resource)) {
			assertThat(endpoint.locks().locks()).as("an uncommitted PESSIMISTIC holder is not visible")
				.noneMatch((row) -> row.resource().equals(resource));
			WebEndpointResponse<Object> response = endpoint.forceRelease(SecurityContext.NONE, resource);
			assertThat(response.getStatus()).isEqualTo(409);
			assertThat(((ForceReleasingLocksEndpoint.Failure) response.getBody()).error())
				.contains("stayed locked by another transaction");
			assertThat(lock.isHeld()).isTrue();
		}
	}

}
