package io.github.dblock.engine;

import io.github.dblock.spi.HeldLock;
import io.github.dblock.spi.LockProvider;
import io.github.dblock.spi.ReadWriteLockProvider;
import io.github.dblock.spi.TransactionCheckedLock;
import io.github.dblock.spi.TransactionalLockProvider;
import io.github.dblock.spi.WorkLockProvider;
import org.jspecify.annotations.Nullable;

/**
 * The one place where the engine asks which optional capabilities of the SPI a provider or a held lock has: a
 * provider of read/write locks ({@link ReadWriteLockProvider}), a provider whose lock a transaction holds
 * ({@link TransactionalLockProvider}, PESSIMISTIC) or whose work runs in the transaction that checks a version
 * ({@link WorkLockProvider}, OPTIMISTIC); a held lock that can be checked at commit
 * ({@link TransactionCheckedLock}). An optional capability's answer is {@code null} when it is
 * absent. Stateless, so thread-safe.
 */
final class Capabilities {

	private Capabilities() {
	}

	/** The provider as a PESSIMISTIC one, whose lock a transaction holds, or {@code null}. */
	static @Nullable TransactionalLockProvider transactional(LockProvider provider) {
		return (provider instanceof TransactionalLockProvider transactional) ? transactional : null;
	}

	/** The provider as an OPTIMISTIC one, with no lock to hold, or {@code null}. */
	static @Nullable WorkLockProvider work(LockProvider provider) {
		return (provider instanceof WorkLockProvider work) ? work : null;
	}

	/**
	 * The provider as one of read/write locks; the caller has checked that the lock type is not EXCLUSIVE, which
	 * only such a provider is configured for.
	 * @throws ClassCastException if the provider takes exclusive locks only
	 */
	static ReadWriteLockProvider readWrite(LockProvider provider) {
		return (ReadWriteLockProvider) provider;
	}

	/** The held lock as one that can be checked in the transaction that commits the work, or {@code null}. */
	static @Nullable TransactionCheckedLock transactionChecked(HeldLock lock) {
		return (lock instanceof TransactionCheckedLock checked) ? checked : null;
	}

}
