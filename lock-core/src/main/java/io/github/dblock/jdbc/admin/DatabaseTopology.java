package io.github.dblock.jdbc.admin;

import io.github.dblock.jdbc.sql.DatabaseServer;
import io.github.dblock.jdbc.sql.LockStatements;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import javax.sql.DataSource;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.jdbc.CannotGetJdbcConnectionException;

/**
 * Where the lock database sits in its topology, as far as it makes database locks unsafe: a read-only server or
 * connection, a replica, or a node of a multi-primary cluster (Galera, multi-primary group replication).
 * <p>
 * {@link #detect} reads the facts; everything else is a pure function of them, so that the decision can be tested
 * for clusters that are not at hand:
 * <ol>
 * <li>One {@code SHOW SESSION VARIABLES WHERE Variable_name IN (…)}: {@code read_only}, {@code super_read_only}
 * (MySQL), {@code innodb_read_only}, {@code transaction_read_only}/{@code tx_read_only} (session values),
 * {@code wsrep_on} (Galera; present but {@code OFF} on a plain MariaDB), {@code innodb_flush_log_at_trx_commit} and
 * {@code group_replication_single_primary_mode} (present only with the group replication plugin). A variable the
 * server does not have is simply absent from the answer, so the same query runs on both families.</li>
 * <li>The JDBC connection's own read-only flag ({@link Connection#isReadOnly()}), which a pool such as Hikari
 * ({@code readOnly=true}) sets; drivers do not always pass it on to the server.</li>
 * <li>Only if group replication is configured for multi-primary: whether this server is an {@code ONLINE} or
 * {@code RECOVERING} member ({@code performance_schema.replication_group_members}).</li>
 * <li>Best effort: {@code SHOW REPLICA STATUS} (MySQL 8.0.22+) or {@code SHOW ALL SLAVES STATUS} (MariaDB,
 * every replication connection). These need a privilege the runtime user usually lacks ({@code REPLICATION CLIENT}
 * on MySQL, {@code REPLICA MONITOR}/{@code SLAVE MONITOR} on MariaDB); without it the replica check is skipped
 * with a debug log, never failing start-up. A server whose replication threads are all stopped does not count as
 * a replica (a promoted primary often keeps its old replication settings).</li>
 * </ol>
 * The statements are constant text: nothing is spliced. Instances are immutable and thread-safe.
 */
public final class DatabaseTopology {

	/** Server variables read by {@link #detect} ({@link LockStatements#TOPOLOGY_VARIABLES}), lower case. */
	static final List<String> VARIABLES = List.of("read_only", "super_read_only", "innodb_read_only",
			"transaction_read_only", "tx_read_only", "wsrep_on", "group_replication_single_primary_mode",
			"innodb_flush_log_at_trx_commit");

	private static final Log logger = LogFactory.getLog(DatabaseTopology.class);

	private final Map<String, String> variables;

	private final boolean connectionReadOnly;

	private final @Nullable Boolean groupMember;

	private final @Nullable List<String> replicationSources;

	private DatabaseTopology(Map<String, String> variables, boolean connectionReadOnly, @Nullable Boolean groupMember,
			@Nullable List<String> replicationSources) {
		Map<String, String> normalized = new LinkedHashMap<>();
		variables.forEach((name, value) -> normalized.put(name.toLowerCase(Locale.ROOT), (value != null) ? value : ""));
		this.variables = Collections.unmodifiableMap(normalized);
		this.connectionReadOnly = connectionReadOnly;
		this.groupMember = groupMember;
		this.replicationSources = (replicationSources != null) ? List.copyOf(replicationSources) : null;
	}

	/**
	 * A topology from facts gathered elsewhere (or made up, in tests).
	 * @param variables server variables by name (case-insensitive), as {@code SHOW VARIABLES} reports them; absent
	 * ones do not exist on the server
	 * @param connectionReadOnly the JDBC connection's read-only flag
	 * @param groupMember whether the server is an online member of a replication group; {@code null} if unknown
	 * @param replicationSources the sources the server is replicating from right now, e.g. {@code db1:3306}; empty
	 * if none, {@code null} if unknown (no privilege to ask)
	 */
	public static DatabaseTopology of(Map<String, String> variables, boolean connectionReadOnly,
			@Nullable Boolean groupMember, @Nullable List<String> replicationSources) {
		return new DatabaseTopology(variables, connectionReadOnly, groupMember, replicationSources);
	}

	/**
	 * Asks the server behind the data source (on one pooled connection, as the lock statements will get it).
	 * @param server the server found by {@link DatabaseServer#detect}, for choosing the replica status statement
	 * @throws CannotGetJdbcConnectionException if the server cannot be reached or the variables cannot be read; a
	 * missing privilege for the replica or group status is not an error
	 */
	public static DatabaseTopology detect(DataSource dataSource, DatabaseServer server) {
		try (Connection connection = dataSource.getConnection()) {
			Map<String, String> variables = new LinkedHashMap<>();
			try (Statement statement = connection.createStatement();
					ResultSet rs = statement.executeQuery(LockStatements.TOPOLOGY_VARIABLES)) {
				while (rs.next()) {
					variables.put(rs.getString(1), rs.getString(2));
				}
			}
			boolean connectionReadOnly = connection.isReadOnly();
			Boolean groupMember = null;
			if (isOff(variables.get("group_replication_single_primary_mode"))) {
				groupMember = groupMember(connection);
			}
			List<String> sources = replicationSources(connection, server);
			return new DatabaseTopology(variables, connectionReadOnly, groupMember, sources);
		}
		catch (SQLException ex) {
			throw new CannotGetJdbcConnectionException("Could not read the lock database's topology variables", ex);
		}
	}

	private static @Nullable Boolean groupMember(Connection connection) {
		try (Statement statement = connection.createStatement(); ResultSet rs = statement.executeQuery(LockStatements.GROUP_MEMBER_STATE)) {
			if (!rs.next()) {
				return false;
			}
			String state = rs.getString(1);
			return "ONLINE".equalsIgnoreCase(state) || "RECOVERING".equalsIgnoreCase(state);
		}
		catch (SQLException ex) {
			logger.debug("Could not read performance_schema.replication_group_members (" + ex.getMessage()
					+ "); assuming this server is an active member of its multi-primary group");
			return null;
		}
	}

	private static @Nullable List<String> replicationSources(Connection connection, DatabaseServer server) {
		String sql = LockStatements.replicaStatus(server);
		try (Statement statement = connection.createStatement(); ResultSet rs = statement.executeQuery(sql)) {
			List<String> sources = new ArrayList<>();
			ResultSetMetaData meta = rs.getMetaData();
			while (rs.next()) {
				String io = column(rs, meta, "Replica_IO_Running", "Slave_IO_Running");
				String sqlThread = column(rs, meta, "Replica_SQL_Running", "Slave_SQL_Running");
				if (isRunning(io) || isRunning(sqlThread)) {
					String host = column(rs, meta, "Source_Host", "Master_Host");
					String port = column(rs, meta, "Source_Port", "Master_Port");
					sources.add(host + ":" + port + " (I/O thread " + io + ", SQL thread " + sqlThread + ")");
				}
			}
			return sources;
		}
		catch (SQLException ex) {
			logger.debug("Could not tell whether the lock database is a replica: '" + sql + "' failed ("
					+ ex.getMessage() + "); grant REPLICATION CLIENT (MySQL) or REPLICA MONITOR (MariaDB) to check it");
			return null;
		}
	}

	private static @Nullable String column(ResultSet rs, ResultSetMetaData meta, String... names) throws SQLException {
		for (int i = 1; i <= meta.getColumnCount(); i++) {
			String label = meta.getColumnLabel(i);
			for (String name : names) {
				if (name.equalsIgnoreCase(label)) {
					return rs.getString(i);
				}
			}
		}
		return null;
	}

	private static boolean isRunning(@Nullable String threadState) {
		return threadState != null && !threadState.isBlank() && !"No".equalsIgnoreCase(threadState.trim());
	}

	/** {@code ON}, {@code 1}, or any value other than {@code OFF}/{@code 0}/empty. */
	private static boolean isOn(@Nullable String value) {
		return value != null && !value.isBlank() && !isOff(value);
	}

	private static boolean isOff(@Nullable String value) {
		return value != null && ("OFF".equalsIgnoreCase(value.trim()) || "0".equals(value.trim()));
	}

	/**
	 * What makes the server unable to hold locks for this application at all: a read-only server or connection, or
	 * a replica. Each entry names the variable or status found, e.g. {@code the server is read-only (read_only=ON)}.
	 * @return the reasons, empty when none was found
	 */
	public List<String> readOnlyReasons() {
		List<String> reasons = new ArrayList<>();
		if (isOn(this.variables.get("super_read_only"))) {
			reasons.add("the server is read-only even for administrators (super_read_only="
					+ this.variables.get("super_read_only") + ")");
		}
		else if (isOn(this.variables.get("read_only"))) {
			reasons.add("the server is read-only (read_only=" + this.variables.get("read_only") + ")");
		}
		if (isOn(this.variables.get("innodb_read_only"))) {
			reasons.add("InnoDB is read-only (innodb_read_only=" + this.variables.get("innodb_read_only") + ")");
		}
		String sessionReadOnly = this.variables.containsKey("transaction_read_only") ? "transaction_read_only"
				: "tx_read_only";
		if (isOn(this.variables.get(sessionReadOnly))) {
			reasons.add("the lock DataSource's connections are read-only (" + sessionReadOnly + "="
					+ this.variables.get(sessionReadOnly) + ")");
		}
		else if (this.connectionReadOnly) {
			reasons.add("the lock DataSource's connections are read-only (JDBC Connection.isReadOnly(), e.g. a pool "
					+ "configured with readOnly=true)");
		}
		if (this.replicationSources != null && !this.replicationSources.isEmpty()) {
			reasons.add("the server is a replica of " + String.join(", ", this.replicationSources));
		}
		return reasons;
	}

	/**
	 * Whether the server is one node of a cluster that accepts writes on several nodes at once, where a row lock
	 * taken on one node does not block a transaction on another: a Galera cluster ({@code wsrep_on=ON}) or a group
	 * replication group in multi-primary mode ({@code group_replication_single_primary_mode=OFF}, with this server
	 * an online member, or membership unknown for lack of privilege).
	 * @return a description of the cluster naming the variable, or {@code null} for a single-primary server
	 */
	public @Nullable String multiPrimaryCluster() {
		if (isOn(this.variables.get("wsrep_on"))) {
			return "a Galera cluster node (wsrep_on=" + this.variables.get("wsrep_on") + ")";
		}
		if (isOff(this.variables.get("group_replication_single_primary_mode"))
				&& !Boolean.FALSE.equals(this.groupMember)) {
			return "a member of a multi-primary group replication group (group_replication_single_primary_mode="
					+ this.variables.get("group_replication_single_primary_mode")
					+ ((this.groupMember == null) ? ", membership assumed: performance_schema not readable" : "") + ")";
		}
		return null;
	}

	/**
	 * Why PESSIMISTIC locks must be refused on this server: on a multi-primary cluster a row lock taken on one node
	 * does not block transactions on the others, so a PESSIMISTIC lock excludes no one.
	 * @return the reason, naming the cluster, or {@code null} when PESSIMISTIC is safe here
	 */
	public @Nullable String pessimisticRefusal() {
		String cluster = multiPrimaryCluster();
		if (cluster == null) {
			return null;
		}
		return "the lock database is " + cluster + ", where a row lock taken on one node does not block "
				+ "transactions on the other nodes (conflicts are found only at commit, by certification), so a "
				+ "PESSIMISTIC lock excludes no one. Use LEASE or OPTIMISTIC mode.";
	}

	/**
	 * Why a Galera node may lose commits it acknowledged: {@code innodb_flush_log_at_trx_commit} other than 1 leaves
	 * a commit in the operating system's buffers, and a cluster-wide crash (a power loss of every node) then loses
	 * locks and fenced writes the application was told had committed (Jepsen's MariaDB Galera Cluster analysis).
	 * @return the warning naming the variable and its value, or {@code null} when the server is no Galera node or
	 * flushes each commit
	 */
	public @Nullable String clusterDurabilityWarning() {
		String flush = this.variables.get("innodb_flush_log_at_trx_commit");
		if (!isOn(this.variables.get("wsrep_on")) || flush == null || "1".equals(flush.trim())) {
			return null;
		}
		return "the lock database is a Galera cluster node with innodb_flush_log_at_trx_commit=" + flush
				+ ": a commit is acknowledged before it is on disk, so a crash of every node at once can lose a lock "
				+ "or a fenced write the application saw committed; set innodb_flush_log_at_trx_commit=1 on every node";
	}

	/** Whether the replica status could be read (the user had the privilege). */
	public boolean replicaStatusKnown() {
		return this.replicationSources != null;
	}

	/** The server variables read, by lower-case name. */
	public Map<String, String> variables() {
		return this.variables;
	}

	@Override
	public String toString() {
		return "DatabaseTopology" + this.variables + ", connectionReadOnly=" + this.connectionReadOnly + ", groupMember="
				+ this.groupMember + ", replicationSources=" + this.replicationSources;
	}

}
