package io.github.dblock.test;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.github.dblock.test.FaultProxy.Direction;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Each mode of {@link FaultProxy} against the real test database: what the client sees, what the server sees, and
 * that the sockets stay open where the mode says so.
 */
class FaultProxyTests {

	private static final String TABLE = "fault_proxy_probe";

	private FaultProxy proxy;

	@BeforeAll
	static void createTable() {
		TestDatabase.get().execute("CREATE TABLE IF NOT EXISTS " + TABLE
				+ " (id VARCHAR(64) NOT NULL PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB");
	}

	@BeforeEach
	void startProxy() {
		this.proxy = FaultProxy.forJdbcUrl(TestDatabase.get().jdbcUrl());
	}

	@AfterEach
	void stopProxy() {
		this.proxy.close();
	}

	private Connection viaProxy() throws SQLException {
		TestDatabase db = TestDatabase.get();
		return DriverManager.getConnection(this.proxy.jdbcUrl(db.jdbcUrl()), db.username(), db.password());
	}

	private static Connection direct() throws SQLException {
		TestDatabase db = TestDatabase.get();
		return DriverManager.getConnection(db.jdbcUrl(), db.username(), db.password());
	}

	private static int selectOne(Connection connection) throws SQLException {
		try (Statement s = connection.createStatement(); ResultSet rs = s.executeQuery("SELECT 1")) {
			rs.next();
			return rs.getInt(1);
		}
	}

	private static CompletableFuture<Integer> selectOneAsync(Connection connection) {
		return CompletableFuture.supplyAsync(() -> {
			try {
				return selectOne(connection);
			}
			catch (SQLException ex) {
				throw new IllegalStateException(ex);
			}
		});
	}

	private static boolean rowExists(String id) throws SQLException {
		try (Connection c = direct(); PreparedStatement ps = c.prepareStatement("SELECT v FROM " + TABLE + " WHERE id = ?")) {
			ps.setString(1, id);
			try (ResultSet rs = ps.executeQuery()) {
				return rs.next();
			}
		}
	}

	@Test
	void rewritesTheUrlToTheProxyAndPassesTrafficThrough() throws Exception {
		String url = this.proxy.jdbcUrl("jdbc:mysql://localhost:3306/h23?user=root");
		assertThat(url).isEqualTo(
				"jdbc:mysql://127.0.0.1:" + this.proxy.port() + "/h23?user=root&sslMode=DISABLED&allowPublicKeyRetrieval=true");
		assertThat(this.proxy.jdbcUrl("jdbc:mysql://127.0.0.1/h23?sslMode=REQUIRED"))
			.isEqualTo("jdbc:mysql://127.0.0.1:" + this.proxy.port() + "/h23?sslMode=REQUIRED");
		assertThatThrownBy(() -> FaultProxy.start("192.0.2.1", 3306)).isInstanceOf(IllegalArgumentException.class);
		try (Connection c = viaProxy()) {
			assertThat(selectOne(c)).isEqualTo(1);
			assertThat(this.proxy.acceptedConnections()).isEqualTo(1);
			assertThat(this.proxy.openConnections()).isEqualTo(1);
		}
		Thread.sleep(200); // the proxy sees the close asynchronously
		assertThat(this.proxy.openConnections()).isZero();
	}

	@Test
	void blackholeHoldsTheRequestWithTheSocketsOpenAndDeliversItWhenLifted() throws Exception {
		try (Connection c = viaProxy()) {
			FaultProxy.Link link = this.proxy.latest();
			this.proxy.blackhole(Direction.BOTH);
			CompletableFuture<Integer> query = selectOneAsync(c);
			assertThatExceptionOfType(TimeoutException.class).isThrownBy(() -> query.get(2, TimeUnit.SECONDS));
			assertThat(link.isClientOpen()).isTrue();
			assertThat(link.isServerOpen()).isTrue();
			assertThat(c.isClosed()).isFalse();
			this.proxy.passThrough();
			assertThat(query.get(10, TimeUnit.SECONDS)).isEqualTo(1);
		}
	}

	@Test
	void downstreamBlackholeLetsTheRequestReachTheServerButNotTheReply() throws Exception {
		String id = UUID.randomUUID().toString();
		try (Connection c = viaProxy()) {
			this.proxy.latest().discard(Direction.DOWNSTREAM);
			CompletableFuture<Void> insert = CompletableFuture.runAsync(() -> {
				try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + TABLE + " (id, v) VALUES (?, 1)")) {
					ps.setString(1, id);
					ps.executeUpdate();
				}
				catch (SQLException ex) {
					throw new IllegalStateException(ex);
				}
			});
			assertThatExceptionOfType(TimeoutException.class).isThrownBy(() -> insert.get(2, TimeUnit.SECONDS));
			assertThat(rowExists(id)).as("autocommitted insert reached the server").isTrue();
			this.proxy.reset();
			assertThatExceptionOfType(ExecutionException.class).isThrownBy(() -> insert.get(10, TimeUnit.SECONDS));
		}
	}

	@Test
	void blackholeOnOneConnectionLeavesTheOthersWorking() throws Exception {
		try (Connection first = viaProxy(); Connection second = viaProxy()) {
			assertThat(this.proxy.connections()).hasSize(2);
			FaultProxy.Link firstLink = this.proxy.connections().get(0);
			firstLink.blackhole(Direction.UPSTREAM);
			CompletableFuture<Integer> stuck = selectOneAsync(first);
			assertThat(selectOne(second)).isEqualTo(1);
			assertThatExceptionOfType(TimeoutException.class).isThrownBy(() -> stuck.get(2, TimeUnit.SECONDS));
			firstLink.passThrough();
			assertThat(stuck.get(10, TimeUnit.SECONDS)).isEqualTo(1);
		}
	}

	@Test
	void delayHoldsEachChunkForTheGivenTime() throws Exception {
		try (Connection c = viaProxy()) {
			selectOne(c);
			this.proxy.delay(Duration.ofMillis(400));
			long start = System.nanoTime();
			assertThat(selectOne(c)).isEqualTo(1);
			long tookMillis = (System.nanoTime() - start) / 1_000_000;
			// request and reply are each delayed by 400 ms
			assertThat(tookMillis).isBetween(780L, 5_000L);
			this.proxy.passThrough();
			start = System.nanoTime();
			selectOne(c);
			assertThat((System.nanoTime() - start) / 1_000_000).isLessThan(700L);
		}
	}

	@Test
	void resetMakesTheDriverRaiseACommunicationsError() throws Exception {
		try (Connection c = viaProxy()) {
			selectOne(c);
			this.proxy.reset();
			Thread.sleep(100);
			assertThat(this.proxy.openConnections()).isZero();
			assertThatExceptionOfType(SQLException.class).isThrownBy(() -> selectOne(c))
				.satisfies((ex) -> assertThat(ex.getSQLState()).startsWith("08"));
		}
		try (Connection again = viaProxy()) {
			assertThat(selectOne(again)).as("reset affects current connections only").isEqualTo(1);
		}
	}

	@Test
	void refusedConnectionsFailWhileCurrentOnesKeepWorking() throws Exception {
		try (Connection current = viaProxy()) {
			this.proxy.refuseNewConnections(true);
			assertThatExceptionOfType(SQLException.class).isThrownBy(this::viaProxy)
				.satisfies((ex) -> assertThat(ex.getSQLState()).startsWith("08"));
			assertThat(this.proxy.refusedConnections()).isEqualTo(1);
			assertThat(selectOne(current)).isEqualTo(1);
			this.proxy.refuseNewConnections(false);
			try (Connection later = viaProxy()) {
				assertThat(selectOne(later)).isEqualTo(1);
			}
		}
	}

	@Test
	void dropReplyDeliversTheCommitButTheClientNeverGetsTheReply() throws Exception {
		String id = UUID.randomUUID().toString();
		try (Connection c = viaProxy()) {
			FaultProxy.Link link = this.proxy.latest();
			CountDownLatch fired = this.proxy.dropReplyToNext(FaultProxy.isQuery("COMMIT"));
			c.setAutoCommit(false); // sends "SET autocommit=0", which must not trip the trap
			try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + TABLE + " (id, v) VALUES (?, 2)")) {
				ps.setString(1, id);
				ps.executeUpdate();
			}
			assertThat(selectOne(c)).as("non-matching requests pass").isEqualTo(1);
			assertThat(fired.getCount()).isEqualTo(1);
			CompletableFuture<Void> commit = CompletableFuture.runAsync(() -> {
				try {
					c.commit();
				}
				catch (SQLException ex) {
					throw new IllegalStateException(ex);
				}
			});
			assertThat(fired.await(5, TimeUnit.SECONDS)).isTrue();
			assertThatExceptionOfType(TimeoutException.class).isThrownBy(() -> commit.get(2, TimeUnit.SECONDS));
			assertThat(rowExists(id)).as("the COMMIT reached the server").isTrue();
			assertThat(link.replyDropped()).isTrue();
			assertThat(link.isClientOpen()).isTrue();
			assertThat(link.isServerOpen()).isTrue();
			this.proxy.passThrough();
			assertThatExceptionOfType(TimeoutException.class).as("the connection stays silent after the trap")
				.isThrownBy(() -> commit.get(1, TimeUnit.SECONDS));
			this.proxy.reset();
			assertThatExceptionOfType(ExecutionException.class).isThrownBy(() -> commit.get(10, TimeUnit.SECONDS));
		}
	}

	@Test
	void holdReplyDeliversTheCommitAndItsReplyOnlyWhenLifted() throws Exception {
		String id = UUID.randomUUID().toString();
		try (Connection c = viaProxy()) {
			FaultProxy.Link link = this.proxy.latest();
			CountDownLatch fired = this.proxy.holdReplyToNext(FaultProxy.isQuery("COMMIT"));
			try (Statement s = c.createStatement()) {
				s.execute("START TRANSACTION");
			}
			try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + TABLE + " (id, v) VALUES (?, 4)")) {
				ps.setString(1, id);
				ps.executeUpdate();
			}
			CompletableFuture<Void> commit = CompletableFuture.runAsync(() -> {
				try (Statement s = c.createStatement()) {
					s.setQueryTimeout(1);
					s.execute("COMMIT");
				}
				catch (SQLException ex) {
					throw new IllegalStateException(ex);
				}
			});
			assertThat(fired.await(5, TimeUnit.SECONDS)).isTrue();
			assertThatExceptionOfType(TimeoutException.class).isThrownBy(() -> commit.get(2, TimeUnit.SECONDS));
			assertThat(rowExists(id)).as("the COMMIT reached the server").isTrue();
			assertThat(link.replyDropped()).isFalse();
			link.passThrough();
			// the reply arrives after the query timeout: Connector/J reports a timeout for a statement that committed
			assertThatExceptionOfType(ExecutionException.class).isThrownBy(() -> commit.get(10, TimeUnit.SECONDS))
				.withRootCauseInstanceOf(java.sql.SQLTimeoutException.class);
			assertThat(selectOne(c)).as("the connection works on").isEqualTo(1);
		}
	}

	@Test
	void aClientClosingBehindAnUpstreamBlackholeLeavesTheServerSessionOpen() throws Exception {
		String id = UUID.randomUUID().toString();
		Connection c = viaProxy();
		FaultProxy.Link link = this.proxy.latest();
		c.setAutoCommit(false);
		try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + TABLE + " (id, v) VALUES (?, 3)")) {
			ps.setString(1, id);
			ps.executeUpdate();
		}
		link.discard(Direction.BOTH);
		c.abort(Runnable::run); // the client goes away; its FIN must not reach the server
		Thread.sleep(300);
		assertThat(link.isServerOpen()).isTrue();
		try (Connection other = direct(); Statement s = other.createStatement()) {
			s.execute("SET SESSION innodb_lock_wait_timeout = 1");
			try (PreparedStatement ps = other.prepareStatement("SELECT v FROM " + TABLE + " WHERE id = ? FOR UPDATE")) {
				ps.setString(1, id);
				assertThatExceptionOfType(SQLException.class).as("the dead client's row lock is still held")
					.isThrownBy(ps::executeQuery);
			}
		}
		this.proxy.close();
		Thread.sleep(300);
		assertThat(rowExists(id)).as("closing the proxy ends the session, which rolls back").isFalse();
	}

	@Test
	void closeEndsEveryConnectionAndStopsAccepting() throws Exception {
		try (Connection c = viaProxy()) {
			selectOne(c);
			this.proxy.close();
			assertThat(this.proxy.openConnections()).isZero();
			assertThatExceptionOfType(SQLException.class).isThrownBy(() -> selectOne(c));
			assertThatExceptionOfType(SQLException.class).isThrownBy(this::viaProxy);
		}
	}

}
