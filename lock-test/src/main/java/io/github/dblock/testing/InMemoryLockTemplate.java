package io.github.dblock.testing;

import java.time.Duration;

import io.github.dblock.LockMode;
import io.github.dblock.LockTemplate;

/**
 * A {@link LockTemplate} whose locks live in memory ({@link InMemoryLockStore}) instead of the lock table, for unit
 * tests without a database. It is the real template (the same engine: re-entry, the local queue of each resource,
 * read/write holds and their upgrade rule, {@link io.github.dblock.CurrentLock}, the exceptions and their messages),
 * with in-memory providers for the three modes, so code written against {@code LockTemplate} or
 * {@link io.github.dblock.LockOperations} runs unchanged:
 *
 * <pre class="code">
 * InMemoryLockTemplate locks = new InMemoryLockTemplate();
 * InvoiceService service = new InvoiceService(locks);
 * service.settle(42);
 * LockAssertions.assertThat(locks.recorder()).hasAcquired("invoice:42").hasMode(LockMode.LEASE);
 * LockAssertions.assertThat(locks.store()).isFree("invoice:42");
 * </pre>
 *
 * What memory cannot do (transactions, commit validation, rolling back OPTIMISTIC work) is listed on
 * {@link InMemoryLockStore}. Templates on the same store are separate nodes: {@code new
 * InMemoryLockTemplate(store, "node-b")}. Its {@link #recorder()} records every acquisition from construction on.
 * <p>
 * Thread-safe, like every {@code LockTemplate}.
 */
public final class InMemoryLockTemplate extends LockTemplate {

	/** The default wait time, as {@code distributed-lock.wait-time}'s: 5 s. */
	public static final Duration DEFAULT_WAIT_TIME = Duration.ofSeconds(5);

	/** The default lease time, as {@code distributed-lock.lease-time}'s: 30 s, renewed while held. */
	public static final Duration DEFAULT_LEASE_TIME = Duration.ofSeconds(30);

	/** How often OPTIMISTIC work may run, as {@code distributed-lock.optimistic.max-attempts}'s default: 5. */
	public static final int DEFAULT_OPTIMISTIC_MAX_ATTEMPTS = 5;

	private final InMemoryLockStore store;

	private final LockRecorder recorder = new LockRecorder();

	/**
	 * A template on a new store of its own, node name {@code "in-memory"}, with the starter's defaults: LEASE, wait
	 * time {@link #DEFAULT_WAIT_TIME}, lease time {@link #DEFAULT_LEASE_TIME}.
	 */
	public InMemoryLockTemplate() {
		this(new InMemoryLockStore(), "in-memory");
	}

	/**
	 * A node on a shared store, with the starter's defaults (LEASE, {@link #DEFAULT_WAIT_TIME},
	 * {@link #DEFAULT_LEASE_TIME}).
	 * @param store where the locks live; shared by the nodes that compete
	 * @param nodeName how this node describes itself in holder descriptions; not blank
	 * @throws IllegalArgumentException if an argument is null or the node name blank
	 */
	public InMemoryLockTemplate(InMemoryLockStore store, String nodeName) {
		this(store, nodeName, LockMode.LEASE, DEFAULT_WAIT_TIME, DEFAULT_LEASE_TIME);
	}

	/**
	 * A node on a shared store with defaults of its own, as {@link LockTemplate}'s constructor takes them.
	 * @param store where the locks live; shared by the nodes that compete
	 * @param nodeName how this node describes itself in holder descriptions; not blank
	 * @param defaultMode the mode of calls that choose none
	 * @param defaultWaitTime the wait time of calls that give none; zero or positive
	 * @param defaultLeaseTime the lease time of calls that give none, renewed every third of it while held; at least
	 * {@link LockTemplate#MIN_DEFAULT_LEASE_TIME} (1 s)
	 * @throws IllegalArgumentException if an argument is null or invalid
	 */
	public InMemoryLockTemplate(InMemoryLockStore store, String nodeName, LockMode defaultMode,
			Duration defaultWaitTime, Duration defaultLeaseTime) {
		super(InMemoryProviders.of(requireStore(store), DEFAULT_OPTIMISTIC_MAX_ATTEMPTS), defaultMode,
				defaultWaitTime, defaultLeaseTime, nodeName);
		this.store = store;
		this.recorder.attachTo(this);
	}

	private static InMemoryLockStore requireStore(InMemoryLockStore store) {
		if (store == null) {
			throw new IllegalArgumentException("store must not be null: give new InMemoryLockStore() or a shared one");
		}
		return store;
	}

	/** Where this template's locks live, with its clock and {@link LockFaults}. */
	public InMemoryLockStore store() {
		return this.store;
	}

	/**
	 * The faults of this template's store (the store itself): {@code locks.faults().expire("invoice:42")}.
	 */
	public LockFaults faults() {
		return this.store;
	}

	/**
	 * The acquisitions of this template since it was created (or the recorder was last
	 * {@linkplain LockRecorder#clear() cleared}). It records through the template's observation registry: a registry
	 * set later with {@link #setObservationRegistry} replaces it, unless the recorder is
	 * {@linkplain LockRecorder#attachTo attached} again.
	 */
	public LockRecorder recorder() {
		return this.recorder;
	}

}
