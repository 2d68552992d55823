package io.github.dblock.jdbc.admin;

import io.github.dblock.jdbc.sql.DatabaseServer;
import java.util.List;
import java.util.Map;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.test.Reliability;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Tests for {@link DatabaseTopology}: the decision as a pure function of the server variables (Galera and group
 * replication are not at hand), and detection against the real test database, with read-write and with read-only
 * connections. The read-only server is refused for real in {@code TopologyAutoConfigurationTests}.
 */
class DatabaseTopologyTests {

	private static final Map<String, String> PLAIN_MARIADB = Map.of("read_only", "OFF", "innodb_read_only", "OFF",
			"tx_read_only", "OFF", "wsrep_on", "OFF");

	private static final Map<String, String> PLAIN_MYSQL = Map.of("read_only", "OFF", "super_read_only", "OFF",
			"innodb_read_only", "OFF", "transaction_read_only", "OFF");

	@Test
	void aPlainWritablePrimaryOfEitherFamilyIsNeitherReadOnlyNorAMultiPrimaryCluster() {
		for (Map<String, String> variables : List.of(PLAIN_MARIADB, PLAIN_MYSQL)) {
			DatabaseTopology topology = DatabaseTopology.of(variables, false, null, List.of());
			assertThat(topology.readOnlyReasons()).as(variables.toString()).isEmpty();
			assertThat(topology.multiPrimaryCluster()).as(variables.toString()).isNull();
			assertThat(topology.replicaStatusKnown()).isTrue();
		}
	}

	@Test
	void aReadOnlyServerIsReportedNamingTheVariable() {
		DatabaseTopology topology = DatabaseTopology.of(with(PLAIN_MARIADB, "read_only", "ON"), false, null, null);
		assertThat(topology.readOnlyReasons()).containsExactly("the server is read-only (read_only=ON)");
		countTopologyCheck();
	}

	@Test
	void superReadOnlyIsReportedOnceInsteadOfReadOnly() {
		Map<String, String> variables = with(with(PLAIN_MYSQL, "read_only", "ON"), "super_read_only", "ON");
		assertThat(DatabaseTopology.of(variables, false, null, null).readOnlyReasons())
			.containsExactly("the server is read-only even for administrators (super_read_only=ON)");
		countTopologyCheck();
	}

	@Test
	void aReadOnlyInnoDbIsReported() {
		assertThat(DatabaseTopology.of(with(PLAIN_MYSQL, "innodb_read_only", "1"), false, null, null).readOnlyReasons())
			.containsExactly("InnoDB is read-only (innodb_read_only=1)");
		countTopologyCheck();
	}

	@Test
	void aReadOnlySessionIsReportedByWhicheverVariableTheServerHas() {
		assertThat(DatabaseTopology.of(with(PLAIN_MYSQL, "transaction_read_only", "ON"), false, null, null)
			.readOnlyReasons()).singleElement().asString().contains("(transaction_read_only=ON)");
		assertThat(DatabaseTopology.of(with(PLAIN_MARIADB, "tx_read_only", "ON"), false, null, null).readOnlyReasons())
			.singleElement()
			.asString()
			.contains("(tx_read_only=ON)");
		countTopologyCheck();
	}

	@Test
	void aConnectionReadOnlyOnlyForTheDriverIsReportedToo() {
		assertThat(DatabaseTopology.of(PLAIN_MARIADB, true, null, null).readOnlyReasons()).singleElement()
			.asString()
			.contains("Connection.isReadOnly()");
	}

	@Test
	void aRunningReplicaIsReportedWithItsSources() {
		DatabaseTopology topology = DatabaseTopology.of(PLAIN_MARIADB, false, null,
				List.of("db1:3306 (I/O thread Yes, SQL thread Yes)"));
		assertThat(topology.readOnlyReasons())
			.containsExactly("the server is a replica of db1:3306 (I/O thread Yes, SQL thread Yes)");
		countTopologyCheck();
	}

	@Test
	void anUnknownReplicaStatusIsNoReason() {
		DatabaseTopology topology = DatabaseTopology.of(PLAIN_MARIADB, false, null, null);
		assertThat(topology.readOnlyReasons()).isEmpty();
		assertThat(topology.replicaStatusKnown()).isFalse();
	}

	@Test
	void everyReasonFoundIsReported() {
		Map<String, String> variables = with(with(PLAIN_MARIADB, "read_only", "ON"), "innodb_read_only", "ON");
		assertThat(DatabaseTopology.of(variables, true, null, List.of("db1:3306 (I/O thread Connecting, SQL thread Yes)"))
			.readOnlyReasons()).hasSize(4);
	}

	@Test
	void aGaleraNodeIsAMultiPrimaryClusterButPlainMariaDbWithWsrepOffIsNot() {
		assertThat(DatabaseTopology.of(with(PLAIN_MARIADB, "wsrep_on", "ON"), false, null, null).multiPrimaryCluster())
			.isEqualTo("a Galera cluster node (wsrep_on=ON)");
		assertThat(DatabaseTopology.of(PLAIN_MARIADB, false, null, null).multiPrimaryCluster()).isNull();
		countTopologyCheck();
	}

	@Test
	void aGaleraNodeIsNotReadOnlyByItself() {
		assertThat(DatabaseTopology.of(with(PLAIN_MARIADB, "wsrep_on", "ON"), false, null, List.of()).readOnlyReasons())
			.isEmpty();
	}

	@Test
	void anOnlineMemberOfAMultiPrimaryGroupIsAMultiPrimaryCluster() {
		Map<String, String> variables = with(PLAIN_MYSQL, "group_replication_single_primary_mode", "OFF");
		assertThat(DatabaseTopology.of(variables, false, true, null).multiPrimaryCluster()).isEqualTo(
				"a member of a multi-primary group replication group (group_replication_single_primary_mode=OFF)");
		countTopologyCheck();
	}

	@Test
	void multiPrimaryModeIsAssumedActiveWhenMembershipCannotBeRead() {
		Map<String, String> variables = with(PLAIN_MYSQL, "group_replication_single_primary_mode", "OFF");
		assertThat(DatabaseTopology.of(variables, false, null, null).multiPrimaryCluster())
			.contains("membership assumed");
	}

	@Test
	void aConfiguredGroupThatThisServerIsNotAMemberOfAndSinglePrimaryGroupsAreNotMultiPrimary() {
		assertThat(DatabaseTopology
			.of(with(PLAIN_MYSQL, "group_replication_single_primary_mode", "OFF"), false, false, null)
			.multiPrimaryCluster()).isNull();
		assertThat(DatabaseTopology
			.of(with(PLAIN_MYSQL, "group_replication_single_primary_mode", "ON"), false, true, null)
			.multiPrimaryCluster()).isNull();
	}

	@Test
	void detectsTheTestDatabaseAsAWritablePrimaryReadingEveryVariableInOneQuery() {
		try (HikariDataSource dataSource = TestDatabase.get().newDataSource(1)) {
			DatabaseServer server = DatabaseServer.detect(dataSource);
			DatabaseTopology topology = DatabaseTopology.detect(dataSource, server);
			assertThat(topology.readOnlyReasons()).isEmpty();
			assertThat(topology.multiPrimaryCluster()).isNull();
			assertThat(topology.variables()).containsEntry("read_only", "OFF").containsKey("innodb_read_only");
			assertThat(topology.variables()).containsAnyOf(Map.entry("tx_read_only", "OFF"),
					Map.entry("transaction_read_only", "OFF"));
			if (server.product() == DatabaseServer.Product.MARIADB) {
				assertThat(topology.variables()).containsEntry("wsrep_on", "OFF");
			}
			else {
				assertThat(topology.variables()).containsEntry("super_read_only", "OFF");
			}
		}
	}

	@Test
	void detectsReadOnlyConnectionsOfAPool() {
		TestDatabase db = TestDatabase.get();
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(db.jdbcUrl());
		config.setUsername(db.username());
		config.setPassword(db.password());
		config.setMaximumPoolSize(1);
		config.setReadOnly(true);
		try (HikariDataSource dataSource = new HikariDataSource(config)) {
			DatabaseTopology topology = DatabaseTopology.detect(dataSource, DatabaseServer.detect(dataSource));
			assertThat(topology.readOnlyReasons()).singleElement()
				.asString()
				.startsWith("the lock DataSource's connections are read-only");
			countTopologyCheck();
		}
	}

	private static Map<String, String> with(Map<String, String> variables, String name, String value) {
		java.util.Map<String, String> copy = new java.util.HashMap<>(variables);
		copy.put(name, value);
		return copy;
	}

	private static void countTopologyCheck() {
		Reliability.count(Reliability.ALL_MODES, "topology checks (read-only server, read-only connection, replica, "
				+ "Galera, multi-primary group)", 1);
	}

}
