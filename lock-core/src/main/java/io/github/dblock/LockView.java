package io.github.dblock;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * A {@link Lock} view of one resource's distributed lock, from {@link LockTemplate#asLock(String, LockOptions)}, for
 * code written against {@code java.util.concurrent.locks.Lock} (Redisson's {@code RLock}, a {@code ReentrantLock}).
 * Every successful {@code lock}/{@code tryLock} is one {@link LockTemplate#acquire(String, LockOptions) acquisition}
 * through the template, so everything the template does applies: the lease is kept on the database server's clock
 * (and renewed while held unless the options give a lease time), the hold gets a fencing token, observations and the
 * lost-lock signal work as for any other hold.
 * <ul>
 * <li>Owner: the thread that locked. Reentrant per thread, as the template is: a thread that holds the resource
 * (through this view, another view of it, or the template) locks it again without a database round trip, and the
 * lock is released in the database by the {@code unlock()} that matches the first {@code lock()}.</li>
 * <li>{@link #unlock()} from a thread that holds no lock through a view of this resource throws
 * {@link IllegalMonitorStateException}. It releases the thread's most recent hold taken through a view of the same
 * template, resource and type (so two views from two {@code asLock} calls are the same lock). A release that finds
 * the lease already ended throws {@link LockLostException}; the hold is gone either way.</li>
 * <li>{@link #lock()} waits without bound and is not interruptible (an interrupt is kept and set again on return);
 * {@link #lockInterruptibly()} and {@link #tryLock(long, TimeUnit)} throw {@link InterruptedException};
 * {@link #tryLock()} makes a single attempt (a database round trip, unless this thread already holds the
 * resource).</li>
 * <li>Database failures surface as {@link org.springframework.dao.DataAccessException} from any method, and
 * {@link LockLimitExceededException} in {@link LockMode#PESSIMISTIC}; {@link LockMode#OPTIMISTIC}, which holds
 * nothing, is refused.</li>
 * <li>{@link #newCondition()} throws {@link UnsupportedOperationException}: a condition would need to release and
 * re-take the lock in the database with notifications across nodes, which this library does not offer.</li>
 * </ul>
 * The fencing token of the current hold is {@code CurrentLock.get(resource).orElseThrow().fencingToken()} (see
 * {@link CurrentLock}), or {@link #currentHold()}.
 * <p>
 * Thread-safe: one view may be shared by any number of threads, each its own owner.
 */
public final class LockView implements Lock {

	/** How long {@link #lock()} waits in one acquisition before asking again. */
	private static final Duration UNBOUNDED = Duration.ofDays(365);

	/** The current thread's holds taken through views, per template, resource and type; most recent first. */
	private static final ThreadLocal<Map<Key, Deque<LockHandle>>> holds = new ThreadLocal<>();

	private final LockTemplate template;

	private final String resource;

	private final LockOptions options;

	private final Key key;

	LockView(LockTemplate template, String resource, LockOptions options) {
		LockTemplate.validateResource(resource);
		if (options == null) {
			throw new IllegalArgumentException("options must not be null");
		}
		if (options.getMode() == LockMode.OPTIMISTIC) {
			throw new IllegalArgumentException("Lock mode OPTIMISTIC has no lock to hold; a Lock view of '" + resource
					+ "' needs LEASE or PESSIMISTIC");
		}
		this.template = template;
		this.resource = resource;
		this.options = options;
		this.key = new Key(template, resource, options.getType());
	}

	/** The resource name, exactly as given. */
	public String getResource() {
		return this.resource;
	}

	/**
	 * Acquires the lock, waiting as long as it takes; an interrupt while waiting does not end the wait but is set
	 * again on return.
	 * @throws org.springframework.dao.DataAccessException on a database failure other than a timeout
	 */
	@Override
	public void lock() {
		boolean interrupted = false;
		try {
			while (true) {
				try {
					push(this.template.acquire(this.resource, this.options.withWaitTime(UNBOUNDED)));
					return;
				}
				catch (LockInterruptedException ex) {
					Thread.interrupted(); // cleared so that the next wait can go on; set again on return
					interrupted = true;
				}
				catch (LockNotAcquiredException ex) {
					// the wait ended (a year, or a timeout of the database): ask again
				}
			}
		}
		finally {
			if (interrupted) {
				Thread.currentThread().interrupt();
			}
		}
	}

	/**
	 * Acquires the lock, waiting as long as it takes unless interrupted.
	 * @throws InterruptedException if the thread was interrupted before or while waiting; nothing is held then
	 */
	@Override
	public void lockInterruptibly() throws InterruptedException {
		if (Thread.interrupted()) {
			throw new InterruptedException("Interrupted before locking '" + this.resource + "'");
		}
		while (true) {
			try {
				push(this.template.acquire(this.resource, this.options.withWaitTime(UNBOUNDED)));
				return;
			}
			catch (LockInterruptedException ex) {
				throw interrupted(ex);
			}
			catch (LockNotAcquiredException ex) {
				// the wait ended (a year, or a timeout of the database): ask again
			}
		}
	}

	/**
	 * Acquires the lock if it is free now (one attempt) or already held by this thread.
	 * @return whether the lock is now held by this thread
	 */
	@Override
	public boolean tryLock() {
		Optional<LockHandle> handle = this.template.tryAcquire(this.resource, this.options.withWaitTime(Duration.ZERO));
		handle.ifPresent(this::push);
		return handle.isPresent();
	}

	/**
	 * Acquires the lock if it becomes free within the given time; zero or negative makes a single attempt.
	 * @return whether the lock is now held by this thread
	 * @throws InterruptedException if the thread was interrupted before or while waiting; nothing is held then
	 */
	@Override
	public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
		if (Thread.interrupted()) {
			throw new InterruptedException("Interrupted before locking '" + this.resource + "'");
		}
		Duration wait = Duration.ofNanos(Math.max(0, unit.toNanos(time)));
		try {
			Optional<LockHandle> handle = this.template.tryAcquire(this.resource, this.options.withWaitTime(wait));
			handle.ifPresent(this::push);
			return handle.isPresent();
		}
		catch (LockInterruptedException ex) {
			throw interrupted(ex);
		}
	}

	/**
	 * Releases the current thread's most recent hold of this lock; the last one releases it in the database.
	 * @throws IllegalMonitorStateException if the current thread does not hold this lock through a view
	 * @throws LockLostException if the release found the lease already ended; the hold is gone
	 * @throws org.springframework.dao.DataAccessException if the database could not be reached; the hold is gone
	 * locally and the lease ends on its own
	 */
	@Override
	public void unlock() {
		Map<Key, Deque<LockHandle>> all = holds.get();
		Deque<LockHandle> mine = (all != null) ? all.get(this.key) : null;
		if (mine == null || mine.isEmpty()) {
			throw new IllegalMonitorStateException("Lock '" + this.resource + "' is not held by "
					+ Thread.currentThread().getName());
		}
		LockHandle handle = mine.pop();
		if (mine.isEmpty()) {
			all.remove(this.key);
			if (all.isEmpty()) {
				holds.remove();
			}
		}
		handle.close();
	}

	/**
	 * Not supported.
	 * @throws UnsupportedOperationException always: waiting on a condition would release and re-take the lock in
	 * the database, with signals across nodes
	 */
	@Override
	public Condition newCondition() {
		throw new UnsupportedOperationException("A distributed lock has no conditions (lock '" + this.resource + "')");
	}

	/** Whether the current thread holds this lock through a view (by this JVM's knowledge, see {@link LockHandle#isHeld()}). */
	public boolean isHeldByCurrentThread() {
		return currentHold().map(LockHandle::isHeld).orElse(false);
	}

	/** How many holds of this lock the current thread has taken through views and not unlocked. */
	public int getHoldCount() {
		Map<Key, Deque<LockHandle>> all = holds.get();
		Deque<LockHandle> mine = (all != null) ? all.get(this.key) : null;
		return (mine != null) ? mine.size() : 0;
	}

	/** The current thread's most recent hold of this lock taken through a view, for its fencing token. */
	public Optional<LockHandle> currentHold() {
		Map<Key, Deque<LockHandle>> all = holds.get();
		Deque<LockHandle> mine = (all != null) ? all.get(this.key) : null;
		return (mine != null) ? Optional.ofNullable(mine.peek()) : Optional.empty();
	}

	private void push(LockHandle handle) {
		Map<Key, Deque<LockHandle>> all = holds.get();
		if (all == null) {
			all = new HashMap<>(4);
			holds.set(all);
		}
		all.computeIfAbsent(this.key, (k) -> new ArrayDeque<>(2)).push(handle);
	}

	private InterruptedException interrupted(LockInterruptedException ex) {
		Thread.interrupted(); // InterruptedException replaces the status, as in the JDK
		InterruptedException interrupted = new InterruptedException("Interrupted while waiting for lock '"
				+ this.resource + "'");
		interrupted.initCause(ex);
		return interrupted;
	}

	@Override
	public String toString() {
		return "LockView[resource=" + this.resource + ", options=" + this.options + "]";
	}

	/** Identity of the template (it does not override equals), the resource and the type. */
	private record Key(LockTemplate template, String resource, LockType type) {
	}

}
