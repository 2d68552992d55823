package io.github.dblock.reliability;

import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.jspecify.annotations.Nullable;

/**
 * The check of one soak run, on the database server's clock, separate from the run so that it can be tested on
 * made-up traces ({@code SoakCheckTests}).
 * <p>
 * Input: the critical sections the workers recorded (entry and exit on the server clock, fencing token, outcome of
 * the fenced write, whether the call failed afterwards), the faults the test injected (with server-clock times), and
 * for LEASE the history of the lock rows, written by a trigger on the lock table ({@code UTC_TIMESTAMP(6)} of each
 * statement, the same clock the lock's own statements read, with the old and the new owner, token and expiry).
 * <p>
 * How long a holder's lock was valid ({@link Section#validUntil}):
 * <ul>
 * <li>LEASE: from the history. A lease is one (owner token, token block) of the row; it is valid from the statement
 * that gave it until the row changes to another owner or block, or until its last expiry, whichever is first. A
 * section's lease is the first one whose block ({@code token - 1023 .. token}) holds the section's token (the next
 * ones with the same block are a hand-over to a waiter next in line, which takes a block of its own before its
 * section). Independently, every change of owner in the history must find the previous lease ended or released by its
 * owner: a take of a lease still running counts as {@link Result#liveTakes} and fails the run, since the interval
 * check alone would take such a take's end as the old lease's end.</li>
 * <li>PESSIMISTIC: the row lock lasts until the holder's transaction ends, which the history cannot show. It counts as
 * valid to the end of the section, unless the holder's call failed afterwards (its lock was lost) and a fault that
 * ends sessions hit its process during the section (its connection killed, the server restarted, a partition), or
 * its exit could not be recorded and such a fault was under way: then until that fault's start (or the entry, for a
 * restart read as begun just before the entry: a server shutting down still takes statements for a moment). "During"
 * starts where the lock may have been granted: after the same thread's previous section ended, since the entry
 * record goes over another connection, and a session killed between the grant and that record is killed before the
 * entry on the server clock (the likely cause of the 2026-11-26 soak's two PESSIMISTIC/SERVER_CLOCK findings, each a
 * section whose commit then failed).</li>
 * </ul>
 * Then, per resource, in order of entry: a section that entered while another section still ran <em>and</em> both
 * locks were valid at that moment is an {@linkplain Result#overlaps overlap} (the run fails). When one of them was no
 * longer valid (entered after its lease had ended, or still running after its lease had ended), it is a
 * {@linkplain Result#staleSections stale section}: a holder the lock could not stop (paused past its lease, or cut off
 * from the database), which fencing is for. Fenced writes are checked against the tokens: a write made after a
 * section with a larger token of the same resource had finished (and so had written) must have been rejected
 * ({@link Result#staleWritesAccepted} otherwise, which fails the run); {@link Result#staleWritesRejected} counts the
 * rejections. Tokens of valid sections must increase in the order of entry; a decrease next to a section that failed
 * or whose process was killed is the documented rolled-back token write of durable PESSIMISTIC fencing and is counted
 * ({@link Result#tokenDecreasesExplained}); any other fails the run.
 */
final class SoakCheck {

	/**
	 * LEASE takes reserve blocks of this many tokens, the row keeping the last while the lease runs
	 * ({@code LeaseLockProvider.TOKEN_BLOCK}); the taker's token is the first. The release sets the row back to the last
	 * token handed out, so the next block starts right after it: blocks are told apart by their first token.
	 */
	static final long LEASE_TOKEN_BLOCK = 1024;

	static final LocalDateTime NEVER = LocalDateTime.MAX;

	private SoakCheck() {
	}

	/** A kind of injected fault. */
	enum FaultKind {

		SIGKILL(true), SIGSTOP(false), KILL_CONNECTION(true), PARTITION(true), RESTART(true);

		/** Whether the fault ends the server sessions of the processes it hits (a PESSIMISTIC row lock with them). */
		final boolean endsSessions;

		FaultKind(boolean endsSessions) {
			this.endsSessions = endsSessions;
		}

	}

	/**
	 * One injected fault, on the server clock.
	 * @param process the process hit ({@code process-<pid>}), {@code null} for all
	 * @param start taken just before the fault was injected
	 * @param end when it was over (the server back, the process resumed); {@code start} for instant ones
	 */
	record Fault(FaultKind kind, @Nullable String process, LocalDateTime start, LocalDateTime end) {

		boolean hits(String holderProcess) {
			return this.process == null || this.process.equals(holderProcess);
		}

	}

	/** One critical section as recorded; {@code exited} {@code null} if never recorded. */
	record Section(long id, String resource, String holder, long token, LocalDateTime entered,
			@Nullable LocalDateTime exited, @Nullable Integer wrote, @Nullable String failed) {

		String process() {
			int slash = this.holder.indexOf('/');
			return (slash < 0) ? this.holder : this.holder.substring(0, slash);
		}

	}

	/** One change of a lock row (a trigger's record): the statement's server time, the old and the new values. */
	record RowChange(long id, String resource, LocalDateTime at, @Nullable String oldOwner, @Nullable Long oldToken,
			@Nullable LocalDateTime oldExpires, @Nullable String oldWaitingOwner, @Nullable String newOwner,
			long newToken, LocalDateTime newExpires) {
	}

	/** A LEASE as the history shows it. */
	record Lease(String owner, long blockEnd, LocalDateTime start, LocalDateTime end) {
	}

	/** The figures and the findings; {@link #failures()} empty means the run passed. */
	static final class Result {

		long sections;

		long overlaps;

		long staleSections;

		/** Stale sections with a fault of their process (or of all) between their lock's start and their entry or end. */
		long staleAfterFault;

		long staleWritesRejected;

		long staleWritesAccepted;

		/** Writes of valid holders that were rejected (the other side of a token decrease). */
		long validWritesRejected;

		long liveTakes;

		long tokenDecreasesExplained;

		long tokenDecreasesUnexplained;

		long unclosed;

		/** LEASE sections whose token no lease of the history holds. */
		long withoutLease;

		/** What the check of the issue-20 soak counted: a section entered before the previous one left. */
		long naiveOverlaps;

		final List<String> findings = new ArrayList<>();

		final List<String> staleExamples = new ArrayList<>();

		List<String> failures() {
			List<String> failures = new ArrayList<>();
			if (this.overlaps > 0) {
				failures.add(this.overlaps + " overlaps (a section entered while another holder's lock was valid)");
			}
			if (this.liveTakes > 0) {
				failures.add(this.liveTakes + " takes of a lease that was still running");
			}
			if (this.staleWritesAccepted > 0) {
				failures.add(this.staleWritesAccepted + " fenced writes accepted after a larger token had been written");
			}
			if (this.tokenDecreasesUnexplained > 0) {
				failures.add(this.tokenDecreasesUnexplained + " token decreases between valid holders");
			}
			if (this.unclosed > 0) {
				failures.add(this.unclosed + " sections of live workers never left");
			}
			if (this.withoutLease > 0) {
				failures.add(this.withoutLease + " LEASE sections whose token no lease in the history holds");
			}
			if (this.sections == 0) {
				failures.add("no sections at all");
			}
			return failures;
		}

		void add(Result other) {
			this.sections += other.sections;
			this.overlaps += other.overlaps;
			this.staleSections += other.staleSections;
			this.staleAfterFault += other.staleAfterFault;
			this.staleWritesRejected += other.staleWritesRejected;
			this.staleWritesAccepted += other.staleWritesAccepted;
			this.validWritesRejected += other.validWritesRejected;
			this.liveTakes += other.liveTakes;
			this.tokenDecreasesExplained += other.tokenDecreasesExplained;
			this.tokenDecreasesUnexplained += other.tokenDecreasesUnexplained;
			this.unclosed += other.unclosed;
			this.withoutLease += other.withoutLease;
			this.naiveOverlaps += other.naiveOverlaps;
			other.findings.stream().limit(Math.max(0, 40 - this.findings.size())).forEach(this.findings::add);
			other.staleExamples.stream().limit(Math.max(0, 10 - this.staleExamples.size())).forEach(this.staleExamples::add);
		}

	}

	/**
	 * Checks one resource.
	 * @param lease whether the sections are LEASE sections ({@code history} then gives their validity)
	 * @param sections the resource's sections, any order
	 * @param history the resource's row changes, any order (ordered by id here)
	 * @param faults every fault of the run
	 */
	static Result check(boolean lease, List<Section> sections, List<RowChange> history, List<Fault> faults) {
		Result result = new Result();
		result.sections = sections.size();
		java.util.TreeMap<Long, Lease> byBlockStart = new java.util.TreeMap<>();
		if (lease) {
			leases(history, result)
				.forEach((l) -> byBlockStart.putIfAbsent(l.blockEnd() - (LEASE_TOKEN_BLOCK - 1), l));
		}
		// the end of each section (recorded, or from the faults) and of its lock's validity
		Map<Long, LocalDateTime> end = new LinkedHashMap<>();
		Map<Long, LocalDateTime> validFrom = new LinkedHashMap<>();
		Map<Long, LocalDateTime> validUntil = new LinkedHashMap<>();
		// per holder (process/thread, whose sections follow one another): the end of its latest section so far
		Map<String, LocalDateTime> previousEnd = new java.util.HashMap<>();
		List<Section> ordered = new ArrayList<>(sections);
		ordered.sort(Comparator.comparing(Section::entered).thenComparingLong(Section::id));
		for (Section s : ordered) {
			LocalDateTime exited = s.exited();
			// a process is SIGKILLed once: its section ended there, or at its entry if the entry was still on its way to
			// the server when the test read the kill's time
			LocalDateTime killed = faults.stream()
				.filter((f) -> f.kind() == FaultKind.SIGKILL && s.process().equals(f.process()))
				.map(Fault::start)
				.findFirst()
				.orElse(null);
			if (killed != null && (exited == null || killed.isBefore(exited))) {
				exited = killed.isBefore(s.entered()) ? s.entered() : killed;
			}
			if (exited == null) {
				// its exit could not be recorded: the server went down (it still takes statements for a moment after the
				// test read the restart's start); the section ended by the time the server was back
				Fault restart = faults.stream()
					.filter((f) -> f.kind() == FaultKind.RESTART && !f.end().isBefore(s.entered()))
					.min(Comparator.comparing(Fault::start))
					.orElse(null);
				if (restart != null) {
					exited = restart.end();
				}
			}
			if (exited == null) {
				result.unclosed++;
				result.findings.add("never left: " + s);
				exited = NEVER;
			}
			end.put(s.id(), exited);
			LocalDateTime previous = previousEnd.put(s.holder(), exited);
			if (lease) {
				Map.Entry<Long, Lease> block = byBlockStart.floorEntry(s.token());
				Lease own = (block != null && s.token() <= block.getValue().blockEnd()) ? block.getValue() : null;
				if (own == null) {
					result.withoutLease++;
					result.findings.add("no lease holds the token of " + s);
					validFrom.put(s.id(), s.entered());
					validUntil.put(s.id(), NEVER);
				}
				else {
					validFrom.put(s.id(), own.start());
					validUntil.put(s.id(), own.end());
				}
			}
			else {
				LocalDateTime until = NEVER;
				// lost with its session: the call failed afterwards, or the exit could not be recorded (the server went
				// down, or the reply to the entry record was lost and the worker never learnt the section's id)
				if (s.failed() != null || s.exited() == null) {
					// the row lock was granted at an unrecorded time after the thread's previous section ended and
					// before this one's entry record reached the server (on another connection): a fault from then on
					// may have ended it
					// (a thread's first section: from its entry, as before, rather than from the start of the run,
					// which would let any early fault of the process excuse an overlap)
					LocalDateTime granted = (previous != null) ? previous : s.entered();
					for (Fault f : faults) {
						// under way at some point of the section or between the grant and the entry record (a session
						// killed there, a server that still took statements while shutting down): ends the lock at the
						// entry at the latest
						LocalDateTime from = f.start().isBefore(s.entered()) ? s.entered() : f.start();
						if (f.kind().endsSessions && f.hits(s.process()) && !f.end().isBefore(granted)
								&& f.start().isBefore(exited) && from.isBefore(until)) {
							until = from;
						}
					}
				}
				validFrom.put(s.id(), s.entered());
				validUntil.put(s.id(), until);
			}
		}
		Set<Long> stale = new LinkedHashSet<>();
		Set<Long> exampled = new java.util.HashSet<>();
		for (Section s : ordered) {
			if (!s.entered().isBefore(validUntil.get(s.id()))) {
				stale.add(s.id());
			}
		}
		// sweep in order of entry: who was still inside when each section entered
		List<Section> inside = new ArrayList<>();
		LocalDateTime busyUntil = LocalDateTime.MIN;
		for (Section b : ordered) {
			if (b.entered().isBefore(busyUntil)) {
				result.naiveOverlaps++;
			}
			if (end.get(b.id()).isAfter(busyUntil)) {
				busyUntil = end.get(b.id());
			}
			inside.removeIf((a) -> !end.get(a.id()).isAfter(b.entered()));
			for (Section a : inside) {
				boolean aValid = b.entered().isBefore(validUntil.get(a.id()));
				boolean bValid = b.entered().isBefore(validUntil.get(b.id()));
				if (aValid && bValid) {
					result.overlaps++;
					result.findings.add("overlap: " + b + " entered while " + a + " held a valid lock (valid until "
							+ validUntil.get(a.id()) + ")");
				}
				else {
					if (!aValid) {
						stale.add(a.id());
					}
					if (!bValid) {
						stale.add(b.id());
					}
					Section late = aValid ? b : a;
					if (result.staleExamples.size() < 10 && exampled.add(late.id())) {
						result.staleExamples.add("stale: " + late + " (lock valid " + validFrom.get(late.id()) + " .. "
								+ validUntil.get(late.id()) + ", faults of its process meanwhile: "
								+ faultsBetween(faults, late, validFrom.get(late.id()), end.get(late.id())) + ") overlapped "
								+ (aValid ? a : b));
					}
				}
			}
			inside.add(b);
		}
		result.staleSections = stale.size();
		for (Section s : ordered) {
			if (stale.contains(s.id()) && !faultsBetween(faults, s, validFrom.get(s.id()), end.get(s.id())).isEmpty()) {
				result.staleAfterFault++;
			}
		}
		// fenced writes: a write after a larger token had been written (by a section that left before this one
		// entered: each writes before it leaves) must be rejected
		List<Section> byExit = new ArrayList<>(ordered.stream().filter((n) -> n.wrote() != null && n.exited() != null)
			.toList());
		byExit.sort(Comparator.comparing(Section::exited));
		int next = 0;
		long largestWritten = Long.MIN_VALUE;
		for (Section s : ordered) {
			while (next < byExit.size() && byExit.get(next).exited().isBefore(s.entered())) {
				largestWritten = Math.max(largestWritten, byExit.get(next++).token());
			}
			if (s.wrote() == null) {
				continue;
			}
			if (largestWritten > s.token() && s.wrote() != 0) {
				result.staleWritesAccepted++;
				result.findings.add("fenced write accepted after token " + largestWritten + " had been written: " + s);
			}
			if (s.wrote() == 0) {
				if (stale.contains(s.id())) {
					result.staleWritesRejected++;
				}
				else {
					result.validWritesRejected++;
				}
			}
		}
		// tokens of valid sections increase in the order of entry
		Section previous = null;
		for (Section s : ordered) {
			if (stale.contains(s.id())) {
				continue;
			}
			if (previous != null && s.token() <= previous.token()) {
				Section before = previous;
				boolean explained = before.failed() != null || faults.stream()
					.anyMatch((f) -> f.kind() == FaultKind.SIGKILL && before.process().equals(f.process()));
				if (explained) {
					result.tokenDecreasesExplained++;
				}
				else {
					result.tokenDecreasesUnexplained++;
					result.findings.add("token decrease: " + s + " after " + before);
				}
			}
			previous = s;
		}
		return result;
	}

	/** The leases of one resource's history, in order; counts takes of a running lease into {@code result}. */
	static List<Lease> leases(List<RowChange> history, Result result) {
		List<RowChange> changes = new ArrayList<>(history);
		changes.sort(Comparator.comparingLong(RowChange::id));
		List<Lease> leases = new ArrayList<>();
		String owner = null;
		long block = 0;
		LocalDateTime start = null;
		LocalDateTime expires = null;
		for (RowChange c : changes) {
			boolean sameLease = owner != null && owner.equals(c.newOwner()) && block == c.newToken();
			if (sameLease) {
				expires = c.newExpires(); // a renewal (or an extension)
				continue;
			}
			boolean ownerChanged = c.oldOwner() != null && !c.oldOwner().equals(c.newOwner());
			// a release that hands the lease to the waiter next in line, setting the token back to the last one handed out
			boolean handOver = c.newOwner() != null && c.newOwner().equals(c.oldWaitingOwner())
					&& c.oldToken() != null && c.newToken() <= c.oldToken();
			boolean released = c.newOwner() == null;
			if (ownerChanged && !handOver && !released && c.oldExpires() != null && c.oldExpires().isAfter(c.at())) {
				result.liveTakes++;
				result.findings.add("take of a running lease: " + c);
			}
			if (owner != null) {
				leases.add(new Lease(owner, block, start, min(expires, c.at())));
			}
			owner = c.newOwner();
			// handed over, the waiter owns the row until its take reserves its own block: no token of its own yet
			block = handOver ? block : c.newToken();
			start = c.at();
			expires = c.newExpires();
		}
		if (owner != null) {
			leases.add(new Lease(owner, block, start, expires));
		}
		return leases;
	}

	private static LocalDateTime min(LocalDateTime a, LocalDateTime b) {
		return a.isBefore(b) ? a : b;
	}

	/** The faults hitting the section's process that were under way at some point between {@code from} and {@code to}. */
	private static List<String> faultsBetween(List<Fault> faults, Section s, LocalDateTime from, LocalDateTime to) {
		List<String> hits = new ArrayList<>();
		for (Fault f : faults) {
			if (f.hits(s.process()) && !f.end().isBefore(from) && !f.start().isAfter(to)) {
				hits.add(f.kind() + " " + f.start() + " .. " + f.end());
			}
		}
		return hits;
	}

}
