package io.github.dblock.reliability;

import java.time.LocalDateTime;
import java.util.List;

import io.github.dblock.reliability.SoakCheck.Fault;
import io.github.dblock.reliability.SoakCheck.FaultKind;
import io.github.dblock.reliability.SoakCheck.Result;
import io.github.dblock.reliability.SoakCheck.RowChange;
import io.github.dblock.reliability.SoakCheck.Section;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link SoakCheck} on made-up traces: it must fail real overlaps, takes of a running lease, late writes that were
 * accepted and unexplained token decreases, and must count stale holders apart without failing.
 */
class SoakCheckTests {

	private static final LocalDateTime T0 = LocalDateTime.of(2026, 1, 1, 0, 0);

	private static final String A = "aaaaaaaa-0000-0000-0000-000000000000";

	private static final String B = "bbbbbbbb-0000-0000-0000-000000000000";

	private static LocalDateTime at(long millis) {
		return T0.plusNanos(millis * 1_000_000);
	}

	private static Section section(long id, String holder, long token, long entered, Long exited, Integer wrote) {
		return new Section(id, "r", holder, token, at(entered), (exited != null) ? at(exited) : null, wrote, null);
	}

	/** A takes block 1024 at 0 (lease 2 s) and releases at 10; B takes block 2048 at 20 (lease 2 s). */
	private static List<RowChange> releasedThenTaken() {
		return List.of(new RowChange(1, "r", at(0), null, null, null, null, A, 1024, at(2_000)),
				new RowChange(2, "r", at(10), A, 1024L, at(2_000), null, null, 1024, at(10)),
				new RowChange(3, "r", at(20), null, 1024L, at(10), null, B, 2048, at(2_020)));
	}

	@Test
	void sequentialSectionsPass() {
		Result result = SoakCheck.check(true, List.of(section(1, "process-1/0", 1001, 1, 9L, 1),
				section(2, "process-2/0", 2025, 21, 30L, 1)), releasedThenTaken(), List.of());
		assertThat(result.failures()).isEmpty();
		assertThat(result.overlaps).isZero();
		assertThat(result.staleSections).isZero();
		assertThat(result.naiveOverlaps).isZero();
	}

	@Test
	void twoValidLeaseSectionsAtOnceAreAnOverlap() {
		// A's section runs past its release in the history's order... no: A's lease is valid to 10, and a local
		// successor of A (same block) enters at 5 while A's first holder is still inside: both valid
		Result result = SoakCheck.check(true, List.of(section(1, "process-1/0", 1001, 1, 9L, 1),
				section(2, "process-1/1", 1002, 5, 8L, 1)), releasedThenTaken(), List.of());
		assertThat(result.overlaps).isEqualTo(1);
		assertThat(result.failures()).isNotEmpty();
	}

	@Test
	void aReleaseThatHandsTheLeaseOverAndSetsTheTokenBackIsNoTakeAndTheNextBlockStartsAfterIt() {
		// A takes block 1024 (tokens from 1) at 0 and hands out 1 and 2; its release at 10 hands the lease to B, the
		// waiter next in line, setting the token back to 2; B takes its own row at 12: block 1026, its token 3
		List<RowChange> history = List.of(new RowChange(1, "r", at(0), null, null, null, null, A, 1024, at(2_000)),
				new RowChange(2, "r", at(10), A, 1024L, at(2_000), B, B, 2, at(1_010)),
				new RowChange(3, "r", at(12), B, 2L, at(1_010), null, B, 1026, at(2_012)));
		Result result = SoakCheck.check(true, List.of(section(1, "process-1/0", 1, 1, 4L, 1),
				section(2, "process-1/1", 2, 5, 9L, 1), section(3, "process-2/0", 3, 13, 20L, 1)), history, List.of());
		assertThat(result.failures()).isEmpty();
		assertThat(result.liveTakes).isZero();
		assertThat(result.withoutLease).isZero();
		assertThat(result.staleSections).as("each section within its own lease").isZero();
	}

	@Test
	void aTakeOfARunningLeaseFailsEvenThoughTheIntervalsLookStale() {
		// B takes the row at 20 while A's lease runs to 2,000 and A is inside to 30: the history's own order would end
		// A's lease at B's take, so the take itself must be caught
		List<RowChange> history = List.of(new RowChange(1, "r", at(0), null, null, null, null, A, 1024, at(2_000)),
				new RowChange(2, "r", at(20), A, 1024L, at(2_000), null, B, 2048, at(2_020)));
		Result result = SoakCheck.check(true, List.of(section(1, "process-1/0", 1001, 1, 30L, 1),
				section(2, "process-2/0", 2025, 21, 25L, 1)), history, List.of());
		assertThat(result.liveTakes).isEqualTo(1);
		assertThat(result.failures()).anySatisfy((f) -> assertThat(f).contains("takes of a lease"));
	}

	@Test
	void aHolderPausedPastItsLeaseIsStaleNotAnOverlapAndItsLateWriteMustBeRejected() {
		// A takes at 0 with a 2 s lease, is SIGSTOPped at 1 and resumes at 3,000; B takes the expired lease at 2,100,
		// enters, writes and leaves; A enters at 3,010, while B's successor section runs, and writes with its old token
		List<RowChange> history = List.of(new RowChange(1, "r", at(0), null, null, null, null, A, 1024, at(2_000)),
				new RowChange(2, "r", at(2_100), A, 1024L, at(2_000), null, B, 2048, at(4_100)));
		List<Fault> faults = List.of(new Fault(FaultKind.SIGSTOP, "process-1", at(1), at(3_000)));
		Section late = section(1, "process-1/0", 1001, 3_010, 3_020L, 0);
		Section next = section(2, "process-2/0", 2025, 2_110, 2_120L, 1);
		Section nextLocal = section(3, "process-2/1", 2026, 3_005, 3_030L, 1);
		Result result = SoakCheck.check(true, List.of(late, next, nextLocal), history, faults);
		assertThat(result.failures()).isEmpty();
		assertThat(result.overlaps).isZero();
		assertThat(result.staleSections).isEqualTo(1);
		assertThat(result.staleAfterFault).isEqualTo(1);
		assertThat(result.staleWritesRejected).isEqualTo(1);
		assertThat(result.naiveOverlaps).as("what the old check called an overlap").isEqualTo(1);
		// the same trace with the late write accepted fails
		Section accepted = section(1, "process-1/0", 1001, 3_010, 3_020L, 1);
		assertThat(SoakCheck.check(true, List.of(accepted, next, nextLocal), history, faults).staleWritesAccepted)
			.isEqualTo(1);
	}

	@Test
	void aLeaseSectionWithoutALeaseInTheHistoryFails() {
		Result result = SoakCheck.check(true, List.of(section(1, "process-1/0", 5_000, 1, 2L, 1)), releasedThenTaken(),
				List.of());
		assertThat(result.withoutLease).isEqualTo(1);
		assertThat(result.failures()).isNotEmpty();
	}

	@Test
	void pessimisticSectionsAtOnceAreAnOverlapUnlessTheFirstLostItsSessionToAFault() {
		Section first = section(1, "process-1/0", 10, 0, 50L, 1);
		Section second = section(2, "process-2/0", 11, 20, 30L, 1);
		assertThat(SoakCheck.check(false, List.of(first, second), List.of(), List.of()).overlaps).isEqualTo(1);
		// its connection killed at 10 and its call failed: the row lock ended at 10
		Section lost = new Section(1, "r", "process-1/0", 10, at(0), at(50), 1, "LockLostException");
		List<Fault> kill = List.of(new Fault(FaultKind.KILL_CONNECTION, "process-1", at(10), at(10)));
		Result result = SoakCheck.check(false, List.of(lost, second), List.of(), kill);
		assertThat(result.failures()).isEmpty();
		assertThat(result.staleSections).isEqualTo(1);
		// a killed connection of another process explains nothing
		List<Fault> elsewhere = List.of(new Fault(FaultKind.KILL_CONNECTION, "process-3", at(10), at(10)));
		assertThat(SoakCheck.check(false, List.of(lost, second), List.of(), elsewhere).overlaps).isEqualTo(1);
	}

	/**
	 * The 2026-11-26 soak's two PESSIMISTIC/SERVER_CLOCK "overlaps": a lock session killed after the row lock was
	 * granted but before the section's entry record (written on another connection) reached the server. The kill's
	 * time, read just before it was sent, is then earlier than the entry; the holder's call failed at its commit.
	 */
	@Test
	void aPessimisticSessionKilledBetweenTheGrantAndTheEntryRecordIsALostLockNotAnOverlap() {
		Section before = section(1, "process-1/0", 5, 0, 8L, 1); // the same thread's previous section
		Section lost = new Section(2, "r", "process-1/0", 10, at(10), at(14), 1, "TransactionSystemException");
		Section next = section(3, "process-2/0", 11, 12, 16L, 1);
		List<Fault> killedBeforeEntry = List.of(new Fault(FaultKind.KILL_CONNECTION, "process-1", at(9), at(9)));
		Result result = SoakCheck.check(false, List.of(before, lost, next), List.of(), killedBeforeEntry);
		assertThat(result.failures()).isEmpty();
		assertThat(result.staleSections).isEqualTo(1);
		// a kill before the thread's previous section ended cannot have taken this section's lock
		List<Fault> tooEarly = List.of(new Fault(FaultKind.KILL_CONNECTION, "process-1", at(7), at(7)));
		assertThat(SoakCheck.check(false, List.of(before, lost, next), List.of(), tooEarly).overlaps).isEqualTo(1);
		// nor does one before the entry of a section whose call succeeded
		Section succeeded = section(2, "process-1/0", 10, 10, 14L, 1);
		assertThat(SoakCheck.check(false, List.of(before, succeeded, next), List.of(), killedBeforeEntry).overlaps)
			.isEqualTo(1);
	}

	@Test
	void tokenDecreasesFailUnlessTheEarlierHolderFailedOrWasKilled() {
		Section first = section(1, "process-1/0", 20, 0, 5L, 1);
		Section second = section(2, "process-2/0", 15, 10, 15L, 0);
		Result result = SoakCheck.check(false, List.of(first, second), List.of(), List.of());
		assertThat(result.tokenDecreasesUnexplained).isEqualTo(1);
		assertThat(result.failures()).isNotEmpty();
		Section killed = new Section(1, "r", "process-1/0", 20, at(0), null, null, null);
		Result explained = SoakCheck.check(false, List.of(killed, second), List.of(),
				List.of(new Fault(FaultKind.SIGKILL, "process-1", at(5), at(5))));
		assertThat(explained.failures()).isEmpty();
		assertThat(explained.tokenDecreasesExplained).isEqualTo(1);
	}

	@Test
	void aSectionWhoseExitTheServerDidNotRecordEndsWhenTheRestartedServerWasBack() {
		// entered after the test read the restart's start, before the server had shut down; the exit record failed
		Section section = new Section(1, "r", "process-1/0", 10, at(5), null, null, "CommunicationsException");
		Result result = SoakCheck.check(false, List.of(section, section(2, "process-2/0", 11, 70, 80L, 1)), List.of(),
				List.of(new Fault(FaultKind.RESTART, null, at(4), at(60))));
		assertThat(result.failures()).isEmpty();
		assertThat(result.unclosed).isZero();
		assertThat(result.naiveOverlaps).isZero();
		// its entry's reply lost in the shutdown (no failure recorded against it): its row lock ended with the server,
		// so a holder that got in before the test saw the server back is not an overlap
		Section unknown = new Section(1, "r", "process-1/0", 10, at(5), null, null, null);
		Result early = SoakCheck.check(false, List.of(unknown, section(2, "process-2/0", 11, 50, 55L, 1)), List.of(),
				List.of(new Fault(FaultKind.RESTART, null, at(4), at(60))));
		assertThat(early.failures()).isEmpty();
		assertThat(early.staleSections).isEqualTo(1);
	}

	@Test
	void aSectionEnteredJustAfterItsProcessWasKilledEndsAtItsEntry() {
		// the kill's time was read at 10; the entry, already sent, reached the server at 12
		Section section = new Section(1, "r", "process-1/0", 10, at(12), null, null, null);
		Result result = SoakCheck.check(false, List.of(section, section(2, "process-2/0", 11, 20, 30L, 1)), List.of(),
				List.of(new Fault(FaultKind.SIGKILL, "process-1", at(10), at(10))));
		assertThat(result.failures()).isEmpty();
		assertThat(result.naiveOverlaps).isZero();
	}

	@Test
	void aSectionOfALiveWorkerThatNeverLeftFails() {
		Result result = SoakCheck.check(false, List.of(section(1, "process-1/0", 1, 0, null, null)), List.of(),
				List.of());
		assertThat(result.unclosed).isEqualTo(1);
		assertThat(result.failures()).isNotEmpty();
	}

}
