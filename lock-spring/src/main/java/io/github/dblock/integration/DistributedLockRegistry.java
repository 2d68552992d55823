package io.github.dblock.integration;

import java.time.Duration;
import java.util.ConcurrentModificationException;
import java.util.concurrent.TimeUnit;

import io.github.dblock.LockHandle;
import io.github.dblock.LockLostException;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.LockView;
import org.jspecify.annotations.Nullable;
import org.springframework.integration.support.locks.DistributedLock;
import org.springframework.integration.support.locks.RenewableLockRegistry;

/**
 * A Spring Integration {@link RenewableLockRegistry} on the lock table, for code written against
 * {@code JdbcLockRegistry} ({@code obtain}, {@code executeLocked}, {@code renewLock}) and its {@link DistributedLock}
 * view. Each lock is a {@link LockTemplate#asLock(String, LockOptions) Lock view} of the template in
 * {@link LockMode#LEASE} mode, so it has the template's semantics and guarantees (server clock, fencing tokens in
 * {@link io.github.dblock.CurrentLock}, observations, the lost-lock signal).
 * <ul>
 * <li>Keys must be {@link String}s, used as resource names as they are (1 to 255 characters), like
 * {@code JdbcLockRegistry}'s, which asserts the same; a key other registries or the template use is the same lock.</li>
 * <li>Owner: the locking thread; reentrant per thread; {@code unlock()} from another thread throws
 * {@link IllegalMonitorStateException}. Two registries on one database (two nodes) exclude each other.</li>
 * <li>Time to live: with {@code ttl} {@code null} (the auto-configured default) {@code lock()} and
 * {@code tryLock(...)} take a lease renewed in the background while held ({@code distributed-lock.lease-time}): a
 * lock does not expire under a live JVM, as {@code JdbcLockRegistry}'s does after its TTL. With a {@code ttl}, and
 * always for {@link DistributedLock#lock(Duration)} and {@link DistributedLock#tryLock(Duration, Duration)}, the
 * lease is that TTL on the database server's clock, not renewed; {@link #renewLock(Object, Duration)} moves its end.
 * Re-entering keeps the outer hold's lease.</li>
 * <li>{@code unlock()} of a lock whose lease had already ended throws {@link ConcurrentModificationException} (with
 * the {@link LockLostException} as cause), as {@code JdbcLockRegistry} does.</li>
 * <li>{@link #renewLock(Object, Duration)} sets the current thread's lease to end that long from now
 * ({@link LockHandle#extend(Duration)}, atomic on the database); it throws {@link IllegalMonitorStateException} when
 * the thread does not hold the lock, and {@link IllegalStateException} when the lease had ended. For a renewed
 * lease, {@link #renewLock(Object)} only checks that the lock is still held, and {@code renewLock(key, ttl)} throws
 * {@link IllegalStateException} (it is renewed automatically).</li>
 * <li>{@code obtain} returns a new light-weight view each time (views of one key share the thread's holds); there
 * is no cache to exhaust.</li>
 * <li>{@code newCondition()} is not supported; database failures surface as
 * {@link org.springframework.dao.DataAccessException}.</li>
 * </ul>
 * Thread-safe.
 */
public class DistributedLockRegistry implements RenewableLockRegistry<DistributedLock> {

	private final LockTemplate template;

	@Nullable
	private final Duration ttl;

	/**
	 * @param template the template the locks are taken through
	 * @param ttl the lease of {@code lock()} and {@code tryLock(...)}, not renewed; {@code null} for leases renewed
	 * while held
	 * @throws IllegalArgumentException if the template is null or the TTL out of
	 * {@link LockOptions#withLeaseTime(Duration)}'s range
	 */
	public DistributedLockRegistry(LockTemplate template, @Nullable Duration ttl) {
		if (template == null) {
			throw new IllegalArgumentException("template must not be null");
		}
		if (ttl != null) {
			LockOptions.defaults().withLeaseTime(ttl); // validates
		}
		this.template = template;
		this.ttl = ttl;
	}

	/**
	 * A lock view of the key.
	 * @param lockKey a {@link String}, the resource name
	 * @throws IllegalArgumentException if the key is not a String or not a valid resource name
	 */
	@Override
	public DistributedLock obtain(Object lockKey) {
		return new RegistryLock(resource(lockKey));
	}

	/**
	 * Renews the current thread's lock of the key by the registry's TTL; with renewed leases, checks it is held.
	 * @throws IllegalMonitorStateException if the current thread does not hold the lock
	 * @throws IllegalStateException if the lease had already ended
	 */
	@Override
	public void renewLock(Object lockKey) {
		if (this.ttl != null) {
			renewLock(lockKey, this.ttl);
			return;
		}
		String resource = resource(lockKey);
		LockHandle hold = currentHold(resource);
		if (!hold.isHeld()) {
			throw new IllegalStateException("Could not renew lock for: " + resource + " (its lease has ended)");
		}
	}

	/**
	 * Sets the current thread's lease of the key to end {@code customTtl} from now on the server's clock.
	 * @throws IllegalMonitorStateException if the current thread does not hold the lock
	 * @throws IllegalStateException if the lease had already ended, or is renewed automatically
	 */
	@Override
	public void renewLock(Object lockKey, Duration customTtl) {
		String resource = resource(lockKey);
		LockHandle hold = currentHold(resource);
		try {
			hold.extend(customTtl);
		}
		catch (LockLostException ex) {
			throw new IllegalStateException("Could not renew lock for: " + resource, ex);
		}
	}

	private LockHandle currentHold(String resource) {
		return view(resource, null).currentHold().orElseThrow(() -> new IllegalMonitorStateException(
				"The current thread doesn't hold a lock for: " + resource));
	}

	private static String resource(Object lockKey) {
		if (!(lockKey instanceof String key)) {
			throw new IllegalArgumentException("Lock keys must be Strings, was " + lockKey);
		}
		LockTemplate.validateResource(key);
		return key;
	}

	private LockView view(String resource, @Nullable Duration leaseTime) {
		LockOptions options = LockOptions.defaults().withMode(LockMode.LEASE);
		Duration lease = (leaseTime != null) ? leaseTime : this.ttl;
		return this.template.asLock(resource, (lease != null) ? options.withLeaseTime(lease) : options);
	}

	@Override
	public String toString() {
		return "DistributedLockRegistry[ttl=" + ((this.ttl != null) ? this.ttl : "renewed") + "]";
	}

	/** One key's lock: Lock views of the template with the registry's or the call's TTL. */
	private final class RegistryLock implements DistributedLock {

		private final String resource;

		private final LockView view;

		RegistryLock(String resource) {
			this.resource = resource;
			this.view = view(resource, null);
		}

		@Override
		public void lock() {
			this.view.lock();
		}

		@Override
		public void lock(Duration ttl) {
			view(this.resource, ttl).lock();
		}

		@Override
		public void lockInterruptibly() throws InterruptedException {
			this.view.lockInterruptibly();
		}

		@Override
		public boolean tryLock() {
			return this.view.tryLock();
		}

		@Override
		public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
			return this.view.tryLock(time, unit);
		}

		@Override
		public boolean tryLock(Duration waitTime, Duration ttl) throws InterruptedException {
			return view(this.resource, ttl).tryLock(waitTime.toNanos(), TimeUnit.NANOSECONDS);
		}

		@Override
		public void unlock() {
			try {
				this.view.unlock();
			}
			catch (LockLostException ex) {
				throw (ConcurrentModificationException) new ConcurrentModificationException("Lock was released in the "
						+ "store due to expiration. The integrity of data protected by this lock may have been "
						+ "compromised: " + this.resource).initCause(ex);
			}
		}

		@Override
		public java.util.concurrent.locks.Condition newCondition() {
			return this.view.newCondition();
		}

		@Override
		public String toString() {
			return "DistributedLockRegistry.Lock[" + this.resource + "]";
		}

	}

}
