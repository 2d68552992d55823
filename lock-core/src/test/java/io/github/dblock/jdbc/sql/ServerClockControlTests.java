package io.github.dblock.jdbc.sql;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.zaxxer.hikari.HikariDataSource;
import io.github.dblock.test.ServerClockControl;
import io.github.dblock.test.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * The test's server clock ({@link ServerClockControl}) on the real server: every clock the lock statements read is
 * the controlled one, to the microsecond, except {@code SYSDATE(6)}; it moves only when the test moves it.
 */
class ServerClockControlTests {

	/** A controlled instant with a fraction of a second that a truncation to milliseconds would lose. */
	private static final Instant START = ServerClockControl.aDayBeforeNow().truncatedTo(ChronoUnit.SECONDS)
		.plusNanos(123_457_000);

	private static final long START_MICROS = ChronoUnit.MICROS.between(Instant.EPOCH, START);

	private ServerClockControl clock;

	@BeforeEach
	void freeze() {
		this.clock = ServerClockControl.frozenAt(START, 2);
	}

	@AfterEach
	void close() {
		this.clock.close();
	}

	private static long query(Connection connection, String sql) throws SQLException {
		try (Statement statement = connection.createStatement(); ResultSet rs = statement.executeQuery(sql)) {
			assertThat(rs.next()).isTrue();
			return rs.getLong(1);
		}
	}

	/** The clock functions the lock statements call: each is one this test checks below. */
	@Test
	void theLockStatementsReadNoOtherClockThanTheOnesCheckedHere() throws Exception {
		LockStatements statements = LockStatements.of(LockTable.of("distributed_lock"), LockDialect.MARIADB);
		List<Object> values = new ArrayList<>();
		List<Object> sets = new ArrayList<>(List.of(statements));
		for (int i = 0; i < sets.size(); i++) {
			Object set = sets.get(i);
			for (Class<?> type = set.getClass(); type != Object.class; type = type.getSuperclass()) {
				for (Field field : type.getDeclaredFields()) {
					field.setAccessible(true);
					Object value = field.get(Modifier.isStatic(field.getModifiers()) ? null : set);
					if (value instanceof LockTableSql group && !sets.contains(group)) {
						sets.add(group); // the statements of one mechanism (LeaseStatements, ...)
					}
					else {
						values.add(value);
					}
				}
			}
		}
		List<String> sql = new ArrayList<>();
		for (Object value : values) {
			if (value instanceof String text) {
				sql.add(text);
			}
			else if (value instanceof CleanupStatements.Cleanup cleanup) {
				sql.addAll(List.of(cleanup.candidates(), cleanup.lockStillExpired(), cleanup.delete()));
			}
		}
		assertThat(sql).hasSizeGreaterThan(60);
		Pattern clockCall = Pattern.compile("\\b(UTC_TIMESTAMP|UTC_DATE|UTC_TIME|NOW|SYSDATE|CURRENT_TIMESTAMP|"
				+ "CURRENT_DATE|CURRENT_TIME|CURDATE|CURTIME|LOCALTIME|LOCALTIMESTAMP|UNIX_TIMESTAMP)\\b(\\(\\d*\\))?");
		TreeSet<String> calls = new TreeSet<>();
		for (String each : sql) {
			Matcher matcher = clockCall.matcher(each);
			while (matcher.find()) {
				calls.add(matcher.group());
			}
		}
		assertThat(calls).containsExactly("NOW(6)", "SYSDATE(6)", "UTC_TIMESTAMP(6)");
	}

	@Test
	void everyClockOfTheLockStatementsButSysdateReadsTheControlledInstantToTheMicrosecond() throws Exception {
		try (Connection connection = this.clock.getConnection()) {
			assertThat(query(connection, "SELECT " + LockTableSql.SERVER_MICROS)).isEqualTo(START_MICROS);
			assertThat(query(connection, "SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00',"
					+ " UTC_TIMESTAMP(6) + INTERVAL 5 MICROSECOND)")).isEqualTo(START_MICROS + 5);
			assertThat(query(connection, "SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00',"
					+ " UTC_TIMESTAMP(6) - INTERVAL 5 MICROSECOND)")).isEqualTo(START_MICROS - 5);
			assertThat(query(connection, "SELECT ROUND(UNIX_TIMESTAMP(NOW(6)) * 1000000)")).as("NOW(6)")
				.isEqualTo(START_MICROS);
			assertThat(query(connection, "SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), CONVERT_TZ(NOW(6),"
					+ " @@session.time_zone, '+00:00'))")).as("NOW(6) in UTC").isZero();
			assertThat(query(connection, "SELECT TIMESTAMPDIFF(MICROSECOND, NOW(6), CURRENT_TIMESTAMP(6))")).isZero();
			// stands still within a statement that takes time, and from one statement to the next
			assertThat(query(connection, "SELECT SLEEP(0.2) + " + LockTableSql.SERVER_MICROS)).isEqualTo(START_MICROS);
			assertThat(query(connection, "SELECT " + LockTableSql.SERVER_MICROS)).isEqualTo(START_MICROS);
			assertThat(query(connection, "SELECT UTC_TIMESTAMP(6) = '" + START.toString().replace('T', ' ').replace("Z", "")
					+ "'")).isOne();
			// SYSDATE(6) reads the real clock, a day later
			assertThat(query(connection, "SELECT TIMESTAMPDIFF(MICROSECOND, NOW(6), SYSDATE(6))"))
				.isCloseTo(TimeUnit.DAYS.toMicros(1), within(TimeUnit.MINUTES.toMicros(10)));
		}
	}

	@Test
	void theClockMovesOnlyWhenTheTestMovesIt() throws Exception {
		try (Connection held = this.clock.getConnection()) {
			assertThat(query(held, "SELECT " + LockTableSql.SERVER_MICROS)).isEqualTo(START_MICROS);
			this.clock.advance(Duration.ofMillis(1500));
			assertThat(query(held, "SELECT " + LockTableSql.SERVER_MICROS)).as("a held connection's next statement")
				.isEqualTo(START_MICROS + 1_500_000);
			try (Connection other = this.clock.getConnection()) {
				assertThat(query(other, "SELECT " + LockTableSql.SERVER_MICROS)).isEqualTo(START_MICROS + 1_500_000);
			}
			this.clock.setTickPerStatement(Duration.ofNanos(1_000));
			for (int i = 0; i < 3; i++) {
				assertThat(query(held, "SELECT " + LockTableSql.SERVER_MICROS)).isEqualTo(START_MICROS + 1_500_000 + i);
			}
			assertThat(this.clock.micros()).isEqualTo(START_MICROS + 1_500_003);
		}
	}

	/** What the control's Javadoc says of {@code SET timestamp = DEFAULT}, on a connection of a plain pool. */
	@Test
	void setTimestampDefaultReturnsASessionToTheServersClock() throws Exception {
		try (HikariDataSource plain = TestDatabase.get().newDataSource(1); Connection connection = plain.getConnection();
				Statement statement = connection.createStatement()) {
			long real = query(connection, "SELECT " + LockTableSql.SERVER_MICROS);
			statement.execute("SET timestamp = " + START_MICROS / 1_000_000 + "." + START_MICROS % 1_000_000);
			assertThat(query(connection, "SELECT " + LockTableSql.SERVER_MICROS)).isEqualTo(START_MICROS);
			statement.execute("SET timestamp = DEFAULT");
			assertThat(query(connection, "SELECT " + LockTableSql.SERVER_MICROS)).isBetween(real,
					real + TimeUnit.MINUTES.toMicros(1));
		}
	}

}
