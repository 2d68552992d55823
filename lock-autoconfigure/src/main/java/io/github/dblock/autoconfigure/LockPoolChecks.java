package io.github.dblock.autoconfigure;

import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

import javax.sql.DataSource;

import io.github.dblock.LockMode;
import io.github.dblock.interceptor.LockAttribute;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.jdbc.datasource.DelegatingDataSource;
import org.springframework.util.ClassUtils;

/**
 * Start-up checks of the lock data source's pool against the lock settings, run once every singleton exists (so
 * that every {@code @DistributedLock} annotation has been parsed):
 * <ul>
 * <li>PESSIMISTIC locks, in use when {@code distributed-lock.mode=PESSIMISTIC} or an annotation asks for them, each
 * pin a pooled connection: a cap ({@code distributed-lock.pessimistic.max-connections}) above the HikariCP pool's
 * {@code maximumPoolSize} can never be reached, and the locks beyond the pool's size wait for a connection until
 * HikariCP's {@code connectionTimeout} and then fail, so start-up fails naming both properties; a cap equal to the
 * pool's size leaves no connection for anything else on the pool (lease renewals, the clean-up job, the
 * application's own queries) and is logged at WARN; so is a pool with fewer than {@value #TRANSACTION_RESERVE}
 * connections beyond the cap: a PESSIMISTIC lock taken by {@code @DistributedLock} or {@code execute(…)} outside a
 * transaction holds one for its transaction (not counted by the cap) and the next local caller of the same resource
 * one more while it waits in the server, and the application's own transactions need theirs;</li>
 * <li>the library bounds the time a call waits for a connection only through HikariCP: a lock data source that is
 * not (and does not wrap) a {@code HikariDataSource} is logged at WARN;</li>
 * <li>HikariCP validates a connection before handing it out for up to its {@code validationTimeout}: one longer
 * than {@code distributed-lock.statement-timeout} can stretch a lock call beyond that bound, and is logged at
 * WARN.</li>
 * </ul>
 * Reads the pool's settings through HikariCP's configuration API when HikariCP is on the class path; without it,
 * only the second check applies. Not thread-safe; called once by the container.
 */
public class LockPoolChecks implements SmartInitializingSingleton {

	private static final Log logger = LogFactory.getLog(LockPoolChecks.class);

	private static final String HIKARI = "com.zaxxer.hikari.HikariDataSource";

	private final DataSource dataSource;

	private final DistributedLockProperties properties;

	private final Supplier<List<LockAttribute>> annotations;

	private final boolean pessimisticAllowed;

	/**
	 * @param dataSource the lock data source, possibly wrapped
	 * @param properties the lock settings
	 * @param annotations supplies the parsed {@code @DistributedLock} annotations once all singletons exist
	 * @param pessimisticAllowed {@code false} if the database refuses PESSIMISTIC locks (a Galera cluster), in which
	 * case that refusal is reported instead and the cap is not checked
	 */
	public LockPoolChecks(DataSource dataSource, DistributedLockProperties properties,
			Supplier<List<LockAttribute>> annotations, boolean pessimisticAllowed) {
		this.dataSource = dataSource;
		this.properties = properties;
		this.annotations = annotations;
		this.pessimisticAllowed = pessimisticAllowed;
	}

	/**
	 * Runs the checks.
	 * @throws InvalidConfigurationPropertyValueException for {@code distributed-lock.pessimistic.max-connections}
	 * when PESSIMISTIC locks are in use and the cap exceeds the pool's size
	 */
	@Override
	public void afterSingletonsInstantiated() {
		for (String warning : check()) {
			logger.warn(warning);
		}
	}

	/**
	 * The checks' warnings, without logging them.
	 * @return the warnings, empty if none
	 * @throws InvalidConfigurationPropertyValueException as {@link #afterSingletonsInstantiated()}
	 */
	List<String> check() {
		List<String> warnings = new ArrayList<>();
		Object hikari = ClassUtils.isPresent(HIKARI, getClass().getClassLoader()) ? Hikari.unwrap(this.dataSource) : null;
		if (hikari == null) {
			warnings.add("The lock DataSource (" + this.dataSource.getClass().getName() + ") is not a HikariCP pool, so "
					+ "the time a lock call waits for a connection is bounded only by that pool's own settings, not by "
					+ "the lock's wait time or " + DistributedLockProperties.PREFIX + ".statement-timeout ("
					+ this.properties.getStatementTimeout() + "). Use a HikariDataSource (Spring Boot's default) for the "
					+ "lock DataSource, or make sure its pool bounds getConnection() itself.");
			return warnings;
		}
		Hikari.Settings pool = Hikari.settings(hikari);
		Duration statementTimeout = this.properties.getStatementTimeout();
		if (pool.validationTimeout().compareTo(statementTimeout) > 0) {
			warnings.add("HikariCP's validationTimeout of the lock DataSource '" + pool.name() + "' ("
					+ pool.validationTimeout() + ") exceeds " + DistributedLockProperties.PREFIX + ".statement-timeout ("
					+ statementTimeout + "), so validating a connection can stretch a lock call beyond that bound. Lower "
					+ "spring.datasource.hikari.validation-timeout (or the lock pool's validationTimeout) below it.");
		}
		checkPessimisticCap(pool, warnings);
		return warnings;
	}

	/**
	 * The check of the PESSIMISTIC cap against the pool's size, when PESSIMISTIC locks are in use: adds its warnings.
	 * @throws InvalidConfigurationPropertyValueException if the cap exceeds the pool's size
	 */
	private void checkPessimisticCap(Hikari.Settings pool, List<String> warnings) {
		String pessimistic = this.pessimisticAllowed ? pessimisticUse() : null;
		int cap = maxConnections(this.properties, this.dataSource);
		if (pessimistic != null && cap > pool.maximumPoolSize()) {
			throw new InvalidConfigurationPropertyValueException(
					DistributedLockProperties.PREFIX + ".pessimistic.max-connections", cap,
					"PESSIMISTIC locks are in use (" + pessimistic + ") and each holds a pooled connection, but the "
							+ "lock DataSource '" + pool.name() + "' has only maximumPoolSize=" + pool.maximumPoolSize()
							+ ": the locks beyond it would wait for a connection for HikariCP's connectionTimeout ("
							+ pool.connectionTimeout() + ") and then fail. Set "
							+ DistributedLockProperties.PREFIX + ".pessimistic.max-connections below "
							+ pool.maximumPoolSize() + " (to leave connections for the rest of the application), or raise spring.datasource.hikari.maximum-pool-size (or the "
							+ "lock pool's maximumPoolSize) above " + cap);
		}
		if (pessimistic != null && cap == pool.maximumPoolSize()) {
			warnings.add("PESSIMISTIC locks are in use (" + pessimistic + ") and " + DistributedLockProperties.PREFIX
					+ ".pessimistic.max-connections (" + cap + ") equals the maximumPoolSize of the lock DataSource '"
					+ pool.name() + "': locks may take every connection, leaving none for lease renewals, the clean-up "
					+ "job or the application's own queries on that pool. Set it below the pool's size.");
		}
		else if (pessimistic != null && pool.maximumPoolSize() - cap < TRANSACTION_RESERVE) {
			warnings.add("PESSIMISTIC locks are in use (" + pessimistic + ") and the lock DataSource '" + pool.name()
					+ "' has maximumPoolSize=" + pool.maximumPoolSize() + " for " + DistributedLockProperties.PREFIX
					+ ".pessimistic.max-connections (" + cap + "): that leaves " + (pool.maximumPoolSize() - cap)
					+ " connection beyond the locks on connections of their own, but a PESSIMISTIC lock taken by "
					+ "@DistributedLock or execute(...) outside a transaction holds one for its transaction, the next "
					+ "caller of the same resource in this JVM one more while it waits in the database, and the "
					+ "application's own transactions need theirs. Callers may then wait for the pool (up to its "
					+ "connectionTimeout, " + pool.connectionTimeout() + ") rather than for the lock. Give the pool at least "
					+ (cap + TRANSACTION_RESERVE) + " connections (the cap plus " + TRANSACTION_RESERVE
					+ ") with spring.datasource.hikari.maximum-pool-size (or the lock pool's maximumPoolSize), or lower "
					+ DistributedLockProperties.PREFIX + ".pessimistic.max-connections.");
		}
	}

	/**
	 * The connections a pool should have beyond the PESSIMISTIC cap: one for a lock held in a transaction of its own (or
	 * another transaction of the application) and one for the next local caller of that resource, which waits in the
	 * database's lock queue.
	 */
	static final int TRANSACTION_RESERVE = 2;

	/** The cap when {@code distributed-lock.pessimistic.max-connections} is unset and the pool is not HikariCP. */
	public static final int FALLBACK_MAX_CONNECTIONS = 5;

	/**
	 * The PESSIMISTIC connection cap in effect: {@code distributed-lock.pessimistic.max-connections} when set, else
	 * derived from the lock pool: HikariCP's {@code maximumPoolSize} minus a reserve of a quarter of it (at least 2,
	 * for lease renewals, the clean-up job and the application's own queries), at least 1; without HikariCP
	 * {@value #FALLBACK_MAX_CONNECTIONS}. So the derived cap never exceeds the pool and only a pool of 1 or 2 leaves
	 * less than the reserve of {@value #TRANSACTION_RESERVE} (which {@link #check()} reports).
	 * @param properties the lock settings
	 * @param dataSource the lock data source, possibly wrapped
	 * @return the cap, at least 1
	 */
	public static int maxConnections(DistributedLockProperties properties, DataSource dataSource) {
		Integer configured = properties.getPessimistic().getMaxConnections();
		if (configured != null) {
			return configured;
		}
		Object hikari = ClassUtils.isPresent(HIKARI, LockPoolChecks.class.getClassLoader()) ? Hikari.unwrap(dataSource)
				: null;
		if (hikari == null) {
			return FALLBACK_MAX_CONNECTIONS;
		}
		int poolSize = Hikari.settings(hikari).maximumPoolSize();
		return Math.max(1, poolSize - Math.max(2, poolSize / 4));
	}

	/** Why PESSIMISTIC locks are in use (the default mode, or the first annotation asking for it), or {@code null}. */
	private @Nullable String pessimisticUse() {
		if (this.properties.getMode() == LockMode.PESSIMISTIC) {
			return DistributedLockProperties.PREFIX + ".mode=PESSIMISTIC";
		}
		for (LockAttribute attribute : this.annotations.get()) {
			if (attribute.getOptions().getMode() == LockMode.PESSIMISTIC) {
				return "@DistributedLock(mode = PESSIMISTIC) on " + attribute.describe();
			}
		}
		return null;
	}

	/** HikariCP access, in a class of its own so that nothing loads HikariCP's classes when it is absent. */
	private static final class Hikari {

		/** The HikariCP pool behind a data source (through Spring's delegating wrappers or JDBC unwrapping). */
		static com.zaxxer.hikari.@Nullable HikariDataSource unwrap(DataSource dataSource) {
			DataSource current = dataSource;
			for (int depth = 0; depth < 10 && current != null; depth++) {
				if (current instanceof com.zaxxer.hikari.HikariDataSource hikari) {
					return hikari;
				}
				try {
					if (current.isWrapperFor(com.zaxxer.hikari.HikariDataSource.class)) {
						return current.unwrap(com.zaxxer.hikari.HikariDataSource.class);
					}
				}
				catch (SQLException | RuntimeException ex) {
					// not unwrappable: try Spring's delegation below
				}
				current = (current instanceof DelegatingDataSource delegating) ? delegating.getTargetDataSource() : null;
			}
			return null;
		}

		static Settings settings(Object pool) {
			com.zaxxer.hikari.HikariDataSource hikari = (com.zaxxer.hikari.HikariDataSource) pool;
			String name = (hikari.getPoolName() != null) ? hikari.getPoolName() : "(unnamed pool)";
			return new Settings(name, hikari.getMaximumPoolSize(), Duration.ofMillis(hikari.getValidationTimeout()),
					Duration.ofMillis(hikari.getConnectionTimeout()));
		}

		/** The pool settings the checks compare. */
		record Settings(String name, int maximumPoolSize, Duration validationTimeout, Duration connectionTimeout) {
		}

	}

}
