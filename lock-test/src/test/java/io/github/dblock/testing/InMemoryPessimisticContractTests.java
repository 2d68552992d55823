package io.github.dblock.testing;

import io.github.dblock.contract.ContractStore;
import io.github.dblock.contract.PessimisticLockContractTests;

/**
 * lock-core's PESSIMISTIC contract, the tests the real template passes on the database, against
 * {@link InMemoryLockTemplate}s on one {@link InMemoryLockStore}.
 */
class InMemoryPessimisticContractTests extends PessimisticLockContractTests {

	@Override
	protected ContractStore newStore() {
		return new InMemoryContractStore(mode());
	}

}
