package io.github.dblock.shedlock;

import java.time.Duration;
import java.util.Optional;

import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.spi.AcquireResult;
import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockProvider;
import io.github.dblock.spi.LockRequest;
import net.javacrumbs.shedlock.core.AbstractSimpleLock;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

/**
 * A ShedLock {@link ExtensibleLockProvider} on the lock table, so that {@code @SchedulerLock} and
 * {@code LockingTaskExecutor} take the same LEASE locks as {@link LockTemplate} (a ShedLock lock named {@code x} and
 * {@code lockTemplate.acquire("x")} exclude each other).
 * <ul>
 * <li>{@code lockAtMostFor} is the lease time, kept on the database server's clock and not renewed (as in ShedLock,
 * the lock ends then even if the task still runs; {@link SimpleLock#extend} moves it).</li>
 * <li>Unlike ShedLock's own providers, a lock whose {@code lockAtMostFor} had passed when the reply to its take
 * arrived (counted by this JVM's clock from the sending of the take: a slow or held network, or a
 * {@code lockAtMostFor} shorter than a round trip) is not handed out: the lease is given back and {@code lock()}
 * returns empty, since another owner may already hold the lock. A zero {@code lockAtMostFor} therefore never
 * locks.</li>
 * <li>{@code lockAtLeastFor} is the minimum hold time: an {@code unlock()} earlier than that leaves the lock taken
 * until {@code acquired_at + lockAtLeastFor} on the server's clock. After an {@code extend}, the new
 * {@code lockAtLeastFor} counts from the extension (ShedLock's rule): an earlier {@code unlock()} sets the lease to
 * end then, instead of releasing.</li>
 * <li>The wait time is zero: one attempt, {@link Optional#empty()} when another owner holds the lock.</li>
 * <li>Every {@code lock()} is a new owner, even on a thread that already holds the same name through ShedLock or
 * the template: the adapter asks the LEASE {@link LockProvider} directly, with a fresh owner token, and never goes
 * through the template's per-thread reentrancy.</li>
 * <li>{@code extend(lockAtMostFor, lockAtLeastFor)} sets the lease to end {@code lockAtMostFor} from now on the
 * server's clock, with one owner-checked {@code UPDATE} ({@link HeldLock#extend(Duration)}); it returns empty when
 * the lease had already ended. The extended lock replaces the old one, whose methods then throw
 * {@link IllegalStateException} (ShedLock's {@link AbstractSimpleLock}).</li>
 * <li>An {@code unlock()} that finds the lease already ended (it expired, and maybe another owner took it) changes
 * nothing in the database and logs a warning; it does not throw, as ShedLock's own providers do not.</li>
 * </ul>
 * Lock names are resource names: 1 to {@value LockTemplate#MAX_RESOURCE_LENGTH} characters, compared exactly.
 * Each acquisition gets a fencing token in the table like any other, though ShedLock's API does not expose it.
 * <p>
 * Thread-safe; the {@link SimpleLock}s it returns are, like ShedLock's, for one thread at a time.
 */
public class DistributedLockShedLockProvider implements ExtensibleLockProvider {

	private static final Log logger = LogFactory.getLog(DistributedLockShedLockProvider.class);

	/** The shortest lease handed to the database: a zero {@code lockAtMostFor} is a lease over at once (not handed out). */
	private static final Duration MIN_LEASE = Duration.ofNanos(1000);

	private final LockProvider leases;

	private final String nodeName;

	/**
	 * @param leases the {@link LockMode#LEASE} provider of the lock table
	 * @param nodeName describes this JVM in the table's {@code holder} column, as {@link LockTemplate#getNodeName()}
	 * @throws IllegalArgumentException if the provider is not a LEASE provider, or the node name is blank
	 */
	public DistributedLockShedLockProvider(LockProvider leases, String nodeName) {
		if (leases == null || leases.mode() != LockMode.LEASE) {
			throw new IllegalArgumentException("A LEASE LockProvider is required, was " + leases);
		}
		if (nodeName == null || nodeName.isBlank()) {
			throw new IllegalArgumentException("nodeName must not be null or blank");
		}
		this.leases = leases;
		this.nodeName = nodeName;
	}

	/**
	 * One attempt to take the lock named by the configuration.
	 * @return the lock, or empty if another owner holds it (or its minimum hold time still runs)
	 * @throws IllegalArgumentException if the name is not a valid resource name
	 * @throws org.springframework.dao.DataAccessException if the database could not be reached
	 */
	@Override
	public Optional<SimpleLock> lock(LockConfiguration configuration) {
		String name = configuration.getName();
		LockTemplate.validateResource(name);
		LockRequest request = new LockRequest(name, atLeast(configuration.getLockAtMostFor()), false,
				configuration.getLockAtLeastFor(), System.nanoTime(), holder());
		AcquireResult result;
		try {
			result = this.leases.acquire(request);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return Optional.empty();
		}
		HeldLock held = result.lock();
		return (held != null) ? Optional.of(new Lock(configuration, held, false, 0)) : Optional.empty();
	}

	private String holder() {
		String holder = this.nodeName + " [" + Thread.currentThread().getName() + "] (ShedLock)";
		return (holder.codePointCount(0, holder.length()) > 255)
				? holder.substring(0, holder.offsetByCodePoints(0, 255)) : holder;
	}

	/** The lease handed to the database: at least {@link #MIN_LEASE}, at most {@link LockOptions#MAX_LEASE_TIME}. */
	private static Duration atLeast(Duration lease) {
		if (lease.compareTo(LockOptions.MAX_LEASE_TIME) > 0) {
			return LockOptions.MAX_LEASE_TIME;
		}
		return (lease.compareTo(MIN_LEASE) < 0) ? MIN_LEASE : lease;
	}

	@Override
	public String toString() {
		return "DistributedLockShedLockProvider[" + this.leases + "]";
	}

	/** One ShedLock hold: the lease, and for an extended lock until when its new {@code lockAtLeastFor} runs. */
	private static final class Lock extends AbstractSimpleLock {

		private final HeldLock held;

		/** Whether this lock came from an extension with a {@code lockAtLeastFor}, counted by this JVM's clock. */
		private final boolean holdsAtLeast;

		/** {@link System#nanoTime()} until which such a lock stays taken after unlock. */
		private final long atLeastUntilNanos;

		Lock(LockConfiguration configuration, HeldLock held, boolean holdsAtLeast, long atLeastUntilNanos) {
			super(configuration);
			this.held = held;
			this.holdsAtLeast = holdsAtLeast;
			this.atLeastUntilNanos = atLeastUntilNanos;
		}

		@Override
		protected void doUnlock() {
			String name = this.lockConfiguration.getName();
			long remaining = this.holdsAtLeast ? this.atLeastUntilNanos - System.nanoTime() : 0;
			boolean ours = (remaining > 0) ? this.held.extend(Duration.ofNanos(remaining)) : this.held.release();
			if (!ours) {
				logger.warn("ShedLock lock '" + name + "' (fencing token " + this.held.fencingToken() + ") was no longer "
						+ "held at unlock: its lockAtMostFor had ended, and another owner may have taken it");
			}
		}

		@Override
		protected Optional<SimpleLock> doExtend(LockConfiguration configuration) {
			if (!this.held.extend(atLeast(configuration.getLockAtMostFor()))) {
				return Optional.empty();
			}
			long atLeastFor = configuration.getLockAtLeastFor().toNanos();
			return Optional.of(new Lock(configuration, this.held, atLeastFor > 0, System.nanoTime() + atLeastFor));
		}

	}

}
