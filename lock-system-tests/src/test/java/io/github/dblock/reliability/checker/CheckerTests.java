package io.github.dblock.reliability.checker;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

import io.github.dblock.jdbc.sql.LeaseStatements;
import io.github.dblock.reliability.checker.Checker.Invariant;
import io.github.dblock.reliability.checker.Checker.Violation;
import io.github.dblock.reliability.checker.History.Effect;
import io.github.dblock.reliability.checker.History.Family;
import io.github.dblock.reliability.checker.History.Forced;
import io.github.dblock.reliability.checker.History.Observed;
import io.github.dblock.reliability.checker.History.Op;
import io.github.dblock.reliability.checker.History.Section;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The {@link Checker} on made-up histories: one that breaks each invariant (so that each check is shown able to
 * fail), legitimate ones that must pass (a stale holder stopped by fencing, overlapping readers), and the quotes of
 * the invariants against the documents they quote, so that the docs and the checker cannot drift apart.
 */
class CheckerTests {

	private static final LocalDateTime T0 = LocalDateTime.of(2026, 1, 1, 0, 0);

	private static LocalDateTime at(long millis) {
		return T0.plusNanos(millis * 1_000_000);
	}

	private static Section section(long op, String resource, Family family, String mode, long token, long from,
			@Nullable Long to, boolean entryAccepted, @Nullable Boolean exitAccepted, boolean counted, boolean lost) {
		return new Section(op, "n" + (op % 3), resource, family, mode, token, at(from), (to != null) ? at(to) : null,
				entryAccepted, exitAccepted, counted, lost);
	}

	/** A clean section that held the lock from {@code from} to {@code to}, both fenced writes accepted. */
	private static Section clean(long op, String resource, Family family, long token, long from, long to) {
		return section(op, resource, family, "LEASE acquire", token, from, to, true, true, true, false);
	}

	private static Observed sections(Section... sections) {
		return new Observed(List.of(sections), List.of(), List.of(), Set.of(), Map.of(), List.of());
	}

	private static List<Violation> check(Observed observed) {
		List<Violation> violations = Checker.check(observed);
		if (!violations.isEmpty()) {
			System.out.println(Checker.report(42, observed, violations));
		}
		return violations;
	}

	private static Set<String> failed(Observed observed) {
		return Set.copyOf(check(observed).stream().map(Violation::invariant).toList());
	}

	@Test
	void theHolderOfAHandedOverLeaseIsTheOneTheReleaseWrites() {
		assertThat(Checker.HANDED_OVER_HOLDER).isEqualTo(LeaseStatements.HANDED_OVER_HOLDER);
	}

	@Test
	void aHistoryOfOrderlyHoldersPasses() {
		Observed observed = new Observed(
				List.of(clean(1, "x", Family.EXCLUSIVE, 10, 0, 10), clean(2, "x", Family.EXCLUSIVE, 11, 10, 20),
						section(3, "x", Family.EXCLUSIVE, "PESSIMISTIC execute", 50, 25, 30L, true, true, true, false),
						clean(4, "rw", Family.READ, 5, 0, 10), clean(5, "rw", Family.READ, 6, 2, 12),
						clean(6, "rw", Family.WRITE, 7, 12, 20), clean(7, "sem", Family.PERMIT, 1, 0, 10),
						clean(8, "sem", Family.PERMIT, 2, 5, 15)),
				List.of(new Op(1, "n1", "LEASE acquire", "x", 0, 1_000_000_000L, 7_000_000_000L, "ok")),
				List.of(new Effect("k", 9)), Set.of("k"), Map.of("sem", 2), List.of());
		assertThat(check(observed)).isEmpty();
	}

	@Test
	void aStaleHolderThatFencingStoppedPasses() {
		// op 1's lease ended under it (lost); op 2 took the lock with a larger token while op 1 was still inside,
		// and op 1's fenced write at its exit was rejected
		Section stale = section(1, "x", Family.EXCLUSIVE, "LEASE acquire", 10, 0, 50L, true, false, true, true);
		Section next = clean(2, "x", Family.EXCLUSIVE, 11, 20, 30);
		// op 3 acquired before op 4 but stalled before entering: it enters late, and its writes are rejected
		Section late = section(3, "y", Family.EXCLUSIVE, "LEASE acquire", 5, 40, 45L, false, false, true, true);
		Section earlier = clean(4, "y", Family.EXCLUSIVE, 6, 0, 42);
		assertThat(check(sections(stale, next, earlier, late))).isEmpty();
	}

	@Test
	void aStaleHolderBesideCommittedOptimisticWorkPasses() {
		// OPTIMISTIC work writes nothing fenced (its token is the version it started from), so the stale holder's
		// write at its exit is accepted
		Section stale = section(1, "x", Family.EXCLUSIVE, "LEASE acquire (short lease)", 10, 0, 50L, true, true, true,
				true);
		Section optimistic = section(2, "x", Family.EXCLUSIVE, "OPTIMISTIC execute", 1033, 20, 60L, false, false, true,
				false);
		assertThat(check(sections(stale, optimistic))).isEmpty();
	}

	@Test
	void aStaleLeaseHolderBesideOptimisticWorkThatReadItsBlockEndPasses() {
		// OPTIMISTIC work started from version 2047, the block end of the LEASE take whose first token is 1024; the
		// stale LEASE holder (lost) enters beside it with its smaller token: OPTIMISTIC holds no token to compare
		Section optimistic = section(1, "x", Family.EXCLUSIVE, "OPTIMISTIC execute", 2047, 0, 100L, false, false, true,
				false);
		Section stale = section(2, "x", Family.EXCLUSIVE, "LEASE tryAcquire", 1024, 50, 150L, true, true, true, true);
		assertThat(check(sections(optimistic, stale))).isEmpty();
	}

	@Test
	void twoCleanHoldersAtOneInstantFail() {
		assertThat(failed(sections(clean(1, "x", Family.EXCLUSIVE, 10, 0, 20), clean(2, "x", Family.EXCLUSIVE, 11, 10, 30))))
			.containsExactly("exclusion");
	}

	@Test
	void aPessimisticAndALeaseHolderAtOneInstantFailExclusionAcrossModes() {
		Observed observed = sections(clean(1, "xm", Family.EXCLUSIVE, 100, 0, 10),
				section(2, "xm", Family.EXCLUSIVE, "PESSIMISTIC acquire", 5, 5, 15L, false, false, true, false));
		assertThat(failed(observed)).containsExactly("exclusion-across-modes");
	}

	@Test
	void tokensThatDoNotIncreaseAcrossModesPass() {
		// one mode per resource is what orders tokens: across modes they need not increase, within each they must
		Observed observed = sections(clean(1, "xm", Family.EXCLUSIVE, 100, 0, 10),
				section(2, "xm", Family.EXCLUSIVE, "PESSIMISTIC execute", 5, 10, 20L, false, false, true, false),
				clean(3, "xm", Family.EXCLUSIVE, 1124, 20, 30),
				section(4, "xm", Family.EXCLUSIVE, "@DistributedLock PESSIMISTIC", 6, 30, 40L, false, false, true,
						false));
		assertThat(check(observed)).isEmpty();
		Observed decreasing = sections(clean(1, "xm", Family.EXCLUSIVE, 100, 0, 10),
				section(2, "xm", Family.EXCLUSIVE, "PESSIMISTIC execute", 6, 10, 20L, false, false, true, false),
				section(3, "xm", Family.EXCLUSIVE, "PESSIMISTIC acquire", 5, 20, 30L, false, false, true, false));
		assertThat(failed(decreasing)).containsExactly("tokens-increase");
	}

	@Test
	void aStaleHolderWhoseFencedWriteWasAcceptedAfterTheNextEnteredFails() {
		Section stale = section(1, "x", Family.EXCLUSIVE, "LEASE acquire", 10, 0, 50L, true, true, true, true);
		assertThat(failed(sections(stale, clean(2, "x", Family.EXCLUSIVE, 11, 20, 30)))).containsExactly("exclusion");
	}

	@Test
	void aLaterHolderWithASmallerTokenWhoseWriteWasAcceptedFails() {
		Section stale = section(1, "x", Family.EXCLUSIVE, "LEASE acquire", 10, 0, 50L, true, false, true, true);
		Section smaller = clean(2, "x", Family.EXCLUSIVE, 9, 20, 30);
		assertThat(failed(sections(stale, smaller))).contains("exclusion", "tokens-increase");
	}

	@Test
	void rolledBackTransactionsDoNotCount() {
		Section committed = section(1, "x", Family.EXCLUSIVE, "OPTIMISTIC execute", 10, 0, 20L, false, false, true,
				false);
		Section rolledBack = section(2, "x", Family.EXCLUSIVE, "OPTIMISTIC execute", 10, 5, 15L, false, false, false,
				false);
		assertThat(check(sections(committed, rolledBack))).isEmpty();
		Section alsoCommitted = section(2, "x", Family.EXCLUSIVE, "OPTIMISTIC execute", 10, 5, 15L, false, false, true,
				false);
		assertThat(failed(sections(committed, alsoCommitted))).containsExactly("exclusion");
	}

	@Test
	void aReaderBesideAWriterFails() {
		assertThat(failed(sections(clean(1, "rw", Family.READ, 10, 0, 20), clean(2, "rw", Family.WRITE, 11, 10, 30))))
			.containsExactly("reader-beside-writer");
		assertThat(failed(sections(clean(1, "rw", Family.WRITE, 10, 0, 20), clean(2, "rw", Family.READ, 11, 10, 30))))
			.containsExactly("reader-beside-writer");
	}

	@Test
	void aTokenThatDoesNotIncreaseFails() {
		assertThat(failed(sections(clean(1, "x", Family.EXCLUSIVE, 10, 0, 10), clean(2, "x", Family.EXCLUSIVE, 10, 20, 30))))
			.containsExactly("tokens-increase");
		assertThat(failed(sections(clean(1, "rw", Family.WRITE, 10, 0, 10), clean(2, "rw", Family.READ, 9, 20, 30))))
			.containsExactly("tokens-increase");		// a clean holder with an older token is a violation even when fencing rejected its write
		Section cleanButOlder = section(2, "x", Family.EXCLUSIVE, "LEASE acquire", 9, 20, 30L, false, false, true, false);
		assertThat(failed(sections(clean(1, "x", Family.EXCLUSIVE, 10, 0, 10), cleanButOlder)))
			.containsExactly("tokens-increase");
	}

	@Test
	void morePermitsThanTheSemaphoreHasFail() {
		Observed observed = new Observed(
				List.of(clean(1, "sem", Family.PERMIT, 1, 0, 30), clean(2, "sem", Family.PERMIT, 2, 10, 30),
						clean(3, "sem", Family.PERMIT, 3, 20, 30)),
				List.of(), List.of(), Set.of(), Map.of("sem", 2), List.of());
		assertThat(failed(observed)).containsExactly("at-most-n-permits");
		// a permit reported lost (its lease ended under it) does not count
		Observed lost = new Observed(
				List.of(clean(1, "sem", Family.PERMIT, 1, 0, 30), clean(2, "sem", Family.PERMIT, 2, 10, 30),
						section(3, "sem", Family.PERMIT, "permit", 3, 20, 30L, true, true, true, true)),
				List.of(), List.of(), Set.of(), Map.of("sem", 2), List.of());
		assertThat(check(lost)).isEmpty();
	}

	@Test
	void twoEffectsOfOneKeyFail() {
		assertThat(failed(new Observed(List.of(), List.of(), List.of(new Effect("k", 1), new Effect("k", 2)), Set.of("k"),
				Map.of(), List.of())))
			.containsExactly("one-effect-per-key");
		assertThat(failed(new Observed(List.of(), List.of(), List.of(), Set.of("k"), Map.of(), List.of())))
			.containsExactly("one-effect-per-key");
	}

	@Test
	void aCallPastItsBoundFails() {
		long bound = 7_000_000_000L;
		Op slow = new Op(1, "n1", "LEASE tryAcquire", "x", 0, bound + Checker.BOUND_SLACK.toNanos() + 1, bound, "ok");
		assertThat(failed(new Observed(List.of(), List.of(slow), List.of(), Set.of(), Map.of(), List.of())))
			.containsExactly("call-bounds");
	}

	@Test
	void aBurstCallNotServedAlthoughItsWaitExceedsTheHoldsFails() {
		long bound = Checker.TURN_WAIT.plusSeconds(4).toNanos();
		Section first = section(1, "turn0", Family.EXCLUSIVE, Checker.TURN_CALL, 1024, 0, 20L, true, true, true, false);
		Section second = section(2, "turn0", Family.EXCLUSIVE, Checker.TURN_CALL, 2048, 30, 50L, true, true, true,
				false);
		String call = Checker.TURN_CALL + " (acquisition)";
		Op served = new Op(1, "n0-turn", call, "turn0", 0, 1_000_000_000L, bound, "ok");
		Op refused = new Op(2, "n0-turn", call, "turn0", 0, 10_000_000_000L, bound, "busy");
		assertThat(failed(new Observed(List.of(first, second), List.of(served, refused), List.of(), Set.of(), Map.of(),
				List.of())))
			.containsExactly("served-in-turn");
		// holds that use up the wait time excuse a refusal
		Section long1 = section(1, "turn0", Family.EXCLUSIVE, Checker.TURN_CALL, 1024, 0, 4_000L, true, true, true,
				false);
		Section long2 = section(2, "turn0", Family.EXCLUSIVE, Checker.TURN_CALL, 2048, 4_010, 8_000L, true, true, true,
				false);
		assertThat(check(new Observed(List.of(long1, long2), List.of(served, refused), List.of(), Set.of(), Map.of(),
				List.of())))
			.isEmpty();
	}

	@Test
	void aLockLeftHeldFails() {
		assertThat(failed(new Observed(List.of(), List.of(), List.of(), Set.of(), Map.of(), List.of("x held by n1"))))
			.containsExactly("nothing-left-locked");
	}

	/**
	 * A watched section (a renewed lease) from 0 to 1,000 ms by the JVM, whose lease ended under it: its exit write
	 * was rejected, and {@code onLost} ran at {@code lostAtMillis} (null: never).
	 */
	private static Section watched(long op, long token, @Nullable Long lostAtMillis) {
		return new Section(op, "n0", "x", Family.EXCLUSIVE, "LEASE acquire", token, at(0), at(1_000), true, false, true,
				true, 0L, millis(1_000), (lostAtMillis != null) ? millis(lostAtMillis) : null, true);
	}

	/** A clean section of another owner, granted at {@code grantedMillis} by the JVM and entered then. */
	private static Section grantedAt(long op, long token, long grantedMillis) {
		return new Section(op, "n1", "x", Family.EXCLUSIVE, "LEASE acquire", token, at(grantedMillis),
				at(grantedMillis + 10), true, true, true, false, millis(grantedMillis), millis(grantedMillis + 10), null,
				true);
	}

	private static long millis(long millis) {
		return millis * 1_000_000;
	}

	@Test
	void onLostThatRanBeforeAnotherOwnerWasGrantedPasses() {
		assertThat(check(sections(watched(1, 10, 299L), grantedAt(2, 11, 300)))).isEmpty();
		// within the slack for this JVM's scheduling
		assertThat(check(sections(watched(1, 10, 300 + Checker.LOSS_SLACK.toMillis()), grantedAt(2, 11, 300))))
			.isEmpty();
		// a lease with an explicit lease time is not watched: it ends without onLost
		Section explicit = new Section(1, "n0", "x", Family.EXCLUSIVE, "LEASE acquire (short lease)", 10, at(0),
				at(1_000), true, false, true, true, 0L, millis(1_000), null, false);
		assertThat(check(sections(explicit, grantedAt(2, 11, 300)))).isEmpty();
		// another owner granted after the holder gave the lock up
		assertThat(check(sections(watched(1, 10, null), grantedAt(2, 11, 1_001)))).isEmpty();
	}

	@Test
	void onLostThatRanAfterAnotherOwnerWasGrantedFails() {
		assertThat(failed(sections(watched(1, 10, 300 + Checker.LOSS_SLACK.toMillis() + 1), grantedAt(2, 11, 300))))
			.containsExactly("lost-before-grant");
		assertThat(failed(sections(watched(1, 10, null), grantedAt(2, 11, 300)))).containsExactly("lost-before-grant");
	}

	@Test
	void aForceReleasedHolderIsJudgedByTheActuatorsPromise() {
		// onLost at the next renewal, after the new owner's grant: the forced release, not the lease, freed it
		Observed told = new Observed(List.of(watched(1, 10, 600L), grantedAt(2, 2_000, 300)), List.of(), List.of(),
				Set.of(), Map.of(), List.of(), List.of(new Forced("x", 10 + 1_023, "n0 [t]", millis(250), millis(260))));
		assertThat(check(told)).isEmpty();
		// the force-released holder's hold was confirmed to its end
		Section confirmed = new Section(1, "n0", "x", Family.EXCLUSIVE, "LEASE acquire", 10, at(0), at(200), true, true,
				true, false, 0L, millis(200), null, true);
		Section earlier = clean(0, "x", Family.EXCLUSIVE, 5, -20, -10);
		Observed notTold = new Observed(List.of(earlier, confirmed), List.of(), List.of(), Set.of(), Map.of(),
				List.of(), List.of(new Forced("x", 10 + 1_023, "n0 [t]", millis(100), millis(110))));
		assertThat(failed(notTold)).containsExactly("force-release-told");
		// a holder that gave the lock up before the forced release began, a ShedLock holder and a PESSIMISTIC one
		// are not judged
		assertThat(check(new Observed(List.of(earlier, confirmed), List.of(), List.of(), Set.of(), Map.of(), List.of(),
				List.of(new Forced("x", 10 + 1_023, "n0 [t]", millis(300), millis(310)))))).isEmpty();
		assertThat(check(new Observed(List.of(earlier, confirmed), List.of(), List.of(), Set.of(), Map.of(), List.of(),
				List.of(new Forced("x", 10 + 1_023, "n0 [t] (ShedLock)", millis(100), millis(110)))))).isEmpty();
		// a lease its release handed over to the next waiter in line: the forced release freed the waiter, before its
		// take, not the releaser (the row keeps the releaser's token until then)
		assertThat(check(new Observed(List.of(earlier, confirmed), List.of(), List.of(), Set.of(), Map.of(), List.of(),
				List.of(new Forced("x", 10, Checker.HANDED_OVER_HOLDER, millis(100), millis(110)))))).isEmpty();
		Section pessimistic = new Section(1, "n0", "x", Family.EXCLUSIVE, "PESSIMISTIC acquire", 10, at(0), at(200),
				true, true, true, false, 0L, millis(200), null, false);
		assertThat(check(new Observed(List.of(earlier, pessimistic), List.of(), List.of(), Set.of(), Map.of(),
				List.of(), List.of(new Forced("x", 10, "n0 [t]", millis(100), millis(110)))))).isEmpty();
	}

	@Test
	void aForceReleasedLeasePassedInMemoryIsToldToTheThreadThatGivesItBack() {
		// n0's thread A hands the lease to thread B in memory (token + 1) after the forced release; n1 takes the lock
		// meanwhile: A's release, which went to nobody in the database, returned normally, and B's failed
		Section handedOn = new Section(1, "n0", "x", Family.EXCLUSIVE, "LEASE execute", 10, at(0), at(150), true, false,
				true, false, 0L, millis(150), null, true);
		Section other = new Section(3, "n1", "x", Family.EXCLUSIVE, "LEASE acquire", 2_000, at(120), at(180), true,
				true, true, false, millis(120), millis(180), null, true);
		Forced forced = new Forced("x", 10 + 1_023, "n0 [t]", millis(100), millis(110));
		Section gaveBack = new Section(2, "n0", "x", Family.EXCLUSIVE, "@DistributedLock", 11, at(155), at(200), false,
				false, true, true, millis(150), millis(200), null, true);
		assertThat(check(new Observed(List.of(handedOn, other, gaveBack), List.of(), List.of(), Set.of(), Map.of(),
				List.of(), List.of(forced)))).isEmpty();
		// the thread that gave the lease back confirmed its hold to the end: not told
		Section gaveBackConfirmed = new Section(2, "n0", "x", Family.EXCLUSIVE, "@DistributedLock", 11, at(155),
				at(200), false, false, true, false, millis(150), millis(200), null, true);
		assertThat(failed(new Observed(List.of(handedOn, other, gaveBackConfirmed), List.of(), List.of(), Set.of(),
				Map.of(), List.of(), List.of(forced)))).containsExactly("force-release-told");
		// without the forced release, the handed-on holder beside n1 breaks exclusion
		assertThat(failed(sections(handedOn, other, gaveBack))).contains("exclusion");
	}

	@Test
	void aForceReleasedLeasePassedInMemoryToATransactionThatRolledBackIsNotJudged() {
		// thread A hands the lease to thread B in memory; B's section runs in a transaction that rolls back (its
		// commit-time validation found the lock lost), so B does not count, yet B, not A, held the lease when it
		// was forced free: A's clean release, which went to nobody in the database, is no violation
		Section handedOn = new Section(1, "n0", "x", Family.EXCLUSIVE, "LEASE execute", 10, at(0), at(150), true, true,
				true, false, 0L, millis(150), null, true);
		Forced forced = new Forced("x", 10 + 1_023, "n0 [t]", millis(100), millis(110));
		Section rolledBack = new Section(2, "n0", "x", Family.EXCLUSIVE, "@DistributedLock", 11, at(155), at(200),
				false, false, false, false, millis(150), millis(200), null, true);
		assertThat(check(new Observed(List.of(handedOn, rolledBack), List.of(), List.of(), Set.of(), Map.of(),
				List.of(), List.of(forced)))).isEmpty();
	}

	@Test
	void twoTokenlessCleanSectionsAtOneInstantFail() {
		Section shedLock = section(1, "x", Family.EXCLUSIVE, "ShedLock lock", History.NO_TOKEN, 0, 20L, false, false,
				true, false);
		Section other = section(2, "x", Family.EXCLUSIVE, "ShedLock lock", History.NO_TOKEN, 10, 30L, false, false, true,
				false);
		assertThat(failed(sections(shedLock, other))).containsExactly("exclusion");
		// one after the other, and a token-less section beside a stale holder stopped by fencing, pass
		Section after = section(2, "x", Family.EXCLUSIVE, "ShedLock lock", History.NO_TOKEN, 20, 30L, false, false, true,
				false);
		Section stale = section(3, "x", Family.EXCLUSIVE, "LEASE acquire (short lease)", 10, 25, 40L, true, false, true,
				true);
		assertThat(check(sections(shedLock, after, stale))).isEmpty();
		// a ShedLock holder that a forced release freed is not told (its unlock only logs): it is not confirmed
		Section freed = new Section(1, "n0", "x", Family.EXCLUSIVE, "ShedLock lock", History.NO_TOKEN, at(0), at(20),
				false, false, true, false, 0L, millis(20), null, false);
		Section next = new Section(2, "n1", "x", Family.EXCLUSIVE, "LEASE acquire", 10, at(10), at(30), true, true,
				true, false, millis(10), millis(30), null, true);
		assertThat(failed(sections(freed, next))).containsExactly("exclusion");
		assertThat(check(new Observed(List.of(freed, next), List.of(), List.of(), Set.of(), Map.of(), List.of(),
				List.of(new Forced("x", 5, "n0 [checker-n0-1] (ShedLock)", millis(5), millis(8)))))).isEmpty();
	}

	private static Observed killedAt(long millis, String node, Section... sections) {
		return new Observed(List.of(sections), List.of(), List.of(), Set.of(), Map.of("sem", 1), List.of(),
				Map.of(node, at(millis)), List.of());
	}

	@Test
	void aKilledHoldersOpenSectionLastsUntilItsLeaseCouldHaveEnded() {
		// op 1 (node n1) entered at 0 and its process was SIGKILLed at 100: no exit
		Section open = section(1, "x", Family.EXCLUSIVE, "LEASE acquire", 10, 0, null, true, null, true, false);
		// the next holder enters after the kill with a larger token: passes, though it is inside the dead holder's lease
		assertThat(check(killedAt(100, "n1", open, clean(2, "x", Family.EXCLUSIVE, 11, 150, 200)))).isEmpty();
		// nor does one that entered while the killed holder still lived: its lease may have ended under it (a short
		// lease under a long hold) without the library telling it before the kill
		assertThat(check(killedAt(100, "n1", open, clean(2, "x", Family.EXCLUSIVE, 11, 50, 200)))).isEmpty();
		// but then its token must be larger
		assertThat(failed(killedAt(100, "n1", open, clean(2, "x", Family.EXCLUSIVE, 9, 50, 200))))
			.contains("exclusion", "tokens-increase");
		// after the kill, within the lease, a later holder whose token is not larger and whose write was accepted
		assertThat(failed(killedAt(100, "n1", open, clean(2, "x", Family.EXCLUSIVE, 9, 150, 200))))
			.contains("exclusion", "tokens-increase");
		// once the lease could have ended, the dead holder is gone: only the token order is left to check
		assertThat(failed(killedAt(100, "n1", open, clean(2, "x", Family.EXCLUSIVE, 9, 1_200, 1_300))))
			.containsExactly("tokens-increase");
	}

	@Test
	void anOpenSectionOfALiveProcessFails() {
		Section open = section(1, "x", Family.EXCLUSIVE, "LEASE acquire", 10, 0, null, true, null, true, false);
		assertThat(failed(sections(open))).containsExactly("every-section-ends");
		// the same section of a killed process is no violation
		assertThat(check(killedAt(100, "n1", open))).isEmpty();
		// the kill of another node does not excuse it
		assertThat(failed(killedAt(100, "n2", open))).containsExactly("every-section-ends");
		// a transactional section that rolled back (its work threw before the exit) does not count
		Section rolledBack = section(1, "x", Family.EXCLUSIVE, "OPTIMISTIC execute", 10, 0, null, false, null, false,
				false);
		assertThat(check(sections(rolledBack))).isEmpty();
	}

	@Test
	void aKilledPermitHolderDoesNotCount() {
		Section open = section(1, "sem", Family.PERMIT, "permit", 1, 0, null, true, null, true, false);
		assertThat(check(killedAt(100, "n1", open, clean(2, "sem", Family.PERMIT, 2, 50, 200)))).isEmpty();
		// two clean permits of a 1-permit semaphore beside it still fail
		assertThat(failed(killedAt(100, "n1", open, clean(2, "sem", Family.PERMIT, 2, 50, 200),
				clean(3, "sem", Family.PERMIT, 3, 60, 200))))
			.containsExactly("at-most-n-permits");
	}

	@Test
	void aCallIsBoundedWhileItsJvmRan() {
		long bound = 7_000_000_000L;
		long slow = bound + Checker.BOUND_SLACK.toNanos() + 1;
		// 3 s of it with the caller's JVM stopped (SIGSTOP): within the bound
		Op stopped = new Op(1, "n1", "LEASE tryAcquire", "x", 0, slow, bound, "ok", 3_000_000_000L);
		assertThat(check(new Observed(List.of(), List.of(stopped), List.of(), Set.of(), Map.of(), List.of()))).isEmpty();
		Op running = new Op(1, "n1", "LEASE tryAcquire", "x", 0, slow + 3_000_000_000L, bound, "ok", 3_000_000_000L);
		assertThat(failed(new Observed(List.of(), List.of(running), List.of(), Set.of(), Map.of(), List.of())))
			.containsExactly("call-bounds");
	}

	private static History.RowChange change(long id, long atMillis, String oldOwner, Long oldExpiresMillis,
			String waiting, String newOwner, long newToken) {
		return new History.RowChange(id, "x", at(atMillis), oldOwner,
				(oldExpiresMillis != null) ? at(oldExpiresMillis) : null, waiting, newOwner, newToken);
	}

	private static Observed rows(List<History.RowChange> changes, Section... sections) {
		return new Observed(List.of(sections), List.of(), List.of(), Set.of(), Map.of(), List.of(), Map.of(), changes);
	}

	@Test
	void theLockRowsHistoryMustShowNoTakeOfARunningLease() {
		List<History.RowChange> orderly = List.of(change(1, 0, null, null, null, "a", 2047),
				change(2, 100, "a", 1_000L, null, "a", 2047), // a renewal
				change(3, 1_100, "a", 1_000L, null, "b", 3071), // the lease had ended
				change(4, 1_200, "b", 2_100L, "c", "c", 3071), // a release handing the lock to the waiter
				change(5, 1_300, "c", 2_200L, null, null, 3071)); // a release
		Section a = clean(1, "x", Family.EXCLUSIVE, 1024, 10, 90);
		Section b = clean(2, "x", Family.EXCLUSIVE, 2048, 1_110, 1_190);
		assertThat(check(rows(orderly, a, b))).isEmpty();
		List<History.RowChange> live = List.of(change(1, 0, null, null, null, "a", 2047),
				change(2, 500, "a", 1_000L, null, "b", 3071));
		assertThat(failed(rows(live, a))).containsExactly("lease-history");
		// a LEASE section whose token no take reserved
		assertThat(failed(rows(orderly, a, clean(3, "x", Family.EXCLUSIVE, 5000, 1_310, 1_320))))
			.containsExactly("lease-history");
	}

	@Test
	void theReportNamesTheSeedTheQuoteAndTheSlice() {
		List<Section> many = new ArrayList<>();
		for (int i = 0; i < 10; i++) {
			many.add(clean(i, "x", Family.EXCLUSIVE, 10 + i, i * 10L, i * 10L + 5));
		}
		many.add(clean(100, "x", Family.EXCLUSIVE, 15, 52, 53)); // beside op 5, which holds token 15 from 50 to 55
		Observed observed = new Observed(many, List.of(new Op(100, "n1", "LEASE acquire", "x", 0, 1, 0, "ok")),
				List.of(), Set.of(), Map.of(), List.of());
		String report = Checker.report(1234, observed, Checker.check(observed));
		assertThat(report).contains("seed 1234", "-Dlock.checker.seed=1234", "[exclusion]", "op=100", "op=3 ", "op=7 ")
			.doesNotContain("op=1 ", "op=9 ");
	}

	@Test
	void everyQuoteAppearsVerbatimInItsDocument() throws Exception {
		for (Invariant invariant : Checker.INVARIANTS) {
			String text = Files.readString(Path.of("..", invariant.document()), StandardCharsets.UTF_8);
			assertThat(normalized(text)).as("%s quotes %s", invariant.name(), invariant.document())
				.contains(normalized(invariant.quote()));
		}
	}

	private static String normalized(String text) {
		return text.replaceAll("\\s+", " ");
	}

}
