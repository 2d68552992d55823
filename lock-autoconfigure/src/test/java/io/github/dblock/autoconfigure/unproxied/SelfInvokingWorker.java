package io.github.dblock.autoconfigure.unproxied;

import io.github.dblock.DistributedLock;

/** A bean that calls its own locked method on itself: from another method, from a lambda, and recursively. */
public class SelfInvokingWorker {

	@DistributedLock("buy:#{#sku}")
	public void buy(String sku, int depth) {
		if (depth > 0) {
			buy(sku + "-next", depth - 1);
		}
	}

	public void refill(String sku) {
		buy(sku, 0);
	}

	public Runnable refillLater(String sku) {
		return () -> buy(sku, 0);
	}

	public void other(SelfInvokingWorker proxy) {
		proxy.toString();
	}

}
