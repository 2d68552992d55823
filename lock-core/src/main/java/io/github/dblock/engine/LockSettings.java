package io.github.dblock.engine;

import java.util.Locale;
import java.util.Objects;

import io.github.dblock.LockMode;
import io.github.dblock.LockTemplate;
import io.github.dblock.spi.HeldLock;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;

/**
 * The settings a {@link LockTemplate} shares with its JVM-local engine ({@link ExclusiveHolds},
 * {@link ReadWriteHolds}, {@link LockEngine}): the node name, whether a loss interrupts the holder, whether commits
 * are validated, and the observations. Set during configuration, read on every call; thread-safe (volatile fields).
 */
public final class LockSettings {

	/** The event of a {@code distributed.lock.held} observation when a held lock is found lost. */
	static final Observation.Event LOST = Observation.Event.of("lost", "lock lost while held");

	private static final int MAX_HOLDER_LENGTH = 255;

	private final String nodeName;

	private volatile boolean interruptOnLoss;

	private volatile boolean validateAtCommit = true;

	private volatile ObservationRegistry observations = ObservationRegistry.NOOP;

	private volatile boolean resourceAsTag;

	/** Settings for a node, with interruption on loss off, commit-time validation on and no observations. */
	public LockSettings(String nodeName) {
		this.nodeName = nodeName;
	}

	/** How this JVM describes itself in holder descriptions. */
	public String nodeName() {
		return this.nodeName;
	}

	boolean interruptOnLoss() {
		return this.interruptOnLoss;
	}

	/** Whether a loss found while held interrupts the acquiring thread. */
	public void setInterruptOnLoss(boolean interruptOnLoss) {
		this.interruptOnLoss = interruptOnLoss;
	}

	/** Whether commit-time validation is on. */
	public boolean validateAtCommit() {
		return this.validateAtCommit;
	}

	/** Switches commit-time validation of LEASE holds on or off. */
	public void setValidateAtCommit(boolean validateAtCommit) {
		this.validateAtCommit = validateAtCommit;
	}

	/** The registry acquisitions and holds are observed in; the no-op one by default. */
	public ObservationRegistry observations() {
		return this.observations;
	}

	/** Sets the registry acquisitions and holds are observed in; not {@code null}. */
	public void setObservations(ObservationRegistry observations) {
		this.observations = Objects.requireNonNull(observations, "observations must not be null");
	}

	/** Whether the resource name becomes a low-cardinality key of the observations. */
	public void setResourceAsTag(boolean resourceAsTag) {
		this.resourceAsTag = resourceAsTag;
	}

	/** Registers commit-time validation of a LEASE hold in the current transaction, when on and applicable. */
	void validateAtCommit(String resource, HeldLock lock) {
		if (this.validateAtCommit) {
			CommitCheck.register(resource, lock);
		}
	}

	/** Interrupts the current thread when the lock is found lost, if so configured. */
	void interruptOnLoss(HeldLock lock) {
		if (this.interruptOnLoss) {
			Thread owner = Thread.currentThread();
			lock.onLost(owner::interrupt);
		}
	}

	/** Adds the resource to an observation as a tag or, by default, as a high-cardinality key. */
	public Observation withResource(Observation observation, String resource) {
		return this.resourceAsTag ? observation.lowCardinalityKeyValue("resource", resource)
				: observation.highCardinalityKeyValue("resource", resource);
	}

	/** The {@code distributed.lock.acquire} observation of a call, not started yet. */
	Observation acquisition(String resource, LockMode mode) {
		return withResource(Observation.createNotStarted("distributed.lock.acquire", this.observations)
			.lowCardinalityKeyValue("mode", mode.name().toLowerCase(Locale.ROOT)), resource);
	}

	/**
	 * Starts the {@code distributed.lock.held} observation of a hold, which records a {@code lost} event when the lock
	 * is found lost.
	 */
	Observation holding(String resource, LockMode mode, HeldLock lock) {
		Observation holding = withResource(Observation.createNotStarted("distributed.lock.held", this.observations)
			.lowCardinalityKeyValue("mode", mode.name().toLowerCase(Locale.ROOT)), resource)
			.start();
		lock.onLost(() -> holding.event(LOST));
		return holding;
	}

	/** Describes the current thread of this node for a table's {@code holder} column. */
	String holderDescription() {
		return holderDescription(this.nodeName);
	}

	/**
	 * Describes the current thread of a node for a table's {@code holder} column: {@code node [thread]}, cut to 255
	 * code points.
	 */
	static String holderDescription(String nodeName) {
		String description = nodeName + " [" + Thread.currentThread().getName() + "]";
		if (description.codePointCount(0, description.length()) > MAX_HOLDER_LENGTH) {
			// the holder column counts characters; never cut an emoji's surrogate pair in half
			description = description.substring(0, description.offsetByCodePoints(0, MAX_HOLDER_LENGTH));
		}
		return description;
	}

}
