package io.github.dblock.jdbc.sql;

import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * Makes waits in the server's lock queue interruptible: a JDBC call blocked on a row lock does not react to
 * {@link Thread#interrupt()}, so threads register the statement they wait on, and one shared daemon thread checks
 * every {@value #CHECK_MILLIS} ms whether a registered thread was interrupted and, if so, cancels its statement
 * (the driver sends {@code KILL QUERY} on a separate connection). Thread-safe.
 */
final class InterruptibleWaits {

	static final long CHECK_MILLIS = 25;

	private static final Log logger = LogFactory.getLog(InterruptibleWaits.class);

	private static final Map<Thread, Statement> waiting = new ConcurrentHashMap<>();

	/** Started on first use: {@link #ensureWatcher()}. */
	@Nullable
	private static volatile ScheduledExecutorService watcher;

	private InterruptibleWaits() {
	}

	/** Registers the current thread as waiting on the statement until the returned registration is closed. */
	static Registration register(Statement statement) {
		ensureWatcher();
		Thread thread = Thread.currentThread();
		waiting.put(thread, statement);
		return () -> waiting.remove(thread, statement);
	}

	private static void ensureWatcher() {
		if (watcher == null) {
			synchronized (InterruptibleWaits.class) {
				if (watcher == null) {
					ScheduledExecutorService executor = Executors.newSingleThreadScheduledExecutor((task) -> {
						Thread thread = new Thread(task, "distributed-lock-interrupt-watcher");
						thread.setDaemon(true);
						return thread;
					});
					executor.scheduleWithFixedDelay(InterruptibleWaits::cancelInterrupted, CHECK_MILLIS, CHECK_MILLIS,
							TimeUnit.MILLISECONDS);
					watcher = executor;
				}
			}
		}
	}

	private static void cancelInterrupted() {
		for (Map.Entry<Thread, Statement> entry : waiting.entrySet()) {
			if (entry.getKey().isInterrupted() && waiting.remove(entry.getKey(), entry.getValue())) {
				try {
					entry.getValue().cancel();
				}
				catch (SQLException | RuntimeException ex) {
					logger.debug("Could not cancel the lock wait of an interrupted thread", ex);
				}
			}
		}
	}

	/** Ends a registration. */
	interface Registration extends AutoCloseable {

		@Override
		void close();

	}

}
