package io.github.dblock.test;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.math.BigDecimal;
import java.sql.CallableStatement;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Collections;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import com.zaxxer.hikari.HikariDataSource;
import org.springframework.jdbc.datasource.DelegatingDataSource;

/**
 * A data source whose statements read a server clock the test controls, so that a test decides how much server time
 * passes between lock statements instead of depending on how fast the machine runs them.
 * <p>
 * Before each statement a connection of this data source executes, it sets the session variable {@code timestamp}
 * (MySQL and MariaDB: {@code SET timestamp = <epoch seconds with six decimals>}) to this clock's current value, unless
 * the session has that value already (sessions are told apart by the pool's physical connection). While it is set, {@code UTC_TIMESTAMP(6)}, {@code NOW(6)},
 * {@code CURRENT_TIMESTAMP(6)}, {@code UNIX_TIMESTAMP(NOW(6))} and every expression built on them (the lock statements'
 * {@code TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))}, {@code UTC_TIMESTAMP(6) + INTERVAL ?
 * MICROSECOND}) return that instant, microseconds included, however long the statement runs; checked on MariaDB
 * 10.11.19 and 11.4.5 by {@code ServerClockControlTests}. {@code SET timestamp = DEFAULT} would return the session to
 * the server's own clock. {@code SYSDATE(6)} is not affected: it keeps reading the real clock, so an expression that
 * compares the two (PESSIMISTIC's {@code TIMESTAMPDIFF(MICROSECOND, NOW(6), SYSDATE(6))} with
 * {@code Fencing.SERVER_CLOCK}) sees the distance between this clock and the real one; start this clock far from the
 * real one ({@link #aDayBeforeNow()}) and that plausibility check rejects the difference every time, so that provider
 * reads the clock with a second statement (a clock read after the grant either way). What the server times by its real
 * clock (lock wait timeouts, {@code max_statement_time}, {@code SLEEP}) is not affected either.
 * <p>
 * The clock stands still unless the test moves it: {@link #advance(Duration)}, or a {@linkplain #setTickPerStatement
 * tick} by which every statement moves it on after reading it, so that no two statements read the same microsecond,
 * as on a real server.
 * <p>
 * The connections come from a pool of this object's own, used by nobody else: a session keeps the {@code timestamp}
 * it was last given, so it is never handed to code that expects the real clock. Thread-safe. Close it to close the
 * pool.
 */
public final class ServerClockControl extends DelegatingDataSource implements AutoCloseable {

	private final HikariDataSource pool;

	private final AtomicLong micros;

	private volatile long tickMicros;

	/**
	 * The {@code timestamp} each pooled (physical) connection's session was given last, so that a statement at the
	 * instant its session has already costs no extra round trip.
	 */
	private final Map<Connection, Long> given = Collections.synchronizedMap(new WeakHashMap<>());

	private ServerClockControl(HikariDataSource pool, long startMicros) {
		super(pool);
		this.pool = pool;
		this.micros = new AtomicLong(startMicros);
	}

	/**
	 * A control with a pool of its own on the test database ({@link TestDatabase}), its clock standing still at
	 * {@code start} (microsecond resolution: anything finer is cut off).
	 * @param poolSize the pool's maximum size
	 */
	public static ServerClockControl frozenAt(Instant start, int poolSize) {
		HikariDataSource pool = TestDatabase.get().newDataSource(poolSize,
				(config) -> config.setPoolName("server-clock-control-" + poolSize));
		return new ServerClockControl(pool, ChronoUnit.MICROS.between(Instant.EPOCH, start));
	}

	/** An instant a day before this JVM's clock: far from the server's real clock, for any test. */
	public static Instant aDayBeforeNow() {
		return Instant.now().minus(Duration.ofDays(1)).truncatedTo(ChronoUnit.MICROS);
	}

	/** The controlled clock now, in µs since the epoch (the unit of fencing tokens taken from the clock). */
	public long micros() {
		return this.micros.get();
	}

	/** Moves the clock on by {@code duration} (microsecond resolution) for the statements that follow. */
	public void advance(Duration duration) {
		this.micros.addAndGet(TimeUnit.NANOSECONDS.toMicros(duration.toNanos()));
	}

	/**
	 * How far every statement moves the clock on after reading it (microsecond resolution); {@link Duration#ZERO}, the
	 * start, keeps it standing still between {@link #advance} calls.
	 */
	public void setTickPerStatement(Duration tick) {
		this.tickMicros = TimeUnit.NANOSECONDS.toMicros(tick.toNanos());
	}

	@Override
	public Connection getConnection() throws SQLException {
		return withClock(super.getConnection());
	}

	@Override
	public Connection getConnection(String username, String password) throws SQLException {
		return withClock(super.getConnection(username, password));
	}

	private Connection withClock(Connection connection) throws SQLException {
		return (Connection) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] { Connection.class },
				new Session(connection));
	}

	@Override
	public void close() {
		this.pool.close();
	}

	/** A checked-out connection: sets the session's clock before each statement its statements execute. */
	private final class Session implements InvocationHandler {

		private final Connection connection;

		/** The pooled connection behind the pool's proxy: the session. */
		private final Connection physical;

		Session(Connection connection) throws SQLException {
			this.connection = connection;
			this.physical = connection.unwrap(Connection.class);
		}

		/** Gives the session the clock's current value, and moves the clock on by the tick. */
		synchronized void setClock() throws SQLException {
			long at = ServerClockControl.this.micros.getAndAdd(ServerClockControl.this.tickMicros);
			Long previous = ServerClockControl.this.given.get(this.physical);
			if (previous != null && previous == at) {
				return;
			}
			ServerClockControl.this.given.remove(this.physical); // unknown until the SET has run
			try (PreparedStatement ps = this.connection.prepareStatement("SET timestamp = ?")) {
				ps.setBigDecimal(1, BigDecimal.valueOf(at, 6)); // epoch seconds, six decimals
				ps.execute();
			}
			ServerClockControl.this.given.put(this.physical, at);
		}

		@Override
		public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
			switch (method.getName()) {
				case "equals":
					return proxy == args[0];
				case "hashCode":
					return System.identityHashCode(proxy);
				default:
					break;
			}
			Object result = call(this.connection, method, args);
			if (result instanceof Statement statement) {
				Class<?> type = (result instanceof CallableStatement) ? CallableStatement.class
						: (result instanceof PreparedStatement) ? PreparedStatement.class : Statement.class;
				return Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] { type },
						(statementProxy, statementMethod, statementArgs) -> {
							if (statementMethod.getName().startsWith("execute")) {
								setClock();
							}
							return call(statement, statementMethod, statementArgs);
						});
			}
			return result;
		}

		private static Object call(Object target, Method method, Object[] args) throws Throwable {
			try {
				return method.invoke(target, args);
			}
			catch (InvocationTargetException ex) {
				throw ex.getTargetException();
			}
		}

	}

}
