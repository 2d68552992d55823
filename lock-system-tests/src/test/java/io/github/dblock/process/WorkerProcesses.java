package io.github.dblock.process;

import java.io.BufferedReader;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.github.dblock.test.TestDatabase;

/**
 * Starts worker JVMs on the test class path against the test database, and reads what they print; and, on the
 * worker's side, opens the pool the arguments describe.
 */
public final class WorkerProcesses {

	private WorkerProcesses() {
	}

	/**
	 * In a worker started by {@link #start}: a pool on the database given as {@code args[1..3]} (URL, user, password
	 * or {@code -} for none).
	 */
	public static com.zaxxer.hikari.HikariDataSource dataSource(String[] args, int poolSize) {
		com.zaxxer.hikari.HikariConfig config = new com.zaxxer.hikari.HikariConfig();
		config.setJdbcUrl(args[1]);
		config.setUsername(args[2]);
		config.setPassword(args[3].equals("-") ? "" : args[3]);
		config.setMaximumPoolSize(poolSize);
		return new com.zaxxer.hikari.HikariDataSource(config);
	}

	/**
	 * Starts {@code main} as {@code <command> <url> <user> <password or -> <more arguments...>}, standard error merged
	 * into standard output.
	 */
	static Process start(Class<?> main, String command, String... more) throws java.io.IOException {
		TestDatabase db = TestDatabase.get();
		List<String> line = new ArrayList<>(List.of(
				System.getProperty("java.home") + File.separator + "bin" + File.separator + "java", "-Xmx128m",
				"-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"), main.getName(), command,
				db.jdbcUrl(), (db.username() != null) ? db.username() : "",
				(db.password() == null || db.password().isEmpty()) ? "-" : db.password()));
		line.addAll(List.of(more));
		return new ProcessBuilder(line).redirectErrorStream(true).start();
	}

	/** Reads lines until one starts with the prefix, and returns it. */
	static String readUntil(BufferedReader reader, String prefix) {
		try {
			for (String line = reader.readLine(); line != null; line = reader.readLine()) {
				if (line.startsWith(prefix)) {
					return line;
				}
			}
			throw new IllegalStateException("worker ended before printing " + prefix);
		}
		catch (java.io.IOException ex) {
			throw new IllegalStateException(ex);
		}
	}

	/** Everything the process prints until it exits; kills it and fails if it runs longer than the timeout. */
	static String outputOf(Process process, Duration timeout) throws Exception {
		CompletableFuture<String> output = CompletableFuture.supplyAsync(() -> {
			try {
				return new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
			}
			catch (java.io.IOException ex) {
				return ex.toString();
			}
		});
		if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
			process.destroyForcibly();
			throw new AssertionError("worker did not finish within " + timeout);
		}
		return output.get(30, TimeUnit.SECONDS);
	}

}
