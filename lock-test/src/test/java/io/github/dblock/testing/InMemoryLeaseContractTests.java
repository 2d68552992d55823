package io.github.dblock.testing;

import io.github.dblock.contract.ContractStore;
import io.github.dblock.contract.LeaseLockContractTests;

/**
 * lock-core's LEASE contract, the tests the real template passes on the database, against
 * {@link InMemoryLockTemplate}s on one {@link InMemoryLockStore}.
 */
class InMemoryLeaseContractTests extends LeaseLockContractTests {

	@Override
	protected ContractStore newStore() {
		return new InMemoryContractStore(mode());
	}

}
