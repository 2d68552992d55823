package io.github.dblock.reliability.checker;

import java.time.Duration;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

import io.github.dblock.reliability.checker.History.Effect;
import io.github.dblock.reliability.checker.History.Family;
import io.github.dblock.reliability.checker.History.Forced;
import io.github.dblock.reliability.checker.History.Observed;
import io.github.dblock.reliability.checker.History.Op;
import io.github.dblock.reliability.checker.History.Section;
import org.jspecify.annotations.Nullable;

/**
 * The invariants a checker run must satisfy, each with the sentence of the README or {@code docs/reference/} that it
 * checks ({@link Invariant#quote()}; {@code CheckerTests} checks that every quote still appears verbatim in its
 * document). {@link #check(Observed)} returns every violation, each with the sections and calls involved;
 * {@link #report(long, Observed, List)} renders the minimal history slice around them. Stateless and thread-safe.
 * <p>
 * What "valid holder" means here: a section is <em>clean</em> when the library confirmed its hold to the end (its
 * transaction committed, or its handle was held at the exit, no {@code onLost} ran and its release did not throw).
 * Two clean sections of one exclusive resource may never overlap on the server's clock. A section that was not clean
 * (a stalled holder whose lease ended under it) may overlap another, but only on the terms of fencing: the later
 * holder's token is larger and the stale one's fenced writes after it were rejected.
 */
public final class Checker {

	/**
	 * Slack on top of every documented call bound, for the scheduling delays of a loaded 2-core machine running
	 * several nodes' threads, a cleanup thread and the fault injector in one JVM.
	 */
	public static final Duration BOUND_SLACK = Duration.ofSeconds(2);

	/**
	 * The calls that must be {@link #servedInTurn served in turn}: a burst of {@code @DistributedLock(mode =
	 * PESSIMISTIC)} calls on a resource of its own through a pool of 2 connections, each with a wait time of
	 * {@link #TURN_WAIT}.
	 */
	public static final String TURN_CALL = "@DistributedLock PESSIMISTIC (pool of 2, 10s)";

	/** The wait time of a {@link #TURN_CALL}. */
	public static final Duration TURN_WAIT = Duration.ofSeconds(10);

	/**
	 * What a {@link #TURN_CALL} may spend besides the holds of its resource and still be served: beginning and
	 * committing the transactions of the burst's calls, one after the other, on a loaded machine.
	 */
	public static final Duration TURN_SLACK = Duration.ofSeconds(4);

	/**
	 * How much later than another owner's grant {@code onLost} may run: the pause of this JVM that the documented
	 * sentence exempts ("the scheduler's few milliseconds"), widened for a loaded 2-core machine. The grant is taken
	 * when the other owner's call returned, which is already after the server granted it.
	 */
	public static final Duration LOSS_SLACK = Duration.ofMillis(100);

	/**
	 * The longest lease of an exclusive lock in the workload (the default renewed lease; explicit ones are shorter):
	 * a SIGKILLed holder's lock ends at most this long after its death, since nothing renews it any more.
	 */
	public static final Duration KILLED_HOLDER_LEASE = Duration.ofSeconds(1);

	/** Fencing tokens a LEASE take reserves ({@code ExclusiveLease.TOKEN_BLOCK}); its holders use tokens of it. */
	static final long LEASE_TOKEN_BLOCK = 1024;

	/**
	 * One invariant.
	 * @param name short name, printed with a violation
	 * @param document the document quoted, relative to the repository root
	 * @param quote the sentence of the document the invariant checks, verbatim (white space aside)
	 * @param check finds the violations in a history
	 */
	public record Invariant(String name, String document, String quote, Function<Observed, List<Violation>> check) {
	}

	/**
	 * A violation of one invariant.
	 * @param invariant the invariant's name
	 * @param message what is wrong
	 * @param sections the sections involved
	 * @param opIds the calls involved
	 */
	public record Violation(String invariant, String message, List<Section> sections, List<Long> opIds) {
	}

	/** Every invariant, in the order they are checked. */
	public static final List<Invariant> INVARIANTS = List.of(
			new Invariant("exclusion", "docs/reference/safety.md",
					"Leases cannot stop a holder that has stalled and not yet noticed it lost the lock. Fencing tokens can",
					(observed) -> overlaps(observed, Set.of(Family.EXCLUSIVE), "exclusion")),
			new Invariant("exclusion-across-modes", "docs/reference/lock-modes.md",
					"the same resource is exclusive across modes", Checker::acrossModes),
			new Invariant("reader-beside-writer", "docs/reference/read-write-locks.md",
					"Many readers at once, or one writer, per resource and across nodes",
					(observed) -> overlaps(observed, Set.of(Family.READ, Family.WRITE), "reader-beside-writer")),
			new Invariant("tokens-increase", "docs/reference/safety.md",
					"every acquisition gets a number that strictly increases for that resource, across all nodes, modes,"
							+ " restarts and cleanups, at any rate of acquisitions.",
					Checker::tokens),
			new Invariant("at-most-n-permits", "docs/reference/semaphores.md",
					"A semaphore lets at most N callers in at once, across every instance", Checker::permits),
			new Invariant("one-effect-per-key", "docs/reference/idempotency.md",
					"Exactly one call claims a key (one statement on its primary key)", Checker::effects),
			new Invariant("call-bounds", "docs/reference/limits.md",
					"**Every call is bounded in time, whatever the network does**", Checker::bounds),
			new Invariant("every-section-ends", "docs/reference/limits.md",
					"**Every call is bounded in time, whatever the network does**", Checker::unfinished),
			new Invariant("lease-history", "docs/reference/safety.md",
					"Nobody else can take it before T, and if the owner crashes, everyone can take it after T.",
					Checker::leaseHistory),
			new Invariant("nothing-left-locked", "docs/reference/safety.md",
					"a crashed holder still frees the lock within one lease.", Checker::leftovers),
			new Invariant("lost-before-grant", "docs/reference/safety.md",
					"so `onLost` runs before another owner can take the lock (barring a pause of this JVM longer than"
							+ " the scheduler's few milliseconds)",
					Checker::lostBeforeGrant),
			new Invariant("force-release-told", "docs/reference/actuator.md",
					"so the old holder's release fails with `LockLostException`",
					Checker::forceReleaseTold),
			new Invariant("served-in-turn", "docs/reference/lock-modes.md",
					"So one hot resource uses at most two pooled connections per JVM (the holder's transaction and the"
							+ " next caller's, waiting in the server), and a small pool serves the callers in turn.",
					Checker::servedInTurn));

	/** The holder the lock row names once a release handed the lease over to the waiter next in line. */
	public static final String HANDED_OVER_HOLDER = "the next waiter in line (handed over at release)";

	private Checker() {
	}

	/** Every violation of every invariant in the history. */
	public static List<Violation> check(Observed observed) {
		Observed judged = forceReleasedUnconfirmed(observed);
		List<Violation> violations = new ArrayList<>();
		for (Invariant invariant : INVARIANTS) {
			violations.addAll(invariant.check().apply(historyFor(invariant.name(), observed, judged)));
		}
		return violations;
	}

	/** {@code force-release-told} judges what the library confirmed; the others the history with freed holds unconfirmed. */
	private static Observed historyFor(String invariant, Observed observed, Observed judged) {
		return invariant.equals("force-release-told") ? observed : judged;
	}

	/** The violations of the named invariant only. */
	public static List<Violation> check(String invariant, Observed observed) {
		return INVARIANTS.stream()
			.filter((i) -> i.name().equals(invariant))
			.findFirst()
			.orElseThrow()
			.check()
			.apply(historyFor(invariant, observed, forceReleasedUnconfirmed(observed)));
	}

	/**
	 * The history with every section that a forced release may have freed counted as not confirmed, so that the
	 * other invariants judge it by its fencing token:
	 * <ul>
	 * <li>a ShedLock section of the holder's node on the resource whose hold, by this JVM's clock, came within 100 ms
	 * of the forced release: the adapter's {@code unlock()} of a lock whose lease ended only logs a warning (as
	 * ShedLock's own providers do), so nothing tells the task;</li>
	 * <li>a LEASE section of the holder's node with a token of the freed lease's block (at most 1,023 below the row's
	 * token) held when the forced release began or after: a lease passes in memory between the threads of its JVM
	 * (hand-off), and only the thread that gives it back to the database learns that it was freed
	 * ({@code force-release-told} checks that one).</li>
	 * </ul>
	 */
	static Observed forceReleasedUnconfirmed(Observed observed) {
		if (observed.forced().isEmpty()) {
			return observed;
		}
		long margin = Duration.ofMillis(100).toNanos();
		List<Section> sections = observed.sections().stream().map((s) -> {
			boolean freed = observed.forced().stream().anyMatch((f) -> f.resource().equals(s.resource())
					&& f.previousHolder().startsWith(s.node() + " [") && freedBy(f, s, margin));
			return (!freed || s.lost()) ? s : new Section(s.opId(), s.node(), s.resource(), s.family(), s.mode(),
					s.token(), s.enteredAt(), s.exitedAt(), s.entryAccepted(), s.exitAccepted(), s.counted(), true,
					s.grantedNanos(), s.releasedNanos(), s.lostNanos(), s.watched());
		}).toList();
		return new Observed(sections, observed.ops(), observed.effects(), observed.succeededKeys(),
				observed.permits(), observed.leftovers(), observed.killed(), observed.rowChanges(), observed.forced());
	}

	private static boolean freedBy(Forced f, Section s, long margin) {
		if (f.previousHolder().endsWith("(ShedLock)")) {
			return s.mode().startsWith("ShedLock") && s.grantedNanos() != null && s.releasedNanos() != null
					&& s.grantedNanos() <= f.completedNanos() + margin && s.releasedNanos() >= f.invokedNanos() - margin;
		}
		return s.tokened() && !s.mode().startsWith("PESSIMISTIC") && !s.mode().startsWith("OPTIMISTIC")
				&& !s.mode().startsWith("ShedLock") && s.token() <= f.previousToken()
				&& s.token() > f.previousToken() - LEASE_TOKEN_BLOCK
				&& (s.releasedNanos() == null || s.releasedNanos() >= f.invokedNanos() - margin);
	}

	/** Whether the section held a PESSIMISTIC lock ({@code execute}, a handle or {@code @DistributedLock}). */
	static boolean pessimistic(Section s) {
		return s.mode().startsWith("PESSIMISTIC") || s.mode().startsWith("@DistributedLock PESSIMISTIC");
	}

	/**
	 * Whether one of the two sections held a PESSIMISTIC lock and the other a lock of another mode: they must exclude
	 * each other, but their tokens are not comparable ("Use **one mode per resource**" for fencing,
	 * docs/reference/lock-modes.md).
	 */
	static boolean crossMode(Section a, Section b) {
		return pessimistic(a) != pessimistic(b);
	}

	/**
	 * Two clean sections of one exclusive resource, one PESSIMISTIC and one of another mode, at one server instant.
	 * Only clean sections are judged: across modes neither the tokens nor the fenced writes order the holders.
	 */
	static List<Violation> acrossModes(Observed observed) {
		List<Violation> violations = new ArrayList<>();
		byResource(observed, Set.of(Family.EXCLUSIVE)).forEach((resource, sections) -> {
			List<Section> active = new ArrayList<>();
			for (Section b : sections) {
				active.removeIf((a) -> !end(observed, a).isAfter(b.enteredAt()));
				for (Section a : active) {
					if (crossMode(a, b) && cleanAt(observed, a, b.enteredAt())
							&& cleanAt(observed, b, b.enteredAt())) {
						violations.add(new Violation("exclusion-across-modes", resource + ": a " + a.mode()
								+ " holder and a " + b.mode() + " holder the library called valid at one server instant",
								List.of(a, b), List.of(a.opId(), b.opId())));
					}
				}
				if (end(observed, b) != NO_END) {
					active.add(b);
				}
			}
		});
		return violations;
	}

	private static Map<String, List<Section>> byResource(Observed observed, Set<Family> families) {
		Map<String, List<Section>> result = new LinkedHashMap<>();
		observed.sections()
			.stream()
			.filter((s) -> families.contains(s.family()) && s.counted())
			.sorted(Comparator.comparing(Section::enteredAt).thenComparing(Section::opId))
			.forEach((s) -> result.computeIfAbsent(s.resource(), (k) -> new ArrayList<>()).add(s));
		return result;
	}

	/**
	 * Two counted sections of one resource at one server instant (readers beside readers aside, and a PESSIMISTIC
	 * section beside one of another mode, which {@link #acrossModes} judges): a violation when
	 * both are clean, or when the one with the smaller token had a fenced write accepted after the other had written
	 * its larger one (OPTIMISTIC work writes none: a stale holder beside it is stopped only by a later fenced write).
	 */
	static List<Violation> overlaps(Observed observed, Set<Family> families, String name) {
		List<Violation> violations = new ArrayList<>();
		byResource(observed, families).forEach((resource, sections) -> {
			List<Section> active = new ArrayList<>();
			for (Section b : sections) {
				active.removeIf((a) -> !end(observed, a).isAfter(b.enteredAt()));
				for (Section a : active) {
					if ((a.family() == Family.READ && b.family() == Family.READ) || crossMode(a, b)) {
						continue; // a PESSIMISTIC holder beside one of another mode: exclusion-across-modes
					}
					String why = null;
					if (cleanAt(observed, a, b.enteredAt()) && cleanAt(observed, b, b.enteredAt())) {
						why = "two holders the library called valid at one server instant";
					}
					else if (b.token() > a.token() && b.entryAccepted() && Boolean.TRUE.equals(a.exitAccepted())) {
						why = "the earlier holder's fenced write was accepted after the later one (larger token) entered";
					}
					else if (b.token() <= a.token() && !a.mode().startsWith("OPTIMISTIC")
							&& (b.entryAccepted() || Boolean.TRUE.equals(b.exitAccepted()))) {
						// (OPTIMISTIC work's "token" is the version it started from, often the block end of the LEASE
						// holder beside it, not a token of its own)
						why = "the later holder's token is not larger, and its fenced write was accepted";
					}
					if (why != null) {
						violations.add(new Violation(name, resource + ": " + why, List.of(a, b),
								List.of(a.opId(), b.opId())));
					}
				}
				if (end(observed, b) != NO_END) {
					active.add(b);
				}
			}
		});
		return violations;
	}

	private static final LocalDateTime NO_END = LocalDateTime.MIN;

	/** The SIGKILL of the section's node, if its section never recorded an exit and the node was killed. */
	private static @Nullable LocalDateTime killedIn(Observed observed, Section s) {
		return (s.exitedAt() == null) ? observed.killed().get(s.node()) : null;
	}

	/**
	 * Until when a section may have held its lock: its exit; for a section whose process was SIGKILLed inside it, until
	 * the lease could have ended ("if the owner crashes, everyone can take it after T": the kill plus
	 * {@link #KILLED_HOLDER_LEASE}); {@link #NO_END} for a section of a live process that never left (a violation of
	 * its own, {@link #unfinished}).
	 */
	static LocalDateTime end(Observed observed, Section s) {
		if (s.exitedAt() != null) {
			return s.exitedAt();
		}
		LocalDateTime killed = killedIn(observed, s);
		return (killed != null) ? killed.plus(KILLED_HOLDER_LEASE) : NO_END;
	}

	/**
	 * Whether the section was clean at the instant. A section cut short by a SIGKILL never is: the library never
	 * confirmed its hold to an end (its lease may have run out under it before the kill, as a short one does under a
	 * long hold), so it may overlap another holder only on the terms of fencing.
	 */
	static boolean cleanAt(Observed observed, Section s, LocalDateTime instant) {
		return s.clean() && killedIn(observed, s) == null;
	}

	/**
	 * Per resource, in the order of entry: a counted section whose fenced write at entry was accepted, or that is
	 * clean, has a token larger than every earlier counted section's (two readers aside). A clean section held its
	 * lock from its acquisition to its exit, so every section that entered before it acquired before it; only a stale
	 * section (not clean) may enter after one with a larger token, and then fencing must reject its write. OPTIMISTIC work is left out: it is given the
	 * version it started from (the previous holder's token), not a token of its own. On a resource that PESSIMISTIC
	 * and LEASE callers share, the tokens of each mode are judged apart: across modes they are not ordered ("Use
	 * **one mode per resource**", docs/reference/lock-modes.md).
	 */
	static List<Violation> tokens(Observed observed) {
		List<Violation> violations = new ArrayList<>();
		Map<String, List<Section>> byMode = new LinkedHashMap<>();
		byResource(observed, Set.of(Family.EXCLUSIVE, Family.READ, Family.WRITE))
			.forEach((resource, sections) -> sections.forEach((s) -> byMode
				.computeIfAbsent(resource + (pessimistic(s) ? " (PESSIMISTIC)" : ""), (k) -> new ArrayList<>())
				.add(s)));
		byMode.forEach((resource, sections) -> {
			Section highest = null;
			Section highestNonReader = null;
			for (Section b : sections) {
				if (!b.tokened()) {
					continue; // OPTIMISTIC work is given the version it started from; ShedLock exposes no token
				}
				Section against = (b.family() == Family.READ) ? highestNonReader : highest;
				if (against != null && (b.entryAccepted() || b.clean()) && b.token() <= against.token()) {
					violations.add(new Violation("tokens-increase",
							resource + ": token " + b.token() + " not larger than the earlier " + against.token(),
							List.of(against, b), List.of(against.opId(), b.opId())));
				}
				if (highest == null || b.token() > highest.token()) {
					highest = b;
				}
				if (b.family() != Family.READ && (highestNonReader == null || b.token() > highestNonReader.token())) {
					highestNonReader = b;
				}
			}
		});
		return violations;
	}

	/**
	 * Per resource: when a section B (another operation, a larger token) was handed its lock while an earlier
	 * watched section A (a renewed lease whose {@code onLost} it listened to) had not yet given its lock up, both by
	 * this JVM's clock, A's lease had ended by B's grant, so A's {@code onLost} must have run no later than B's grant
	 * (plus {@link #LOSS_SLACK}). B's grant is taken when its call returned, after the server granted it. A hold that
	 * a forced release may have freed (one came after A's token and before A gave the lock up) is left out: it learns
	 * of it at its next renewal, and {@code force-release-told} checks what the actuator promises. Readers beside
	 * readers aside, and PESSIMISTIC sections beside those of another mode (their tokens do not order them).
	 */
	static List<Violation> lostBeforeGrant(Observed observed) {
		List<Violation> violations = new ArrayList<>();
		byResource(observed, Set.of(Family.EXCLUSIVE, Family.READ, Family.WRITE)).forEach((resource, sections) -> {
			for (Section a : sections) {
				if (!a.watched() || !a.tokened() || a.releasedNanos() == null || observed.forced()
					.stream()
					.anyMatch((f) -> f.resource().equals(resource) && a.token() <= f.previousToken()
							&& f.invokedNanos() < a.releasedNanos())) {
					continue;
				}
				sections.stream()
					.filter((b) -> b.opId() != a.opId() && b.tokened() && !crossMode(a, b) && b.token() > a.token()
							&& b.grantedNanos() != null && b.grantedNanos() < a.releasedNanos()
							&& !(a.family() == Family.READ && b.family() == Family.READ))
					.min(Comparator.comparing(Section::grantedNanos))
					.ifPresent((b) -> {
						long latest = b.grantedNanos() + LOSS_SLACK.toNanos();
						if (a.lostNanos() == null || a.lostNanos() > latest) {
							String when = (a.lostNanos() == null) ? "never ran"
									: "ran " + (a.lostNanos() - b.grantedNanos()) / 1_000_000 + " ms after";
							violations.add(new Violation("lost-before-grant", resource + ": another owner (token "
									+ b.token() + ") was granted the lock while op " + a.opId()
									+ " still held it by this JVM, and its onLost " + when,
									List.of(a, b), List.of(a.opId(), b.opId())));
						}
					});
			}
		});
		return violations;
	}

	/**
	 * Per forced release that found the lock held: the section that gave the lease back to the database is not
	 * clean, since its release must fail. That is the section of the resource with the largest token not above the
	 * row's token before (a LEASE take reserves a block of tokens, so the row's may be above it; the lease's local
	 * holders have the block's tokens in order, and the last of them gives it back), provided it is a clean LEASE
	 * hold that gave its lock up only after the forced release began. That section is sought among all sections,
	 * counted or not: one whose transaction rolled back still held the lease it was handed in memory, and the
	 * documented loss of such a hold is its commit's failure or a log line, so it is not judged. Left out: a ShedLock holder (its adapter's
	 * {@code unlock()} does not throw, and its token is not known), PESSIMISTIC holds (their row stays locked,
	 * and the forced release fails instead), and a lease that its holder's release had handed over to the waiter
	 * next in line ({@link #HANDED_OVER_HOLDER}): that release succeeded, and the waiter had not taken it yet.
	 */
	static List<Violation> forceReleaseTold(Observed observed) {
		List<Violation> violations = new ArrayList<>();
		for (Forced f : observed.forced()) {
			if (f.previousHolder().endsWith("(ShedLock)") || f.previousHolder().equals(HANDED_OVER_HOLDER)) {
				continue;
			}
			observed.sections()
				.stream()
				.filter((s) -> s.resource().equals(f.resource()) && s.tokened() && s.token() <= f.previousToken())
				.max(Comparator.comparingLong(Section::token))
				.filter((holder) -> !holder.mode().startsWith("PESSIMISTIC") && holder.releasedNanos() != null
						&& holder.releasedNanos() > f.invokedNanos() && holder.clean())
				.ifPresent((holder) -> violations.add(new Violation("force-release-told", f.resource()
						+ ": the holder of token " + holder.token() + " (row token " + f.previousToken()
						+ ", holder " + f.previousHolder() + ") was force-released, yet the library confirmed its hold"
						+ " to the end", List.of(holder), List.of(holder.opId()))));
		}
		return violations;
	}

	/**
	 * At no server instant more clean permit sections of a semaphore than its permits (a permit cut short by a SIGKILL
	 * is not clean: its lease may have ended before the kill).
	 */
	static List<Violation> permits(Observed observed) {
		List<Violation> violations = new ArrayList<>();
		Map<String, List<Section>> byName = new LinkedHashMap<>();
		observed.sections()
			.stream()
			.filter((s) -> s.family() == Family.PERMIT && s.clean() && s.exitedAt() != null)
			.forEach((s) -> byName.computeIfAbsent(s.resource(), (k) -> new ArrayList<>()).add(s));
		byName.forEach((name, sections) -> {
			int permits = observed.permits().getOrDefault(name, Integer.MAX_VALUE);
			sections.sort(Comparator.comparing(Section::enteredAt));
			List<Section> inside = new ArrayList<>();
			for (Section s : sections) {
				inside.removeIf((other) -> !other.exitedAt().isAfter(s.enteredAt()));
				inside.add(s);
				if (inside.size() > permits) {
					violations.add(new Violation("at-most-n-permits", name + ": " + inside.size()
							+ " permits held at once, of " + permits, List.copyOf(inside),
							inside.stream().map(Section::opId).toList()));
				}
			}
		});
		return violations;
	}

	/** At most one committed effect per key, and exactly one for a key some call completed. */
	static List<Violation> effects(Observed observed) {
		List<Violation> violations = new ArrayList<>();
		Map<String, List<Long>> byKey = new HashMap<>();
		for (Effect effect : observed.effects()) {
			byKey.computeIfAbsent(effect.key(), (k) -> new ArrayList<>()).add(effect.opId());
		}
		byKey.forEach((key, ops) -> {
			if (ops.size() > 1) {
				violations.add(new Violation("one-effect-per-key", key + ": " + ops.size() + " committed effects",
						List.of(), ops));
			}
		});
		for (String key : observed.succeededKeys()) {
			if (!byKey.containsKey(key)) {
				violations.add(new Violation("one-effect-per-key", key + ": a call completed but no effect committed",
						List.of(), List.of()));
			}
		}
		return violations;
	}

	/** Every call with a documented bound ended within it (plus {@link #BOUND_SLACK}). */
	static List<Violation> bounds(Observed observed) {
		List<Violation> violations = new ArrayList<>();
		for (Op op : observed.ops()) {
			if (op.boundNanos() > 0 && op.runningNanos() > op.boundNanos() + BOUND_SLACK.toNanos()) {
				violations.add(new Violation("call-bounds", op.call() + " took " + op.runningNanos() / 1_000_000
						+ " ms while its JVM ran, bound " + op.boundNanos() / 1_000_000 + " ms", List.of(),
						List.of(op.id())));
			}
		}
		return violations;
	}

	/**
	 * Every {@link #TURN_CALL} acquires the lock when its wait time exceeds the sum of the holds on its resource (the
	 * burst's sections, entry to exit) plus {@link #TURN_SLACK}: the callers queue in the JVM without a pooled
	 * connection, so a pool of 2 serves them one after the other.
	 */
	static List<Violation> servedInTurn(Observed observed) {
		Map<String, List<Op>> calls = new java.util.TreeMap<>();
		for (Op op : observed.ops()) {
			if (op.call().startsWith(TURN_CALL)) {
				calls.computeIfAbsent(op.resource(), (r) -> new ArrayList<>()).add(op);
			}
		}
		List<Violation> violations = new ArrayList<>();
		calls.forEach((resource, ops) -> {
			long holds = 0;
			for (Section s : observed.sections()) {
				if (s.resource().equals(resource) && s.exitedAt() != null) {
					holds += Duration.between(s.enteredAt(), s.exitedAt()).toNanos();
				}
			}
			if (TURN_WAIT.toNanos() <= holds + TURN_SLACK.toNanos()) {
				return; // the holds alone could use up the wait time
			}
			List<Op> refused = ops.stream().filter((op) -> !op.outcome().equals("ok")).toList();
			if (!refused.isEmpty()) {
				violations.add(new Violation("served-in-turn", resource + ": " + refused.size() + " of " + ops.size()
						+ " calls with a wait time of " + TURN_WAIT.toSeconds() + " s not served (" + refused.get(0)
							.outcome() + ") although the holds took " + holds / 1_000_000 + " ms",
						List.of(), refused.stream().map(Op::id).toList()));
			}
		});
		return violations;
	}

	/**
	 * Every counted section of a process that was not killed recorded its exit (the calls around it returned); a
	 * section of a SIGKILLed process may end without one, and so may one whose transaction rolled back (its work threw,
	 * for example on a killed connection, before the exit).
	 */
	static List<Violation> unfinished(Observed observed) {
		List<Violation> violations = new ArrayList<>();
		for (Section s : observed.sections()) {
			if (s.exitedAt() == null && s.counted() && !observed.killed().containsKey(s.node())) {
				violations.add(new Violation("every-section-ends", s.resource() + ": a section of a live process never"
						+ " left", List.of(s), List.of(s.opId())));
			}
		}
		return violations;
	}

	/**
	 * In the lock rows' history (when a trigger recorded it): no change of owner while the old owner's lease ran,
	 * except a release that hands the lock to the waiter next in line; and every counted exclusive LEASE section's token
	 * lies in the block of a take the history shows. A take's statement reads the expiry on the clock that the trigger
	 * records, so this checks the lease on the database's own terms, independently of what the holders believed.
	 */
	static List<Violation> leaseHistory(Observed observed) {
		List<Violation> violations = new ArrayList<>();
		if (observed.rowChanges().isEmpty()) {
			return violations; // no trigger on this server
		}
		Map<String, java.util.TreeSet<Long>> blockEnds = new HashMap<>();
		for (History.RowChange c : observed.rowChanges()) {
			if (c.newOwner() != null) {
				blockEnds.computeIfAbsent(c.resource(), (k) -> new java.util.TreeSet<>()).add(c.newToken());
			}
		}
		for (Section s : observed.sections()) {
			if (s.family() == Family.EXCLUSIVE && s.mode().startsWith("LEASE") && s.counted()) {
				Long blockEnd = blockEnds.getOrDefault(s.resource(), new java.util.TreeSet<>()).ceiling(s.token());
				if (blockEnd == null || blockEnd - s.token() >= LEASE_TOKEN_BLOCK) {
					violations.add(new Violation("lease-history", s.resource() + ": no take in the lock row's"
							+ " history reserved token " + s.token(), List.of(s), List.of(s.opId())));
				}
			}
		}
		for (History.RowChange c : observed.rowChanges()) {
			boolean ownerChanged = c.oldOwner() != null && c.newOwner() != null && !c.oldOwner().equals(c.newOwner());
			boolean handOff = c.newOwner() != null && c.newOwner().equals(c.oldWaitingOwner());
			if (ownerChanged && !handOff && c.oldExpires() != null && c.oldExpires().isAfter(c.at())) {
				violations.add(new Violation("lease-history", c.resource() + ": taken at " + c.at()
						+ " by " + c.newOwner() + " from " + c.oldOwner() + " whose lease ran until " + c.oldExpires(),
						List.of(), List.of()));
			}
		}
		return violations;
	}

	/** Nothing of the run still held once every caller finished and the longest lease has passed. */
	static List<Violation> leftovers(Observed observed) {
		return observed.leftovers()
			.stream()
			.map((what) -> new Violation("nothing-left-locked", "still held after the run: " + what, List.of(),
					List.of()))
			.toList();
	}

	/**
	 * The report of a failing run: the seed, then per violation (at most 10) the invariant's quote, the sections
	 * involved with up to 2 sections of the same resource before and after, and the calls involved.
	 */
	public static String report(long seed, Observed observed, List<Violation> violations) {
		StringBuilder out = new StringBuilder("checker run failed, seed " + seed + " (replay: -Dlock.checker.seed="
				+ seed + "): " + violations.size() + " violation(s)\n");
		Map<Long, Op> opsById = new HashMap<>();
		Map<Long, List<Op>> opsOf = new HashMap<>();
		for (Op op : observed.ops()) {
			opsById.putIfAbsent(op.id(), op);
			opsOf.computeIfAbsent(op.id(), (k) -> new ArrayList<>()).add(op);
		}
		for (Violation violation : violations.subList(0, Math.min(10, violations.size()))) {
			Invariant invariant = INVARIANTS.stream()
				.filter((i) -> i.name().equals(violation.invariant()))
				.findFirst()
				.orElseThrow();
			out.append("\n[").append(violation.invariant()).append("] ").append(violation.message()).append('\n');
			out.append("  checks: \"").append(invariant.quote()).append("\" (").append(invariant.document())
				.append(")\n");
			Set<Section> slice = new LinkedHashSet<>();
			for (Section involved : violation.sections()) {
				List<Section> same = observed.sections()
					.stream()
					.filter((s) -> s.resource().equals(involved.resource()))
					.sorted(Comparator.comparing(Section::enteredAt))
					.toList();
				int at = same.indexOf(involved);
				slice.addAll(same.subList(Math.max(0, at - 2), Math.min(same.size(), at + 3)));
			}
			slice.stream()
				.sorted(Comparator.comparing(Section::enteredAt))
				.forEach((s) -> out.append(violation.sections().contains(s) ? "  >> " : "     ").append(s).append('\n'));
			for (long id : violation.opIds()) {
				for (Op op : opsOf.getOrDefault(id, List.of())) {
					out.append("     ").append(op).append('\n');
				}
			}
		}
		return out.toString();
	}

}
