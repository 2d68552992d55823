package io.github.dblock.benchmarks;

/**
 * One way of protecting a critical section on a named resource: one of our lock modes, a peer library, or a
 * baseline that does the minimum SQL. Implementations are thread-safe: the harness calls {@link #cycle} from many
 * threads at once.
 */
public interface Contender extends AutoCloseable {

	/** The contender's kind. */
	Kind kind();

	/**
	 * Takes the lock on the resource, waiting as long as needed (up to a minute), runs the section and releases.
	 * @param resource the resource name
	 * @param section the critical section; a contender may run it more than once (OPTIMISTIC re-runs a conflicting
	 * attempt), and the last run is the one that counts
	 * @throws Exception if the lock could not be taken within a minute or the database failed
	 */
	void cycle(String resource, Runnable section) throws Exception;

	@Override
	default void close() {
	}

	/** The contenders of a run, with the labels the report uses. */
	enum Kind {

		LEASE("LEASE", true), PESSIMISTIC("PESSIMISTIC", true), OPTIMISTIC("OPTIMISTIC", true),
		SHEDLOCK("ShedLock JDBC", true), JDBC_LOCK_REGISTRY("JdbcLockRegistry", true),
		SELECT_1("baseline: SELECT 1", false), TWO_WRITES("baseline: two writes", false),
		PLAIN_PESSIMISTIC("baseline: JDBC row lock", false), SEMAPHORE("semaphore permit (N = 1)", false),
		PESSIMISTIC_EXECUTE("PESSIMISTIC, execute", true),
		PESSIMISTIC_SERVER_CLOCK("PESSIMISTIC, fencing = server-clock", true),
		BARE_ROW_LOCK("baseline: bare row lock (no write)", false),
		RAW_LEASE_UPSERT("baseline: raw lease upsert", false),
		MINIMAL_FOR_UPDATE("baseline: minimal FOR UPDATE", false), GET_LOCK("baseline: GET_LOCK", false),
		REDISSON("Redisson RLock", true);

		private final String label;

		private final boolean lock;

		Kind(String label, boolean lock) {
			this.label = label;
			this.lock = lock;
		}

		/** The name in the report. */
		public String label() {
			return this.label;
		}

		/**
		 * Every kind this run can measure, in declaration order: all of them, less {@link #REDISSON} unless
		 * {@code -Dbench.redis-url} names a Redis server.
		 */
		public static Kind[] measurable() {
			return java.util.Arrays.stream(values()).filter(Kind::isMeasured).toArray(Kind[]::new);
		}

		/** The kinds given, less those this run cannot measure ({@link #measurable()}). */
		public static Kind[] measurable(Kind... kinds) {
			return java.util.Arrays.stream(kinds).filter(Kind::isMeasured).toArray(Kind[]::new);
		}

		/** Whether this run measures the kind: every kind but {@link #REDISSON}, which needs {@code -Dbench.redis-url}. */
		public boolean isMeasured() {
			return this != REDISSON || Contenders.redisUrl() != null;
		}

		/** Whether this is a real lock (that may be contended), not a baseline. */
		public boolean isLock() {
			return this.lock;
		}

	}

}
