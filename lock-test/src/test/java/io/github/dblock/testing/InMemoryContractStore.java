package io.github.dblock.testing;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import io.github.dblock.LockMode;
import io.github.dblock.LockTemplate;
import io.github.dblock.contract.ContractStore;
import io.github.dblock.jdbc.admin.LockTableAdmin;
import org.jspecify.annotations.Nullable;

/**
 * The lock contract tests' store in memory: the nodes are {@link InMemoryLockTemplate}s on one
 * {@link InMemoryLockStore} (defaults wait 0 and lease 30 s, as the database nodes), the counter and the tokens are
 * plain memory changed under the lock. A unit of work is never rolled back here, which is why in-memory OPTIMISTIC work
 * never overlaps (see {@link InMemoryLockStore}).
 */
final class InMemoryContractStore implements ContractStore {

	private final InMemoryLockStore store = new InMemoryLockStore();

	private final LockMode mode;

	private final Map<String, Long> counters = new ConcurrentHashMap<>();

	private final Map<String, List<Long>> tokens = new ConcurrentHashMap<>();

	InMemoryContractStore(LockMode mode) {
		this.mode = mode;
	}

	InMemoryLockStore store() {
		return this.store;
	}

	@Override
	public LockTemplate node(String name) {
		return new InMemoryLockTemplate(this.store, name, this.mode, Duration.ZERO, Duration.ofSeconds(30));
	}

	@Override
	public void createCounter(String name) {
		this.counters.put(name, 0L);
	}

	@Override
	public void incrementCounterNonAtomically(String name) {
		long value = this.counters.get(name);
		Thread.yield();
		this.counters.put(name, value + 1);
	}

	@Override
	public long readCounter(String name) {
		return this.counters.get(name);
	}

	@Override
	public void recordToken(String name, long token) {
		this.tokens.computeIfAbsent(name, (key) -> Collections.synchronizedList(new ArrayList<>())).add(token);
	}

	@Override
	public List<Long> recordedTokens(String name) {
		List<Long> recorded = this.tokens.getOrDefault(name, List.of());
		synchronized (recorded) {
			return List.copyOf(recorded);
		}
	}

	@Override
	public @Nullable String currentOwner(String resource) {
		return this.store.find(resource).filter(LockTableAdmin.LockRow::held).map(LockTableAdmin.LockRow::holder)
			.orElse(null);
	}

	@Override
	public Optional<LockTableAdmin.LockRow> row(String resource) {
		return this.store.find(resource);
	}

	@Override
	public Instant now() {
		return this.store.now();
	}

	@Override
	public void close() {
	}

}
