package io.github.dblock.engine;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

import io.github.dblock.CheckedLockCallback;
import io.github.dblock.LockCallback;
import io.github.dblock.LockHandle;
import io.github.dblock.LockInterruptedException;
import io.github.dblock.LockIntrospection;
import io.github.dblock.LockIntrospection.LocalHold;
import io.github.dblock.LockNotAcquiredException;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.spi.TransactionalLockProvider;
import io.github.dblock.spi.WorkLockProvider;
import io.micrometer.observation.Observation;
import org.jspecify.annotations.Nullable;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The engine behind {@link LockTemplate}: takes a resolved {@link LockCall} to the JVM-local side
 * ({@link Acquisitions}) and runs actions under locks in the way each mode needs (a work provider's own transaction
 * for OPTIMISTIC, a transaction per attempt for PESSIMISTIC outside any transaction ({@link TransactionAttemptLoop}),
 * the provider's transaction otherwise). Thread-safe.
 */
public final class LockEngine {

	private final LockSettings settings;

	private final ExclusiveHolds exclusive;

	private final ReadWriteHolds readWrite;

	private final Acquisitions acquisitions;

	private final TransactionAttemptLoop attemptLoop;

	private final LockIntrospection introspection = new Introspection();

	/** An engine with the given settings, holding nothing yet. */
	public LockEngine(LockSettings settings) {
		this.settings = settings;
		this.exclusive = new ExclusiveHolds(settings);
		this.readWrite = new ReadWriteHolds(settings);
		this.acquisitions = new Acquisitions(settings, this.exclusive, this.readWrite);
		this.attemptLoop = new TransactionAttemptLoop(settings, this.exclusive, this.acquisitions);
	}

	/** The read-only view of this engine's holds and waiters, for diagnostics. */
	public LockIntrospection introspection() {
		return this.introspection;
	}

	/**
	 * Runs a callback that may throw a checked exception as {@link #execute(LockCall, LockCallback)} does; its
	 * checked exception is rethrown as it was.
	 */
	public <T, E extends Exception> @Nullable T executeChecked(LockCall call, CheckedLockCallback<T, E> action)
			throws E {
		return CheckedCalls.executeChecked(action, (callback) -> execute(call, callback));
	}

	/** Acquires for the current thread, observed as one {@code distributed.lock.acquire}. */
	public Attempt acquire(LockCall call) {
		return this.acquisitions.acquire(call);
	}

	/** Runs the action under the lock as {@link LockTemplate#execute(String, LockOptions, LockCallback)} describes. */
	public <T> @Nullable T execute(LockCall call, LockCallback<T> action) {
		WorkLockProvider work = Capabilities.work(call.provider());
		if (work != null) {
			return executeWork(work, call, action);
		}
		TransactionalLockProvider transactional = Capabilities.transactional(call.provider());
		if (transactional == null) {
			return this.acquisitions.executeHolding(call, action, call.waitTime(), null, null);
		}
		if (!TransactionSynchronizationManager.isActualTransactionActive()
				&& TransactionSynchronizationManager.getResourceMap().isEmpty()) {
			return this.attemptLoop.execute(transactional, call, action);
		}
		return transactional.inTransaction(call.toLockRequest(call.deadlineNanos(), this.settings.holderDescription()),
				() -> this.acquisitions.executeHolding(call, action, call.waitTime(), null, null));
	}

	@SuppressWarnings("try") // the observation's scope is open for the try block, not used in it
	private <T> @Nullable T executeWork(WorkLockProvider provider, LockCall call,
			LockCallback<T> action) {
		this.exclusive.refuseWorkUnderHold(call.resource());
		WorkLockProvider.Outcome<T> outcome;
		Observation observation = this.settings.acquisition(call.resource(), call.mode()).start();
		try (Observation.Scope scope = observation.openScope()) {
			outcome = provider.execute(call.toLockRequest(call.deadlineNanos(), this.settings.holderDescription()),
					(held) -> {
						LockHandle handle = new WorkLockHandle(call.resource(), call.mode(), held.fencingToken(),
								this.exclusive);
						ThreadHolds.push(handle);
						try {
							return action.doWithLock(handle);
						}
						finally {
							ThreadHolds.pop(handle);
						}
					});
			observation.lowCardinalityKeyValue("outcome", outcome.committed() ? "acquired" : "timed_out");
		}
		catch (InterruptedException ex) {
			observation.lowCardinalityKeyValue("outcome", "failed").error(ex);
			Thread.currentThread().interrupt();
			throw new LockInterruptedException(call.resource(), ex);
		}
		catch (RuntimeException | Error ex) {
			observation.lowCardinalityKeyValue("outcome", "failed").error(ex);
			throw ex;
		}
		finally {
			observation.stop();
		}
		if (!outcome.committed()) {
			throw new LockNotAcquiredException(call.resource(), call.waitTime(), outcome.failure());
		}
		return outcome.value();
	}

	/** The view {@link #introspection()} returns: snapshots of the exclusive and read/write holds, no SQL. */
	private final class Introspection implements LockIntrospection {

		@Override
		public List<LocalHold> localHolds() {
			List<LocalHold> holds = new ArrayList<>(LockEngine.this.exclusive.localHolds());
			holds.addAll(LockEngine.this.readWrite.localHolds());
			holds.sort(Comparator.comparing(LocalHold::resource));
			return holds;
		}

		@Override
		public int localHeldCount() {
			return LockEngine.this.exclusive.heldCount() + LockEngine.this.readWrite.size();
		}

		@Override
		public int localResourceCount() {
			return LockEngine.this.exclusive.resourceCount() + LockEngine.this.readWrite.size();
		}

		@Override
		public boolean hasQueuedThreads(String resource) {
			return LockEngine.this.exclusive.hasQueuedThreads(resource);
		}

	}

}
