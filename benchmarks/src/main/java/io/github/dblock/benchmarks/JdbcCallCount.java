package io.github.dblock.benchmarks;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

import javax.sql.DataSource;

import org.springframework.jdbc.datasource.DelegatingDataSource;

/**
 * A data source that counts the JDBC calls made through it, by interface and method ({@code Connection.setNetworkTimeout},
 * {@code PreparedStatement.executeUpdate}, …), for the profile of a cycle: each {@code execute*} and
 * {@code commit}/{@code rollback} is one round trip, {@code setNetworkTimeout} a socket option set on the client.
 * Thread-safe.
 */
public final class JdbcCallCount extends DelegatingDataSource {

	private final Map<String, LongAdder> calls = new ConcurrentHashMap<>();

	public JdbcCallCount(DataSource target) {
		super(target);
	}

	/** The counts so far, by call, sorted. */
	public Map<String, Long> counts() {
		Map<String, Long> sorted = new TreeMap<>();
		this.calls.forEach((call, count) -> sorted.put(call, count.sum()));
		return sorted;
	}

	/** Forgets the counts. */
	public void reset() {
		this.calls.clear();
	}

	@Override
	public Connection getConnection() throws SQLException {
		count("DataSource.getConnection");
		return wrap(Connection.class, super.getConnection());
	}

	private void count(String call) {
		this.calls.computeIfAbsent(call, (c) -> new LongAdder()).increment();
	}

	@SuppressWarnings("unchecked")
	private <T> T wrap(Class<T> type, T target) {
		InvocationHandler handler = (proxy, method, args) -> {
			count(type.getSimpleName() + "." + method.getName());
			Object result;
			try {
				result = method.invoke(target, args);
			}
			catch (InvocationTargetException ex) {
				throw ex.getCause();
			}
			return wrapResult(method, result);
		};
		return (T) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] { type }, handler);
	}

	private Object wrapResult(Method method, Object result) {
		if (result instanceof java.sql.CallableStatement s) {
			return wrap(java.sql.CallableStatement.class, s);
		}
		if (result instanceof java.sql.PreparedStatement s) {
			return wrap(java.sql.PreparedStatement.class, s);
		}
		if (result instanceof java.sql.Statement s && !method.getName().equals("getStatement")) {
			return wrap(java.sql.Statement.class, s);
		}
		return result;
	}

}
