package io.github.dblock.contract;

import io.github.dblock.LockMode;

/**
 * The lock contract for {@link LockMode#OPTIMISTIC}: work may overlap in time, but its effects commit one at a
 * time, so the counter still ends exact and tokens still increase in commit order.
 */
public class OptimisticLockContractTests extends LockContractTests {

	@Override
	protected LockMode mode() {
		return LockMode.OPTIMISTIC;
	}

	@Override
	protected boolean excludesExecution() {
		return false;
	}

}
