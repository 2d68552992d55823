package io.github.dblock.testing;

import io.github.dblock.contract.ContractStore;
import io.github.dblock.contract.OptimisticLockContractTests;

/**
 * lock-core's OPTIMISTIC contract, the tests the real template passes on the database, against
 * {@link InMemoryLockTemplate}s on one {@link InMemoryLockStore}.
 */
class InMemoryOptimisticContractTests extends OptimisticLockContractTests {

	@Override
	protected ContractStore newStore() {
		return new InMemoryContractStore(mode());
	}

}
