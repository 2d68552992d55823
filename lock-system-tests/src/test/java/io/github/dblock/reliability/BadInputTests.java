package io.github.dblock.reliability;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.actuate.LocksEndpoint;
import io.github.dblock.jdbc.admin.LockTableAdmin;
import io.github.dblock.jdbc.admin.LockTableAdmin.LockRow;
import io.github.dblock.test.nodes.LockNodes;
import io.github.dblock.test.Reliability;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * Bad input through the programmatic API ({@link LockTemplate} and {@link LockOptions}) on the real database, in
 * every mode and through every entry point: each is rejected with an {@link IllegalArgumentException} whose message
 * names the culprit and what is allowed, and nothing is left locked (no local state in the template, no row owned,
 * another node can take the resource at once). Unicode names must work, exclusively, in every mode, and the
 * 255-code-point limit is exact. Every input tried is counted in the reliability report ("bad inputs tried").
 * <p>
 * Cases proven elsewhere and counted there: case and trailing spaces make different resources
 * ({@code HeldLockContractTests.resourceNamesAreComparedExactlyAndMayBeAnyUnicodeUpTo255Characters}).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@SuppressWarnings("try") // some try blocks hold a lock or connection for their scope without using it
class BadInputTests {

	private static final String TRIED = "bad inputs tried";

	private static final List<LockMode> HOLDING_MODES = List.of(LockMode.LEASE, LockMode.PESSIMISTIC);

	private LockNodes nodes;

	/** Has a provider for every mode; LEASE by default. */
	private LockTemplate app;

	/** Another node, for probing whether a resource is free. */
	private LockTemplate other;

	private LockTableAdmin admin;

	private JdbcTemplate jdbc;

	@BeforeAll
	void startNodes() {
		this.nodes = new LockNodes(16);
		this.app = allModes("app");
		this.other = allModes("other");
		this.admin = new LockTableAdmin(this.nodes.dataSource(), LockNodes.TABLE, Duration.ofSeconds(5));
		this.jdbc = new JdbcTemplate(this.nodes.dataSource());
	}

	@AfterAll
	void stopNodes() {
		this.nodes.close();
	}

	private LockTemplate allModes(String name) {
		return new LockTemplate(List.of(LockNodes.provider(LockMode.LEASE, this.nodes.dataSource()),
				LockNodes.provider(LockMode.PESSIMISTIC, this.nodes.dataSource()),
				LockNodes.provider(LockMode.OPTIMISTIC, this.nodes.dataSource())), LockMode.LEASE, Duration.ZERO,
				Duration.ofSeconds(30), name);
	}

	private static void tried(LockMode mode) {
		Reliability.count(mode.name(), TRIED, 1);
	}

	private static void tried() {
		Reliability.count(Reliability.ALL_MODES, TRIED, 1);
	}

	// ------------------------------------------------------------------ resource names

	@Test
	void nullBlankOverLongAndMalformedNamesAreRefusedThroughEveryEntryPointInEveryModeBeforeAnySql() {
		String prefix = "bad-" + UUID.randomUUID();
		Map<String, String> names = new LinkedHashMap<>();
		names.put("must not be null", null);
		names.put("must not be blank", "");
		names.put("must not be blank, was ' \t\n'", " \t\n");
		names.put("256 characters (code points) long; at most 255 are allowed: '" + prefix,
				prefix + "x".repeat(256 - prefix.length()));
		names.put("256 characters (code points) long", "😀".repeat(256));
		names.put("unpaired surrogate at index " + (prefix.length() + 1), prefix + "x\uD83D");
		names.put("unpaired surrogate at index 0", "\uDE00" + prefix);
		int refused = 0;
		for (Map.Entry<String, String> name : names.entrySet()) {
			for (LockMode mode : LockMode.values()) {
				for (Map.Entry<String, Consumer<String>> entry : entryPoints(this.app, mode).entrySet()) {
					assertThatIllegalArgumentException().as("%s through %s in %s", name.getKey(), entry.getKey(), mode)
						.isThrownBy(() -> entry.getValue().accept(name.getValue()))
						.withMessageContaining("Lock resource name")
						.withMessageContaining(name.getKey())
						.satisfies((ex) -> assertThat(StandardCharsets.UTF_8.newEncoder().canEncode(ex.getMessage()))
							.as("message is well-formed: %s", ex.getMessage()).isTrue());
					tried(mode);
					refused++;
				}
			}
		}
		// LEASE (the default mode): 9 entry points; PESSIMISTIC: 4 with options; OPTIMISTIC: execute only, 2
		assertThat(refused).isEqualTo(names.size() * (9 + 4 + 2));
		assertNoLocalState(this.app);
		assertThat(this.jdbc.queryForObject("SELECT COUNT(*) FROM distributed_lock WHERE resource LIKE ?", Integer.class,
				(Object) (prefix + "%").getBytes(StandardCharsets.UTF_8))).as("rows written for refused names").isZero();
	}

	@Test
	void theLimitIs255CodePointsSoThe1020ByteKeyHoldsThe255FourByteEmojiThatAreTheLongestName() {
		String tag = UUID.randomUUID().toString().substring(0, 8);
		List<String> longest = List.of(tag + "x".repeat(255 - tag.length()), // 255 bytes
				tag + "😀".repeat(255 - tag.length()), // 255 code points, 502 UTF-16 chars, 996 bytes
				"😀".repeat(247) + asEmoji(tag), // 255 four-byte code points: exactly 1,020 bytes
				tag + "e\u0301".repeat((255 - tag.length()) / 2) + "x"); // combining accents count one each
		for (String name : longest) {
			assertThat(name.codePointCount(0, name.length())).isEqualTo(LockTemplate.MAX_RESOURCE_LENGTH);
			for (LockMode mode : LockMode.values()) {
				assertExclusiveAndRoundTrips(name, mode);
				tried(mode);
				String oneMore = name + "x";
				assertThatIllegalArgumentException().isThrownBy(() -> this.app.execute(oneMore, options(mode), (l) -> 1))
					.withMessageContaining("256 characters (code points) long; at most 255 are allowed");
				String oneMoreEmoji = name + "😀";
				assertThatIllegalArgumentException()
					.isThrownBy(() -> this.app.execute(oneMoreEmoji, options(mode), (l) -> 1))
					.withMessageContaining("256 characters");
				tried(mode);
				tried(mode);
			}
		}
		byte[] key = ("😀".repeat(247) + asEmoji(tag)).getBytes(StandardCharsets.UTF_8);
		assertThat(key).hasSize(1020);
		assertThat(this.jdbc.queryForObject("SELECT LENGTH(resource) FROM distributed_lock WHERE resource = ?",
				Integer.class, (Object) key)).as("bytes stored").isEqualTo(1020);
		assertNoLocalState(this.app);
	}

	@Test
	void unicodeNamesWorkInEveryModeAreExclusiveAndRoundTripThroughTheTableAndTheHolderDescription() {
		String tag = UUID.randomUUID().toString().substring(0, 8);
		List<String> names = List.of("Bestellung-Größe-😀-" + tag, "注文-東京-" + tag, "заказ-" + tag,
				"👩‍👩‍👧‍👦 family " + tag, "\u0000nul-and-tab\t" + tag, "  padded " + tag + "  ");
		for (String name : names) {
			for (LockMode mode : LockMode.values()) {
				assertExclusiveAndRoundTrips(name, mode);
				tried(mode);
			}
		}
		LockTemplate emojiNode = new LockTemplate(List.of(LockNodes.provider(LockMode.LEASE, this.nodes.dataSource())),
				LockMode.LEASE, Duration.ZERO, Duration.ofSeconds(30), "Knoten-😀-東京");
		try (LockHandle lock = emojiNode.acquire(names.get(0))) {
			assertThat(this.admin.find(names.get(0)).map(LockRow::holder).orElseThrow()).startsWith("Knoten-😀-東京 [");
			assertThat(emojiNode.introspection().localHolds()).singleElement()
				.satisfies((hold) -> assertThat(hold.holder()).startsWith("Knoten-😀-東京 ["));
			LocksEndpoint endpoint = new LocksEndpoint(this.admin, emojiNode.introspection());
			assertThat(endpoint.locks().locks()).filteredOn((row) -> row.resource().equals(names.get(0)))
				.singleElement()
				.satisfies((row) -> assertThat(row.holder()).startsWith("Knoten-😀-東京 ["));
			assertThat(endpoint.lock(names.get(0))).isNotNull().satisfies((row) -> {
				assertThat(row.resource()).isEqualTo(names.get(0));
				// the row keeps the last token of the block its take reserved for local hand-offs
				assertThat(row.fencingToken()).isBetween(lock.fencingToken(), lock.fencingToken() + 1023);
			});
			assertThat(endpoint.locks().localHolds()).singleElement()
				.satisfies((hold) -> assertThat(hold.resource()).isEqualTo(names.get(0)));
		}
		tried();
	}

	@Test
	void aHolderDescriptionLongerThanTheColumnIsCutAtA255CodePointBoundaryNeverInsideAnEmoji() {
		String node = "n".repeat(254) + "😀😀";
		LockTemplate longNode = new LockTemplate(List.of(LockNodes.provider(LockMode.LEASE, this.nodes.dataSource())),
				LockMode.LEASE, Duration.ZERO, Duration.ofSeconds(30), node);
		String resource = "long-holder-" + UUID.randomUUID();
		try (LockHandle lock = longNode.acquire(resource)) {
			String holder = this.admin.find(resource).map(LockRow::holder).orElseThrow();
			assertThat(holder).isEqualTo("n".repeat(254) + "😀");
			assertThat(this.other.tryAcquire(resource)).as("held").isEmpty();
		}
		tried();
	}

	@Test
	void precomposedAndCombiningAccentsAreDifferentResourcesBecauseNamesCompareExactly() {
		String tag = UUID.randomUUID().toString().substring(0, 8);
		String precomposed = "caf\u00e9-" + tag;
		String combining = "cafe\u0301-" + tag;
		for (LockMode mode : HOLDING_MODES) {
			try (LockHandle first = this.app.acquire(precomposed, options(mode))) {
				Optional<LockHandle> second = this.other.tryAcquire(combining, options(mode));
				assertThat(second).as("the other spelling is another resource (%s)", mode).isPresent();
				second.get().close();
				assertThat(this.other.tryAcquire(precomposed, options(mode))).as("the same spelling is held").isEmpty();
			}
			tried(mode);
		}
		assertThat(this.admin.find(precomposed).orElseThrow().resource()).isEqualTo(precomposed);
		assertThat(this.admin.find(combining).orElseThrow().resource()).isEqualTo(combining);
		assertNoLocalState(this.app);
	}

	// ------------------------------------------------------------------ durations and options

	@Test
	void negativeWaitTimesAreRefusedAndZeroMakesOneAttempt() {
		assertThatIllegalArgumentException().isThrownBy(() -> LockOptions.defaults().withWaitTime(Duration.ofMillis(-1)))
			.withMessage("waitTime must be zero (a single attempt) or positive, was PT-0.001S");
		tried();
		assertThatIllegalArgumentException().isThrownBy(() -> this.app.tryAcquire("x", Duration.ofSeconds(-5)))
			.withMessageContaining("waitTime must be zero (a single attempt) or positive, was PT-5S");
		tried();
		String resource = "zero-wait-" + UUID.randomUUID();
		try (LockHandle held = this.other.acquire(resource)) {
			for (LockMode mode : HOLDING_MODES) {
				long start = System.nanoTime();
				assertThat(this.app.tryAcquire(resource, options(mode).withWaitTime(Duration.ZERO))).isEmpty();
				assertThat(Duration.ofNanos(System.nanoTime() - start)).as("one attempt, %s", mode)
					.isLessThan(Duration.ofSeconds(4));
			}
		}
		assertNoLocalState(this.app);
	}

	@Test
	void leaseTimesBelowTenMillisecondsAreRefusedBecauseSuchALockEndsBeforeItIsTaken() {
		for (Duration lease : List.of(Duration.ZERO, Duration.ofSeconds(-1), Duration.ofNanos(1), Duration.ofNanos(999),
				Duration.ofMillis(1), Duration.ofMillis(9))) {
			assertThatIllegalArgumentException().isThrownBy(() -> LockOptions.defaults().withLeaseTime(lease))
				.withMessage("leaseTime must be at least 10ms (a shorter lease ends before the statement taking it "
						+ "returns), was " + lease);
			tried();
		}
		String resource = "ten-ms-" + UUID.randomUUID();
		// waits: on a loaded machine a take's reply can come after 10 ms, and such a lease is given back, not handed out
		LockHandle shortest = this.app.acquire(resource, LockOptions.defaults().withLeaseTime(LockOptions.MIN_LEASE_TIME)
			.withWaitTime(Duration.ofSeconds(10)));
		try (LockHandle successor = this.other.acquire(resource, LockOptions.defaults().withWaitTime(Duration.ofSeconds(10)))) {
			assertThat(successor.fencingToken()).isGreaterThan(shortest.fencingToken());
		}
		assertThatExceptionOfLockLost(shortest);
		assertNoLocalState(this.app);
	}

	@Test
	void leaseTimesBeyondAHundredYearsAreRefusedInsteadOfOverflowingAndTheLongestWorks() {
		for (Duration lease : List.of(LockOptions.MAX_LEASE_TIME.plusNanos(1), Duration.ofDays(365L * 1000),
				java.time.temporal.ChronoUnit.FOREVER.getDuration())) {
			assertThatIllegalArgumentException().isThrownBy(() -> LockOptions.defaults().withLeaseTime(lease))
				.withMessageStartingWith("leaseTime must be at most 36500 days (about 100 years), was " + lease)
				.withMessageContaining("leave the lease time unset");
			tried();
			assertThatIllegalArgumentException()
				.isThrownBy(() -> new LockTemplate(List.of(LockNodes.provider(LockMode.LEASE, this.nodes.dataSource())),
						LockMode.LEASE, Duration.ZERO, lease, "n"))
				.withMessageStartingWith("The default lease time must be at most 36500 days");
			tried();
		}
		String resource = "century-" + UUID.randomUUID();
		for (LockMode mode : HOLDING_MODES) {
			try (LockHandle lock = this.app.acquire(resource, options(mode).withLeaseTime(LockOptions.MAX_LEASE_TIME))) {
				assertThat(lock.isHeld()).isTrue();
				assertThat(this.other.tryAcquire(resource)).isEmpty();
			}
			tried(mode);
		}
		assertNothingLocked(resource);
	}

	@Test
	void aDefaultLeaseShorterThanOneSecondIsRefusedBecauseItsRenewalsWouldNotLandInTime() {
		for (Duration lease : List.of(Duration.ofMillis(999), Duration.ofMillis(10), Duration.ZERO)) {
			assertThatIllegalArgumentException()
				.isThrownBy(() -> new LockTemplate(List.of(LockNodes.provider(LockMode.LEASE, this.nodes.dataSource())),
						LockMode.LEASE, Duration.ZERO, lease, "n"))
				.withMessage("The default lease time must be at least 1s (it is renewed every third of it while a lock "
						+ "is held), was " + lease);
			tried(LockMode.LEASE);
		}
		LockTemplate oneSecond = new LockTemplate(List.of(LockNodes.provider(LockMode.LEASE, this.nodes.dataSource())),
				LockMode.LEASE, Duration.ZERO, LockTemplate.MIN_DEFAULT_LEASE_TIME, "one-second");
		String resource = "renewed-1s-" + UUID.randomUUID();
		try (LockHandle lock = oneSecond.acquire(resource)) {
			long end = System.nanoTime() + Duration.ofMillis(2500).toNanos();
			while (System.nanoTime() < end) {
				assertThat(this.other.tryAcquire(resource)).as("renewed, still held").isEmpty();
				sleep(200);
			}
			assertThat(lock.isHeld()).isTrue();
		}
		assertThat(this.other.tryAcquire(resource).map(closed())).contains(true);
	}

	@Test
	void negativeMinimumHoldTimesAreRefusedAndOnesLongerThanTheLeaseFailTheCallWithNothingLocked() {
		assertThatIllegalArgumentException().isThrownBy(() -> LockOptions.defaults().withMinHoldTime(Duration.ofSeconds(-1)))
			.withMessageContaining("minHoldTime must not be negative, was PT-1S");
		tried();
		String resource = "min-hold-" + UUID.randomUUID();
		LockOptions tooLong = LockOptions.defaults().withLeaseTime(Duration.ofSeconds(1)).withMinHoldTime(Duration.ofSeconds(2));
		LockOptions beyondDefault = LockOptions.defaults().withMinHoldTime(Duration.ofMinutes(1));
		for (LockMode mode : LockMode.values()) {
			for (Map.Entry<String, Consumer<String>> entry : entryPoints(this.app, mode, tooLong).entrySet()) {
				assertThatIllegalArgumentException().as("%s in %s", entry.getKey(), mode)
					.isThrownBy(() -> entry.getValue().accept(resource))
					.withMessageContaining("minHoldTime PT2S exceeds the lease time PT1S of lock '" + resource + "'");
				tried(mode);
			}
			for (Map.Entry<String, Consumer<String>> entry : entryPoints(this.app, mode, beyondDefault).entrySet()) {
				assertThatIllegalArgumentException().as("%s in %s", entry.getKey(), mode)
					.isThrownBy(() -> entry.getValue().accept(resource))
					.withMessageContaining("minHoldTime PT1M exceeds the lease time PT30S")
					.withMessageContaining("distributed-lock.lease-time");
				tried(mode);
			}
		}
		assertNothingLocked(resource);
	}

	@Test
	void nullOptionsModesActionsAndUnavailableModesAreRefusedNamingWhatIsAllowed() {
		String resource = "options-" + UUID.randomUUID();
		assertThatIllegalArgumentException().isThrownBy(() -> LockOptions.defaults().withWaitTime(null))
			.withMessage("waitTime must not be null: leave it unset for the configured default, or give zero or positive");
		assertThatIllegalArgumentException().isThrownBy(() -> LockOptions.defaults().withLeaseTime(null))
			.withMessageContaining("leaseTime must not be null").withMessageContaining("at least 10ms");
		assertThatIllegalArgumentException().isThrownBy(() -> LockOptions.defaults().withMinHoldTime(null))
			.withMessageContaining("minHoldTime must not be null");
		assertThatIllegalArgumentException().isThrownBy(() -> LockOptions.defaults().withMode(null))
			.withMessageContaining("mode must not be null").withMessageContaining("[LEASE, PESSIMISTIC, OPTIMISTIC]");
		assertThatIllegalArgumentException().isThrownBy(() -> this.app.acquire(resource, null))
			.withMessageContaining("options must not be null for lock '" + resource + "'");
		assertThatIllegalArgumentException().isThrownBy(() -> this.app.execute(resource, LockOptions.defaults(), null))
			.withMessageContaining("action to run under the lock must not be null");
		assertThatIllegalArgumentException()
			.isThrownBy(() -> this.app.executeWithoutResult(resource, LockOptions.defaults(), null))
			.withMessageContaining("action to run under the lock must not be null");
		for (int i = 0; i < 7; i++) {
			tried();
		}
		LockTemplate leaseOnly = LockNodes.node(LockMode.LEASE, "lease-only", this.nodes.dataSource());
		for (LockMode mode : List.of(LockMode.PESSIMISTIC, LockMode.OPTIMISTIC)) {
			for (Map.Entry<String, Consumer<String>> entry : entryPoints(leaseOnly, mode).entrySet()) {
				assertThatIllegalArgumentException().as("%s in %s", entry.getKey(), mode)
					.isThrownBy(() -> entry.getValue().accept(resource))
					.withMessage("Lock mode " + mode + " is not available; available modes: [LEASE]");
				tried(mode);
			}
		}
		for (Map.Entry<String, Consumer<String>> entry : holdingEntryPoints(this.app, options(LockMode.OPTIMISTIC)).entrySet()) {
			assertThatIllegalArgumentException().as(entry.getKey())
				.isThrownBy(() -> entry.getValue().accept(resource))
				.withMessageContaining("Lock mode OPTIMISTIC has no lock to hold")
				.withMessageContaining("Use execute(...) or @DistributedLock for '" + resource + "'");
			tried(LockMode.OPTIMISTIC);
		}
		assertThatIllegalArgumentException()
			.isThrownBy(() -> new LockTemplate(List.of(LockNodes.provider(LockMode.LEASE, this.nodes.dataSource())),
					LockMode.PESSIMISTIC, Duration.ZERO, Duration.ofSeconds(30), "n"))
			.withMessage("No LockProvider for the default mode PESSIMISTIC");
		assertThatIllegalArgumentException()
			.isThrownBy(() -> new LockTemplate(List.of(LockNodes.provider(LockMode.LEASE, this.nodes.dataSource())),
					LockMode.LEASE, Duration.ZERO, Duration.ofSeconds(30), " "))
			.withMessageContaining("nodeName must not be null or blank");
		tried();
		tried();
		assertNothingLocked(resource);
		assertNoLocalState(leaseOnly);
	}

	@Test
	void aBadInnerCallInsideAHeldLockFailsAndTheOuterLockIsReleasedWithTheCallbacksFailure() {
		for (LockMode mode : LockMode.values()) {
			String outer = "outer-" + UUID.randomUUID();
			AtomicInteger ran = new AtomicInteger();
			assertThatIllegalArgumentException().isThrownBy(() -> this.app.execute(outer, options(mode), (lock) -> {
				ran.incrementAndGet();
				return this.app.execute(" ", (inner) -> 1);
			})).withMessageContaining("must not be blank");
			assertThatIllegalArgumentException().isThrownBy(() -> this.app.execute(outer, options(mode), (lock) -> {
				ran.incrementAndGet();
				return this.app.execute(outer + "-inner",
						LockOptions.defaults().withLeaseTime(Duration.ofSeconds(1)).withMinHoldTime(Duration.ofSeconds(5)),
						(inner) -> 1);
			})).withMessageContaining("exceeds the lease time");
			assertThat(ran).as("the outer work ran and failed, %s", mode).hasValue(2);
			assertNothingLocked(outer);
			assertNothingLocked(outer + "-inner");
			tried(mode);
			tried(mode);
		}
	}

	// ------------------------------------------------------------------ helpers

	private void assertExclusiveAndRoundTrips(String name, LockMode mode) {
		if (mode == LockMode.OPTIMISTIC) {
			// Optimistic work excludes no one; it conflicts with a commit under the same row: another node taking the
			// same name in between makes it run again, which proves the name addresses the same row.
			AtomicInteger runs = new AtomicInteger();
			String seen = this.app.execute(name, options(mode), (lock) -> {
				if (runs.incrementAndGet() == 1) {
					this.other.acquire(name).close();
				}
				return lock.resource();
			});
			assertThat(seen).isEqualTo(name);
			assertThat(runs).as("re-run after a commit under the same name").hasValue(2);
		}
		else {
			try (LockHandle lock = this.app.acquire(name, options(mode))) {
				assertThat(lock.resource()).isEqualTo(name);
				assertThat(this.other.tryAcquire(name, options(LockMode.LEASE))).as("held (%s), LEASE probe", mode).isEmpty();
				assertThat(this.other.tryAcquire(name, options(LockMode.PESSIMISTIC))).as("held (%s), row probe", mode)
					.isEmpty();
				assertThat(this.app.introspection().localHolds()).singleElement().satisfies((hold) -> {
					assertThat(hold.resource()).isEqualTo(name);
					assertThat(hold.mode()).isEqualTo(mode);
				});
				if (mode == LockMode.LEASE) {
					assertThat(this.admin.listHeld(LockTableAdmin.MAX_LIST_LIMIT).locks()).map(LockRow::resource)
						.contains(name);
				}
			}
		}
		assertThat(this.admin.find(name).map(LockRow::resource)).as("the table's row, decoded").contains(name);
		assertNothingLocked(name);
	}

	/** No local state in the application node, no owner in the table, and another node takes it at once. */
	private void assertNothingLocked(String resource) {
		assertNoLocalState(this.app);
		assertThat(this.jdbc.queryForObject("SELECT COUNT(*) FROM distributed_lock WHERE resource = ? AND owner_token IS "
				+ "NOT NULL AND expires_at > UTC_TIMESTAMP(6)", Integer.class,
				(Object) resource.getBytes(StandardCharsets.UTF_8))).as("owned rows of '%s'", resource).isZero();
		for (LockMode mode : HOLDING_MODES) {
			assertThat(this.other.tryAcquire(resource, options(mode)).map(closed())).as("free for others (%s)", mode)
				.contains(true);
		}
	}

	private static void assertNoLocalState(LockTemplate node) {
		assertThat(node.introspection().localResourceCount()).as("resources this node holds or awaits").isZero();
		assertThat(node.introspection().localHolds()).isEmpty();
	}

	private static void assertThatExceptionOfLockLost(LockHandle lock) {
		org.assertj.core.api.Assertions.assertThatExceptionOfType(io.github.dblock.LockLostException.class)
			.isThrownBy(lock::close);
	}

	private static java.util.function.Function<LockHandle, Boolean> closed() {
		return (lock) -> {
			lock.close();
			return true;
		};
	}

	private static LockOptions options(LockMode mode) {
		return LockOptions.defaults().withMode(mode);
	}

	/** Every entry point of the template in the given mode, with the mode's options. */
	private static Map<String, Consumer<String>> entryPoints(LockTemplate node, LockMode mode) {
		return entryPoints(node, mode, options(mode));
	}

	private static Map<String, Consumer<String>> entryPoints(LockTemplate node, LockMode mode, LockOptions base) {
		LockOptions options = base.withMode(mode);
		Map<String, Consumer<String>> entries = new LinkedHashMap<>();
		if (mode != LockMode.OPTIMISTIC) {
			entries.putAll(holdingEntryPoints(node, options));
		}
		entries.put("execute(options)", (r) -> node.execute(r, options, (lock) -> 1));
		entries.put("executeWithoutResult(options)", (r) -> node.executeWithoutResult(r, options, (lock) -> {
		}));
		if (mode == node.getDefaultMode() && base.getMinHoldTime() == null) {
			entries.put("execute", (r) -> node.execute(r, (lock) -> 1));
			entries.put("executeWithoutResult", (r) -> node.executeWithoutResult(r, (lock) -> {
			}));
		}
		return entries;
	}

	private static Map<String, Consumer<String>> holdingEntryPoints(LockTemplate node, LockOptions options) {
		Map<String, Consumer<String>> entries = new LinkedHashMap<>();
		entries.put("acquire(options)", (r) -> node.acquire(r, options).close());
		entries.put("tryAcquire(options)", (r) -> node.tryAcquire(r, options).ifPresent(LockHandle::close));
		if (options.getMode() == node.getDefaultMode() && options.getMinHoldTime() == null) {
			entries.put("acquire", (r) -> node.acquire(r).close());
			entries.put("tryAcquire", (r) -> node.tryAcquire(r).ifPresent(LockHandle::close));
			entries.put("tryAcquire(wait)", (r) -> node.tryAcquire(r, Duration.ZERO).ifPresent(LockHandle::close));
		}
		return entries;
	}

	/** Turns the hex digits of a UUID fragment into emoji, so that a unique name can consist of emoji only. */
	private static String asEmoji(String hex) {
		StringBuilder emoji = new StringBuilder();
		for (char c : hex.toCharArray()) {
			emoji.appendCodePoint(0x1F600 + Character.digit(c, 16));
		}
		return emoji.toString();
	}

	private static void sleep(long millis) {
		try {
			Thread.sleep(millis);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}

}
