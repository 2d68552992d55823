package io.github.dblock.autoconfigure;

import java.time.Duration;

import io.github.dblock.jdbc.pessimistic.PessimisticLockProvider;
import org.jspecify.annotations.Nullable;

/**
 * Settings of PESSIMISTIC mode, under {@code distributed-lock.pessimistic.*}.
 * <p>
 * A group of {@link DistributedLockProperties}; not thread-safe (bound once at start-up, then only read).
 */
public class DistributedLockPessimisticProperties {

	/**
	 * How many PESSIMISTIC locks this JVM may hold or await at once on connections of their own (each pins a
	 * pooled connection and an open transaction); a caller beyond it waits for a slot within its wait time. Locks
	 * that join a caller's transaction do not count, nor do the transactions @DistributedLock and execute(...) begin
	 * for them (start-up warns when the pool has fewer than this cap plus 2 connections). Unset: the lock pool's
	 * HikariCP maximumPoolSize minus a reserve of a quarter of it (at least 2), at least 1; 5 when the pool is not
	 * HikariCP.
	 */
	private @Nullable Integer maxConnections;

	/**
	 * How long the server keeps a PESSIMISTIC holder's transaction (and the row lock) while the holder's session
	 * sends nothing, as when the holder hung or died without its connection closing; applied as the session's
	 * wait_timeout while the lock is held. Unset: the server's own wait_timeout (8 hours by default). A holder
	 * silent for longer loses the lock.
	 */
	private @Nullable Duration idleTimeout;

	/**
	 * How PESSIMISTIC acquisitions hand out fencing tokens. Both settings take the row with a locking read and use
	 * the server's UTC clock in microseconds, read after the row lock is granted, as the token; while the stored
	 * token is ahead of the clock (up to 100 ms) the acquisition waits for the clock to pass it. "durable": the
	 * token is written to the row, so it is strictly greater than every committed token of the resource in every
	 * mode whatever the clock does. "server-clock": nothing is written (no flush at the release). Both: strictly
	 * greater than the tokens of all earlier PESSIMISTIC holders of the resource, including holders that died
	 * before their release, as long as the server clock never steps back. Not ordered against LEASE or OPTIMISTIC
	 * on the same resource.
	 */
	private PessimisticLockProvider.Fencing fencing = PessimisticLockProvider.Fencing.DURABLE;

	public @Nullable Integer getMaxConnections() {
		return this.maxConnections;
	}

	public void setMaxConnections(@Nullable Integer maxConnections) {
		this.maxConnections = maxConnections;
	}

	public @Nullable Duration getIdleTimeout() {
		return this.idleTimeout;
	}

	public void setIdleTimeout(@Nullable Duration idleTimeout) {
		this.idleTimeout = idleTimeout;
	}

	public PessimisticLockProvider.Fencing getFencing() {
		return this.fencing;
	}

	public void setFencing(PessimisticLockProvider.Fencing fencing) {
		this.fencing = fencing;
	}

	/** Checks the values at start-up, for {@link DistributedLockProperties#afterPropertiesSet()}. */
	void check() {
		if (this.maxConnections != null && this.maxConnections < 1) {
			throw InvalidProperty.invalid("pessimistic.max-connections", this.maxConnections, "must be at least 1");
		}
	}

}
