package io.github.dblock.test;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.Statement;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import javax.sql.DataSource;

import org.springframework.jdbc.datasource.DelegatingDataSource;

/**
 * A data source that records every statement executed through it (each execute call is one round trip to the
 * server), so tests can check the round-trip budget of lock operations.
 */
public final class CountingDataSource extends DelegatingDataSource {

	private final List<String> executed = new CopyOnWriteArrayList<>();

	private final List<String> warnings = new CopyOnWriteArrayList<>();

	public CountingDataSource(DataSource target) {
		super(target);
	}

	/** The SQL of every statement executed since the last {@link #reset()}, in order. */
	public List<String> executed() {
		return List.copyOf(this.executed);
	}

	/**
	 * Like {@link #executed()}, with MariaDB's per-statement bound ({@code SET STATEMENT max_statement_time=n FOR })
	 * taken off the front, for tests that check which statements ran rather than how they were bounded.
	 */
	public List<String> statements() {
		return this.executed.stream().map(CountingDataSource::withoutBound).toList();
	}

	/** The statement without a leading {@code SET STATEMENT ... FOR }. */
	public static String withoutBound(String sql) {
		if (!sql.startsWith("SET STATEMENT ")) {
			return sql;
		}
		int statement = sql.indexOf(" FOR ");
		return (statement < 0) ? sql : sql.substring(statement + " FOR ".length());
	}

	/** SQL warnings the server reported for executed statements, as "message (sql)". */
	public List<String> warnings() {
		return List.copyOf(this.warnings);
	}

	public void reset() {
		this.executed.clear();
		this.warnings.clear();
	}

	@Override
	public Connection getConnection() throws java.sql.SQLException {
		Connection target = super.getConnection();
		return (Connection) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] { Connection.class },
				new Recorder(target, null));
	}

	private final class Recorder implements InvocationHandler {

		private final Object target;

		private final String sql;

		Recorder(Object target, String sql) {
			this.target = target;
			this.sql = sql;
		}

		@Override
		public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
			String name = method.getName();
			if (name.startsWith("execute")) {
				CountingDataSource.this.executed.add((this.sql != null) ? this.sql : String.valueOf(args[0]));
			}
			if (name.equals("commit") || name.equals("rollback")) {
				CountingDataSource.this.executed.add(name.toUpperCase());
			}
			Object result;
			try {
				result = method.invoke(this.target, args);
			}
			catch (InvocationTargetException ex) {
				throw ex.getTargetException();
			}
			if (name.startsWith("execute") && this.target instanceof Statement statement) {
				for (java.sql.SQLWarning w = statement.getWarnings(); w != null; w = w.getNextWarning()) {
					CountingDataSource.this.warnings.add(w.getMessage() + " (" + this.sql + ")");
				}
			}
			if (result instanceof Statement statement && name.startsWith("prepare")) {
				Class<?> type = name.equals("prepareCall") ? java.sql.CallableStatement.class
						: java.sql.PreparedStatement.class;
				return Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] { type },
						new Recorder(statement, String.valueOf(args[0])));
			}
			if (result instanceof Statement statement) {
				return Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] { Statement.class },
						new Recorder(statement, null));
			}
			return result;
		}

	}

}
