package io.github.dblock.autoconfigure.unproxied;

import io.github.dblock.DistributedLock;

/** Has a locked method but is no bean of the test's context: its instances are created with {@code new}. */
public class NotABean {

	@DistributedLock("not-a-bean")
	public void work() {
	}

}
