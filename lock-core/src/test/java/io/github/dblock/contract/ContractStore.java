package io.github.dblock.contract;

import java.time.Instant;
import java.util.List;
import java.util.Optional;

import io.github.dblock.LockTemplate;
import io.github.dblock.jdbc.admin.LockTableAdmin;
import org.jspecify.annotations.Nullable;

/**
 * Where the nodes of the lock contract tests meet, and the data their units of work change: the test database
 * ({@link LockContractTests#newStore()}), or, in lock-test, an in-memory lock store with data in memory. The tests
 * assert through it only what the contract promises, so that the same tests hold for both.
 */
public interface ContractStore extends AutoCloseable {

	/** A node: a template with its own JVM-local state, defaults wait 0 and lease 30 s, meeting the others here. */
	LockTemplate node(String name);

	/** Creates the counter {@code name} at zero. */
	void createCounter(String name) throws Exception;

	/**
	 * Reads the counter, then writes it plus one: loses updates unless units of work take effect one at a time. Runs
	 * in the unit of work's transaction when there is one.
	 */
	void incrementCounterNonAtomically(String name);

	long readCounter(String name) throws Exception;

	/** Records a fencing token in the unit of work's transaction (rolled back with it), in the order of its commit. */
	void recordToken(String name, long token);

	/** The tokens recorded under {@code name}, in commit order. */
	List<Long> recordedTokens(String name) throws Exception;

	/** The owner token of the resource's exclusive lock in the store, {@code null} when it has none. */
	@Nullable String currentOwner(String resource) throws Exception;

	/** The resource's exclusive lock as the store holds it (see {@link LockTableAdmin#find(String)}). */
	Optional<LockTableAdmin.LockRow> row(String resource) throws Exception;

	/** The store's current time, the clock leases are measured on. */
	Instant now() throws Exception;

	@Override
	void close();

}
