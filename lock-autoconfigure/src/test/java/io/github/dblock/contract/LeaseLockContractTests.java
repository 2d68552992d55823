package io.github.dblock.contract;

import io.github.dblock.LockMode;

/** The lock contract for {@link LockMode#LEASE}. */
class LeaseLockContractTests extends LockContractTests {

	@Override
	protected LockMode mode() {
		return LockMode.LEASE;
	}

}
