package io.github.dblock.contract;

import io.github.dblock.LockMode;

/** The lock contract for {@link LockMode#PESSIMISTIC}, in the dialect of the test server. */
public class PessimisticLockContractTests extends HeldLockContractTests {

	@Override
	protected LockMode mode() {
		return LockMode.PESSIMISTIC;
	}

	@Override
	protected boolean holderVisibleWhileHeld() {
		return false;
	}

}
