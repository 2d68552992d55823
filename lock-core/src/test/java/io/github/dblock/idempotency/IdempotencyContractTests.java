package io.github.dblock.idempotency;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.CurrentLock;
import io.github.dblock.LockHandle;
import io.github.dblock.LockLostException;
import io.github.dblock.idempotency.AlreadyProcessedException;
import io.github.dblock.idempotency.IdempotencyInProgressException;
import io.github.dblock.idempotency.IdempotencyOptions;
import io.github.dblock.idempotency.IdempotencyRecord;
import io.github.dblock.idempotency.IdempotencyStatus;
import io.github.dblock.idempotency.IdempotencyTemplate;
import io.github.dblock.idempotency.OnDuplicate;
import io.github.dblock.jdbc.lease.IdempotencyStore;
import io.github.dblock.jdbc.lease.LeaseLockProvider;
import io.github.dblock.jdbc.sql.LockTable;
import io.github.dblock.test.CountingDataSource;
import io.github.dblock.test.nodes.IdempotencyNodes.Node;
import io.github.dblock.test.nodes.IdempotencyNodes;
import io.github.dblock.test.TestDatabase;
import io.github.dblock.wait.Backoff;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

/**
 * The run-once contract of {@link IdempotencyTemplate} on the real database: every duplicate call is answered from the
 * record, a failure or an ended retention lets the work run again, a dead runner is taken over after its lease, and
 * concurrent duplicates on several nodes run the work exactly once. Executions are counted in the JVM and, where
 * threads and nodes race, in a table.
 */
class IdempotencyContractTests {

	private static HikariDataSource pool;

	private static Node node;

	private static JdbcTemplate jdbc;

	@BeforeAll
	static void setUp() {
		pool = TestDatabase.get().newDataSource(24);
		node = IdempotencyNodes.node(pool, "node-a", Duration.ofSeconds(3));
		jdbc = new JdbcTemplate(pool);
		TestDatabase.get().execute("CREATE TABLE IF NOT EXISTS idem_test_execution (seq BIGINT AUTO_INCREMENT PRIMARY KEY,"
				+ " idem_key VARCHAR(100) NOT NULL, runner VARCHAR(100) NOT NULL, KEY (idem_key))");
	}

	@AfterAll
	static void tearDown() {
		node.close();
		pool.close();
	}

	private static String newKey(String prefix) {
		return prefix + ":" + UUID.randomUUID();
	}

	private static int executions(String key) {
		return jdbc.queryForObject("SELECT COUNT(*) FROM idem_test_execution WHERE idem_key = ?", Integer.class, key);
	}

	@Test
	void theFirstCallRunsAndADuplicateGetsTheRecordedOutcomeWithoutRunning() {
		String key = newKey("order");
		AtomicInteger runs = new AtomicInteger();
		Receipt first = node.template().execute(key, Receipt.class, (claim) -> new Receipt("r-" + runs.incrementAndGet(), 42));
		Receipt second = node.template().execute(key, Receipt.class, (claim) -> new Receipt("r-" + runs.incrementAndGet(), 0));
		assertThat(first).isEqualTo(new Receipt("r-1", 42));
		assertThat(second).isEqualTo(new Receipt("r-1", 42));
		assertThat(runs).hasValue(1);
		IdempotencyRecord record = node.template().find(key).orElseThrow();
		assertThat(record.status()).isEqualTo(IdempotencyStatus.SUCCEEDED);
		assertThat(record.attempts()).isEqualTo(1);
		assertThat(record.outcomeJson()).isEqualTo("{\"id\":\"r-1\",\"amount\":42}");
		assertThat(record.outcomeType()).isEqualTo(Receipt.class.getName());
		assertThat(record.holder()).startsWith("node-a [");
		assertThat(record.completedAt()).isNotNull();
		assertThat(record.retainUntil()).isAfter(record.completedAt().plus(Duration.ofMinutes(59)));
	}

	@Test
	void aNewKeyCostsOneStatementToClaimAndOneToCompleteAndADuplicateOneReadWithoutWarnings() {
		CountingDataSource counting = new CountingDataSource(pool);
		try (Node counted = IdempotencyNodes.node(counting, "counted", Duration.ofSeconds(3))) {
			String key = newKey("counted");
			counting.reset();
			counted.template().execute(key, String.class, (claim) -> "once");
			assertThat(counting.statements()).extracting((sql) -> sql.substring(0, sql.indexOf(' ')))
				.containsExactly("INSERT", "UPDATE");
			counting.reset();
			counted.template().execute(key, String.class, (claim) -> "twice");
			assertThat(counting.statements()).extracting((sql) -> sql.substring(0, sql.indexOf(' ')))
				.as("the insert of a duplicate fails on the key, then one read").containsExactly("INSERT", "SELECT");
			assertThat(counting.warnings()).isEmpty();
		}
	}

	@Test
	void theWorkSeesItsClaimAsTheCurrentClaimWithAFencingToken() {
		String key = newKey("fenced");
		List<Long> tokens = new ArrayList<>();
		// other test classes on this thread may leave handles of their own on it: compare with what was there
		java.util.Optional<LockHandle> before = CurrentLock.get();
		assertThat(IdempotencyTemplate.currentClaim()).isEmpty();
		node.template().execute(key, Long.class, (claim) -> {
			assertThat(IdempotencyTemplate.currentClaim()).containsSame(claim);
			assertThat(CurrentLock.get()).as("a claim is not a lock").isEqualTo(before);
			assertThat(claim.key()).isEqualTo(key);
			assertThat(claim.isHeld()).isTrue();
			tokens.add(claim.fencingToken());
			return claim.fencingToken();
		});
		assertThat(IdempotencyTemplate.currentClaim()).as("the claim is gone from the thread afterwards").isEmpty();
		assertThat(CurrentLock.get()).isEqualTo(before);
		assertThat(node.template().find(key).orElseThrow().fencingToken()).isEqualTo(tokens.get(0));
	}

	@Test
	void nestedWorkSeesItsInnermostClaimAndTheOuterOneAgainAfterwards() {
		String outerKey = newKey("outer");
		String innerKey = newKey("inner");
		List<String> seen = new ArrayList<>();
		node.template().execute(outerKey, String.class, (outer) -> {
			String inner = node.template().execute(innerKey, String.class, (claim) -> {
				IdempotencyClaim current = IdempotencyTemplate.currentClaim().orElseThrow();
				assertThat(current).isSameAs(claim);
				seen.add(current.key());
				return "inner";
			});
			assertThat(IdempotencyTemplate.currentClaim()).containsSame(outer);
			seen.add(IdempotencyTemplate.currentClaim().orElseThrow().key());
			return inner;
		});
		assertThat(seen).containsExactly(innerKey, outerKey);
		assertThat(IdempotencyTemplate.currentClaim()).isEmpty();
	}

	@Test
	void withTheThrowPolicyADuplicateGetsAlreadyProcessedException() {
		String key = newKey("throw");
		AtomicInteger runs = new AtomicInteger();
		node.template().execute(key, Integer.class, (claim) -> runs.incrementAndGet());
		IdempotencyRecord record = node.template().find(key).orElseThrow();
		assertThatExceptionOfType(AlreadyProcessedException.class)
			.isThrownBy(() -> node.template().execute(key, IdempotencyOptions.defaults().withOnDuplicate(OnDuplicate.THROW),
					Integer.class, (claim) -> runs.incrementAndGet()))
			.satisfies((ex) -> {
				assertThat(ex.getKey()).isEqualTo(key);
				assertThat(ex.getCompletedAt()).isEqualTo(record.completedAt());
				assertThat(ex.getMessage()).contains("'" + key + "' was already processed at " + record.completedAt());
			});
		assertThat(runs).hasValue(1);
	}

	@Test
	void aFailedFirstAttemptIsRecordedAsFailedAndTheNextCallRunsAgain() {
		String key = newKey("retry");
		AtomicInteger runs = new AtomicInteger();
		assertThatIllegalStateException().isThrownBy(() -> node.template().execute(key, String.class, (claim) -> {
			runs.incrementAndGet();
			throw new IllegalStateException("payment provider down");
		})).withMessage("payment provider down");
		IdempotencyRecord failed = node.template().find(key).orElseThrow();
		assertThat(failed.status()).isEqualTo(IdempotencyStatus.FAILED);
		assertThat(failed.error()).isEqualTo("java.lang.IllegalStateException: payment provider down");
		assertThat(failed.outcomeJson()).isNull();
		String result = node.template().execute(key, String.class, (claim) -> "paid after " + runs.incrementAndGet());
		assertThat(result).isEqualTo("paid after 2");
		assertThat(node.template().execute(key, String.class, (claim) -> "again " + runs.incrementAndGet()))
			.isEqualTo("paid after 2");
		IdempotencyRecord succeeded = node.template().find(key).orElseThrow();
		assertThat(succeeded.status()).isEqualTo(IdempotencyStatus.SUCCEEDED);
		assertThat(succeeded.attempts()).isEqualTo(2);
		assertThat(succeeded.error()).isNull();
		assertThat(succeeded.fencingToken()).isGreaterThan(failed.fencingToken());
		assertThat(runs).hasValue(2);
	}

	@Test
	void claimsAndTakeOversCountTheSameWhenTheDriverReportsAffectedRatherThanFoundRows() {
		TestDatabase db = TestDatabase.get();
		String url = db.jdbcUrl() + (db.jdbcUrl().contains("?") ? "&" : "?") + "useAffectedRows=true";
		try (HikariDataSource affected = new HikariDataSource()) {
			affected.setJdbcUrl(url);
			affected.setUsername(db.username());
			affected.setPassword(db.password());
			affected.setMaximumPoolSize(4);
			try (Node other = IdempotencyNodes.node(affected, "affected-rows", Duration.ofSeconds(3))) {
				String key = newKey("affected");
				AtomicInteger runs = new AtomicInteger();
				assertThatIllegalStateException().isThrownBy(() -> other.template().execute(key, Integer.class, (claim) -> {
					runs.incrementAndGet();
					throw new IllegalStateException("first attempt fails");
				}));
				Integer second = other.template().execute(key, Integer.class, (claim) -> runs.incrementAndGet());
				Integer duplicate = other.template().execute(key, Integer.class, (claim) -> runs.incrementAndGet());
				assertThat(second).isEqualTo(2);
				assertThat(duplicate).isEqualTo(2);
				assertThat(runs).hasValue(2);
				assertThat(other.template().find(key).orElseThrow().attempts()).isEqualTo(2);
			}
		}
	}

	@Test
	void afterTheRetentionEndsTheKeyRunsAgain() throws Exception {
		String key = newKey("retention");
		AtomicInteger runs = new AtomicInteger();
		IdempotencyOptions shortRetention = IdempotencyOptions.defaults().withRetention(Duration.ofMillis(500));
		Integer first1 = node.template().execute(key, shortRetention, Integer.class, (claim) -> runs.incrementAndGet());
		Integer duplicate = node.template().execute(key, shortRetention, Integer.class, (claim) -> runs.incrementAndGet());
		assertThat(first1).isEqualTo(1);
		assertThat(duplicate).as("within the retention").isEqualTo(1);
		IdempotencyRecord first = node.template().find(key).orElseThrow();
		assertThat(Duration.between(first.completedAt(), first.retainUntil())).isEqualTo(Duration.ofMillis(500));
		Thread.sleep(700);
		Integer again = node.template().execute(key, shortRetention, Integer.class, (claim) -> runs.incrementAndGet());
		assertThat(again).as("after the retention").isEqualTo(2);
		IdempotencyRecord second = node.template().find(key).orElseThrow();
		assertThat(second.attempts()).as("a new life of the key").isEqualTo(1);
		assertThat(second.fencingToken()).isGreaterThan(first.fencingToken());
		assertThat(runs).hasValue(2);
	}

	@Test
	void aRunnerThatStopsRenewingIsTakenOverWhenItsLeaseEndsAndCannotCompleteAfterwards() throws Exception {
		String key = newKey("crashed");
		try (Node crashing = IdempotencyNodes.node(pool, "crashing-node", Duration.ofSeconds(1));
				Node survivor = IdempotencyNodes.node(pool, "survivor", Duration.ofSeconds(5))) {
			io.github.dblock.idempotency.IdempotencyProvider.HeldClaim dead = crashing.store()
				.claim(key, "crashing-node [main]", Duration.ofSeconds(1), Duration.ofHours(1), System.nanoTime())
				.claim();
			assertThat(dead).isNotNull();
			crashing.renewals().close(); // its renewals stop, as they do when the process dies
			assertThatExceptionOfType(IdempotencyInProgressException.class)
				.isThrownBy(() -> survivor.template().execute(key, IdempotencyOptions.defaults().withWaitTime(Duration.ZERO),
						String.class, (claim) -> "must not run"))
				.satisfies((ex) -> assertThat(ex.getHolder()).startsWith("crashing-node [main]"));
			long start = System.nanoTime();
			String result = survivor.template().execute(key, String.class, (claim) -> "run by survivor, token "
					+ claim.fencingToken());
			long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
			IdempotencyRecord record = survivor.template().find(key).orElseThrow();
			assertThat(result).isEqualTo("run by survivor, token " + record.fencingToken());
			assertThat(record.fencingToken()).isGreaterThan(dead.fencingToken());
			assertThat(record.attempts()).isEqualTo(2);
			assertThat(record.holder()).startsWith("survivor [");
			assertThat(waitedMillis).as("waited for the lease to end").isBetween(300L, 5_000L);
			assertThatExceptionOfType(LockLostException.class).isThrownBy(() -> dead.succeed("\"late\"", "String", null))
				.withMessageContaining("no longer claimed by this call");
			assertThat(survivor.template().find(key).orElseThrow().outcomeJson()).isEqualTo("\"" + result + "\"");
		}
	}

	@Test
	void aRunnerWorkingLongerThanItsLeaseKeepsItsClaimThroughRenewal() throws Exception {
		String key = newKey("long");
		try (Node runner = IdempotencyNodes.node(pool, "long-runner", Duration.ofSeconds(1));
				Node duplicate = IdempotencyNodes.node(pool, "duplicate", Duration.ofSeconds(1))) {
			AtomicInteger runs = new AtomicInteger();
			List<String> seenByDuplicate = new ArrayList<>();
			String result = runner.template().execute(key, String.class, (claim) -> {
				runs.incrementAndGet();
				sleep(2_500); // two and a half leases
				assertThatExceptionOfType(IdempotencyInProgressException.class)
					.isThrownBy(() -> duplicate.template().execute(key, IdempotencyOptions.defaults().withWaitTime(
							Duration.ZERO), String.class, (other) -> "taken over"))
					.satisfies((ex) -> seenByDuplicate.add(ex.getHolder()));
				assertThat(claim.isHeld()).isTrue();
				return "finished by the first runner";
			});
			assertThat(result).isEqualTo("finished by the first runner");
			assertThat(seenByDuplicate).singleElement().asString().startsWith("long-runner [");
			IdempotencyRecord record = runner.template().find(key).orElseThrow();
			assertThat(record.attempts()).isEqualTo(1);
			assertThat(record.status()).isEqualTo(IdempotencyStatus.SUCCEEDED);
			assertThat(runs).hasValue(1);
		}
	}

	@Test
	void aClaimDeletedWhileItsWorkRunsIsFoundLostAndItsCompletionFails() {
		String key = newKey("lost");
		List<String> lost = new java.util.concurrent.CopyOnWriteArrayList<>(); // told on the renewal's thread
		try (Node runner = IdempotencyNodes.node(pool, "losing-runner", Duration.ofSeconds(1))) {
			assertThatExceptionOfType(LockLostException.class).isThrownBy(() -> runner.template().execute(key,
					String.class, (claim) -> {
						claim.onLost((handle) -> lost.add(handle.key()));
						assertThat(node.template().forget(key)).isTrue(); // an administrator deletes the record
						await().atMost(Duration.ofSeconds(3)).until(() -> !claim.isHeld());
						return "too late";
					}))
				.withMessageContaining("no longer claimed by this call");
			await().atMost(Duration.ofSeconds(3)).untilAsserted(() -> assertThat(lost).containsExactly(key));
			assertThat(runner.template().find(key)).as("nothing recorded by the lost runner").isEmpty();
		}
	}

	@Test
	void sixteenConcurrentDuplicatesOnFourNodesRunTheWorkExactlyOnceAndAllGetItsOutcome() throws Exception {
		String key = newKey("burst");
		List<Node> nodes = new ArrayList<>();
		for (int n = 0; n < 4; n++) {
			nodes.add(IdempotencyNodes.node(pool, "burst-node-" + n, Duration.ofSeconds(3)));
		}
		ExecutorService threads = Executors.newFixedThreadPool(16);
		CountDownLatch start = new CountDownLatch(1);
		try {
			List<Future<String>> results = new ArrayList<>();
			for (int t = 0; t < 16; t++) {
				IdempotencyTemplate template = nodes.get(t % 4).template();
				String runner = "thread-" + t;
				results.add(threads.submit(() -> {
					start.await();
					return template.execute(key, String.class, (claim) -> {
						jdbc.update("INSERT INTO idem_test_execution (idem_key, runner) VALUES (?, ?)", key, runner);
						sleep(300); // long enough for every duplicate to find the key running
						return "done by " + runner;
					});
				}));
			}
			start.countDown();
			List<String> outcomes = new ArrayList<>();
			for (Future<String> result : results) {
				outcomes.add(result.get(60, TimeUnit.SECONDS));
			}
			assertThat(executions(key)).isEqualTo(1);
			String runner = jdbc.queryForObject("SELECT runner FROM idem_test_execution WHERE idem_key = ?", String.class, key);
			assertThat(outcomes).hasSize(16).containsOnly("done by " + runner);
		}
		finally {
			threads.shutdownNow();
			nodes.forEach(Node::close);
		}
	}

	@Test
	void theOutcomeCommitsWithTheCallersTransactionAndARollbackLeavesTheKeyToRunAgain() {
		TestDatabase.get().execute("CREATE TABLE IF NOT EXISTS idem_test_payment (idem_key VARCHAR(100) PRIMARY KEY,"
				+ " amount INT NOT NULL)");
		TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(pool));
		String key = newKey("payment");
		AtomicInteger runs = new AtomicInteger();
		List<IdempotencyStatus> seenByOthersBeforeCommit = new ArrayList<>();
		transactions.executeWithoutResult((status) -> {
			node.template().execute(key, Integer.class, (claim) -> {
				runs.incrementAndGet();
				return jdbc.update("INSERT INTO idem_test_payment (idem_key, amount) VALUES (?, 10)", key);
			});
			seenByOthersBeforeCommit.add(committedStatus(key));
			status.setRollbackOnly();
		});
		assertThat(seenByOthersBeforeCommit).as("the claim is committed at once, the outcome only with the transaction")
			.containsExactly(IdempotencyStatus.RUNNING);
		assertThat(payments(key)).as("business write rolled back").isZero();
		IdempotencyRecord afterRollback = node.template().find(key).orElseThrow();
		assertThat(afterRollback.status()).isEqualTo(IdempotencyStatus.FAILED);
		assertThat(afterRollback.error()).isEqualTo("the transaction that recorded the outcome rolled back");
		Integer rows = transactions.execute((status) -> node.template().execute(key, Integer.class, (claim) -> {
			runs.incrementAndGet();
			return jdbc.update("INSERT INTO idem_test_payment (idem_key, amount) VALUES (?, 10)", key);
		}));
		assertThat(rows).isEqualTo(1);
		assertThat(payments(key)).isEqualTo(1);
		assertThat(node.template().find(key).orElseThrow().status()).isEqualTo(IdempotencyStatus.SUCCEEDED);
		Integer duplicate = transactions.execute((status) -> node.template().execute(key, Integer.class,
				(claim) -> runs.incrementAndGet()));
		assertThat(duplicate).isEqualTo(1);
		assertThat(runs).hasValue(2);
	}

	private static IdempotencyStatus committedStatus(String key) {
		// a separate node on its own connection sees committed state only
		return node.store().find(key).orElseThrow().status();
	}

	private static int payments(String key) {
		return jdbc.queryForObject("SELECT COUNT(*) FROM idem_test_payment WHERE idem_key = ?", Integer.class, key);
	}

	@Test
	void forgettingAKeyLetsItRunAgain() {
		String key = newKey("forget");
		AtomicInteger runs = new AtomicInteger();
		node.template().execute(key, Integer.class, (claim) -> runs.incrementAndGet());
		assertThat(node.template().forget(key)).isTrue();
		assertThat(node.template().find(key)).isEmpty();
		assertThat(node.template().forget(key)).isFalse();
		Integer again = node.template().execute(key, Integer.class, (claim) -> runs.incrementAndGet());
		assertThat(again).isEqualTo(2);
	}

	@Test
	void voidWorkRecordsNoOutcomeAndDuplicatesJustReturn() {
		String key = newKey("void");
		AtomicInteger runs = new AtomicInteger();
		node.template().executeWithoutResult(key, IdempotencyOptions.defaults(), (claim) -> runs.incrementAndGet());
		node.template().executeWithoutResult(key, IdempotencyOptions.defaults(), (claim) -> runs.incrementAndGet());
		assertThat(runs).hasValue(1);
		IdempotencyRecord record = node.template().find(key).orElseThrow();
		assertThat(record.status()).isEqualTo(IdempotencyStatus.SUCCEEDED);
		assertThat(record.outcomeJson()).isNull();
	}

	@Test
	void anOutcomeThatCannotBeWrittenAsJsonIsSucceededWithoutOutcomeAndDuplicatesAreTold() {
		String key = newKey("unwritable");
		AtomicInteger runs = new AtomicInteger();
		Object unwritable = node.template().execute(key, Object.class, (claim) -> {
			runs.incrementAndGet();
			return new Unwritable();
		});
		assertThat(unwritable).isNotNull();
		assertThatExceptionOfType(AlreadyProcessedException.class)
			.isThrownBy(() -> node.template().execute(key, Object.class, (claim) -> runs.incrementAndGet()))
			.withMessageContaining("could not be written as JSON");
		assertThat(runs).hasValue(1);
	}

	@Test
	void badInputFailsBeforeAnythingIsClaimed() {
		IdempotencyTemplate template = node.template();
		AtomicInteger runs = new AtomicInteger();
		assertThatIllegalArgumentException().isThrownBy(() -> template.execute(" ", String.class, (claim) -> "x"))
			.withMessageStartingWith("Invalid idempotency key: Lock resource name must not be blank");
		assertThatIllegalArgumentException().isThrownBy(() -> template.execute(null, String.class, (claim) -> "x"))
			.withMessageContaining("must not be null");
		assertThatIllegalArgumentException().isThrownBy(() -> template.execute("k".repeat(256), String.class, (claim) -> "x"))
			.withMessageContaining("256 characters");
		assertThatIllegalArgumentException()
			.isThrownBy(() -> IdempotencyOptions.defaults().withRetention(Duration.ofSeconds(-1)))
			.withMessage("retention must be positive, was PT-1S");
		assertThatIllegalArgumentException().isThrownBy(() -> IdempotencyOptions.defaults().withRetention(Duration.ZERO))
			.withMessage("retention must be positive, was PT0S");
		assertThatIllegalArgumentException()
			.isThrownBy(() -> IdempotencyOptions.defaults().withRetention(Duration.ofDays(36_501)))
			.withMessageContaining("at most 36500d");
		assertThatIllegalArgumentException().isThrownBy(() -> IdempotencyOptions.defaults().withWaitTime(Duration.ofMillis(-1)))
			.withMessageContaining("waitTime must be zero");
		assertThatIllegalArgumentException()
			.isThrownBy(() -> IdempotencyOptions.defaults().withLeaseTime(Duration.ofMillis(999)))
			.withMessageContaining("leaseTime must be at least 1s");
		String key = newKey("bad");
		assertThatIllegalArgumentException().isThrownBy(() -> template.execute(key, null, String.class, (claim) -> "x"))
			.withMessageContaining("must not be null");
		assertThatIllegalArgumentException().isThrownBy(() -> template.execute(key, IdempotencyOptions.defaults(),
				String.class, null));
		assertThat(template.find(key)).as("nothing claimed").isEmpty();
		assertThat(runs).hasValue(0);
	}

	@Test
	void everyCallIsObservedWithItsOutcome() {
		MeterRegistry meters = new SimpleMeterRegistry();
		ObservationRegistry observations = ObservationRegistry.create();
		observations.observationConfig().observationHandler(new DefaultMeterObservationHandler(meters));
		try (Node observed = IdempotencyNodes.node(pool, "observed", Duration.ofSeconds(3))) {
			observed.template().setObservationRegistry(observations);
			String key = newKey("observed");
			observed.template().execute(key, String.class, (claim) -> "once");
			observed.template().execute(key, String.class, (claim) -> "twice");
			assertThatExceptionOfType(AlreadyProcessedException.class).isThrownBy(() -> observed.template()
				.execute(key, IdempotencyOptions.defaults().withOnDuplicate(OnDuplicate.THROW), String.class,
						(claim) -> "thrice"));
			assertThatIllegalStateException().isThrownBy(() -> observed.template().execute(newKey("observed-failing"),
					String.class, (claim) -> {
						throw new IllegalStateException("boom");
					}));
			for (String outcome : new String[] { "ran", "duplicate", "already_processed", "failed" }) {
				assertThat(meters.find("distributed.lock.idempotent").tag("outcome", outcome).timer())
					.as(outcome)
					.isNotNull()
					.satisfies((timer) -> assertThat(timer.count()).isEqualTo(1));
			}
		}
	}

	@Test
	void aMissingRecordsTableIsReportedWithWhatToDo() {
		LockTable without = LockTable.of("no_such_table_" + UUID.randomUUID().toString().substring(0, 8));
		try (LeaseLockProvider renewals = new LeaseLockProvider(pool, without, Duration.ofSeconds(5), Duration.ofMillis(5),
				Duration.ofMillis(50))) {
			IdempotencyStore store = new IdempotencyStore(pool, without, Duration.ofSeconds(5),
					new Backoff(Duration.ofMillis(5), Duration.ofMillis(50)), renewals);
			assertThatIllegalStateException()
				.isThrownBy(() -> store.claim("k", "test", Duration.ofSeconds(1), Duration.ofHours(1), System.nanoTime()))
				.withMessageContaining("The idempotency records table `" + without.name() + "_idem` does not exist")
				.withMessageContaining("V4__create_idempotency_table.sql");
			assertThatIllegalStateException().isThrownBy(() -> store.find("k")).withMessageContaining("does not exist");
		}
	}

	private static void sleep(long millis) {
		try {
			Thread.sleep(millis);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}

	/** An outcome Jackson cannot write: its one property throws. */
	public static class Unwritable {

		public String getValue() {
			throw new IllegalStateException("not readable");
		}

	}

	/** An outcome with properties, as a service would return. */
	public record Receipt(String id, int amount) {
	}

}
